// src/model/slice_file.cpp: the --layers syntax, the tensors of a layer range and the slice keys
// (see slice_file.h).
#include "model/slice_file.h"

#include <algorithm>
#include <charconv>

namespace ds4::model {
namespace {

// A non-negative decimal layer number, the whole of `part`.
std::optional<int> layer_number(std::string_view part) {
  int v = -1;
  const char* end = part.data() + part.size();
  const auto [p, ec] = std::from_chars(part.data(), end, v);
  if (part.empty() || ec != std::errc() || p != end || v < 0) return std::nullopt;
  return v;
}

bool is_fingerprint(std::string_view s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

Result<LayerRange> resolve_layer_slice(const LayerSlice& s, const Shape& shape) {
  const int last = s.last < 0 ? shape.n_layer - 1 : s.last;
  if (s.first < 0 || s.first > last || last >= shape.n_layer) {
    return Status::invalid_argument("layers %d:%d are not a range of this model's %d layers (0:%d)",
                                    s.first, last, shape.n_layer, shape.n_layer - 1);
  }
  if (s.output && last != shape.n_layer - 1) {
    return Status::invalid_argument(
        "the output head follows the last layer (%d): layers %d:%d cannot end with it",
        shape.n_layer - 1, s.first, last);
  }
  return LayerRange{s.first, last + 1, s.output};
}

std::string range_name(const LayerRange& r) {
  return std::to_string(r.begin) + ":" + (r.head ? "output" : std::to_string(r.end - 1));
}

bool range_contains(const LayerRange& outer, const LayerRange& inner) {
  return inner.begin >= outer.begin && inner.end <= outer.end && (!inner.head || outer.head);
}

bool range_binds(const LayerRange& r, const TensorSpec& spec) {
  if (spec.layer >= 0) {
    return spec.layer >= r.begin && spec.layer < r.end && spec.presence != Presence::kIgnored;
  }
  if (spec.role == TensorRole::kEmbedding) return r.begin == 0;
  return r.head;  // output_hc_*, output_norm, output
}

bool range_holds(const LayerRange& r, const TensorSpec& spec) {
  return range_binds(r, spec) || (spec.layer >= r.begin && spec.layer < r.end);
}

Result<std::optional<SliceMark>> read_slice_mark(const gguf::Reader& file, const Shape& shape) {
  const bool marked =
      std::any_of(file.metadata().begin(), file.metadata().end(), [](const gguf::KeyValue& kv) {
        return std::string_view(kv.key).starts_with(kSliceKeyPrefix);
      });
  if (!marked) return std::optional<SliceMark>();
  DS4_ASSIGN_OR_RETURN(const uint32_t first, file.get_u32(kSliceFirstKey));
  DS4_ASSIGN_OR_RETURN(const uint32_t last, file.get_u32(kSliceLastKey));
  DS4_ASSIGN_OR_RETURN(const bool output, file.get_bool(kSliceOutputKey));
  DS4_ASSIGN_OR_RETURN(const std::string_view fingerprint, file.get_string(kSliceFingerprintKey));
  const auto n = static_cast<uint32_t>(shape.n_layer);
  if (first > last || last >= n || (output && last != n - 1)) {
    return Status::invalid_model(
        "slice keys %s=%u, %s=%u, %s=%s are not a slice of this model's "
        "%u layers",
        std::string(kSliceFirstKey).c_str(), first, std::string(kSliceLastKey).c_str(), last,
        std::string(kSliceOutputKey).c_str(), output ? "true" : "false", n);
  }
  if (!is_fingerprint(fingerprint)) {
    return Status::invalid_model("%s is '%s', not 32 lowercase hex digits",
                                 std::string(kSliceFingerprintKey).c_str(),
                                 std::string(fingerprint).c_str());
  }
  SliceMark mark;
  mark.range = {static_cast<int>(first), static_cast<int>(last) + 1, output};
  mark.fingerprint = std::string(fingerprint);
  return std::optional<SliceMark>(std::move(mark));
}

std::vector<std::pair<std::string, gguf::Value>> slice_metadata(const SliceMark& mark) {
  return {
      {std::string(kSliceFirstKey), gguf::Value::u32(static_cast<uint32_t>(mark.range.begin))},
      {std::string(kSliceLastKey), gguf::Value::u32(static_cast<uint32_t>(mark.range.end - 1))},
      {std::string(kSliceOutputKey), gguf::Value::boolean(mark.range.head)},
      {std::string(kSliceFingerprintKey), gguf::Value::string(mark.fingerprint)},
  };
}

}  // namespace ds4::model

namespace ds4 {

Result<LayerSlice> parse_layer_slice(std::string_view text) {
  const std::string t(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return Status::invalid_argument("layers '%s': expected A:B or A:output (exactly one ':')",
                                    t.c_str());
  }
  const std::string_view a = text.substr(0, colon);
  const std::string_view b = text.substr(colon + 1);
  const auto first = model::layer_number(a);
  if (!first) {
    return Status::invalid_argument("layers '%s': '%s' is not a layer number", t.c_str(),
                                    std::string(a).c_str());
  }
  if (b == "output") return LayerSlice{.first = *first, .last = -1, .output = true};
  const auto last = model::layer_number(b);
  if (!last) {
    return Status::invalid_argument("layers '%s': '%s' is neither a layer number nor 'output'",
                                    t.c_str(), std::string(b).c_str());
  }
  if (*last < *first) {
    return Status::invalid_argument("layers '%s': the end (%d) comes before the start (%d)",
                                    t.c_str(), *last, *first);
  }
  return LayerSlice{.first = *first, .last = *last, .output = false};
}

}  // namespace ds4
