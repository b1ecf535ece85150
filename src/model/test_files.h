// src/model/test_files.h: model files for the model module's tests -- a complete directory of a
// shape's tensors (zero data) and its metadata, with hooks to change either.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/test_util.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/inventory.h"

namespace ds4::model::testing {

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// A custom small-vocabulary test shape: files of it are small.
inline Shape micro() {
  Shape s = kTiny;
  s.name = "micro";
  s.n_vocab = 256;
  return s;
}

// Writes `s`'s metadata and q8-recipe tensors (all zero) to DIR/m.gguf, after `edit_metadata` and
// `mutate_tensors` (either may be empty) had their say.
inline std::string write_model(gguf::testing::TempDir& dir, const Shape& s,
                               const std::function<void(Metadata&)>& edit_metadata,
                               const std::function<void(std::vector<TensorSpec>&)>& mutate_tensors,
                               Recipe recipe = Recipe::kQ8) {
  const std::string path = dir.file("m.gguf");
  auto w = gguf::Writer::create(path);
  EXPECT_TRUE(w.is_ok());
  Metadata kv = shape_metadata(s);
  if (edit_metadata) edit_metadata(kv);
  for (auto& [k, v] : kv) EXPECT_TRUE(w->add_metadata(k, v).is_ok()) << k;
  std::vector<TensorSpec> specs = model_tensors(s, recipe);
  if (mutate_tensors) mutate_tensors(specs);
  for (const auto& t : specs) EXPECT_TRUE(w->add_tensor(t.name, t.type, t.dims).is_ok()) << t.name;
  EXPECT_TRUE(w->write_header().is_ok());
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::vector<uint8_t> zeros(w->tensor_bytes(i), 0);
    EXPECT_TRUE(w->write_tensor_data(i, zeros).is_ok());
  }
  EXPECT_TRUE(w->finish().is_ok());
  return path;
}

// Drops `key` from the metadata; replaces its value when `value` is given.
inline std::function<void(Metadata&)> set_key(std::string key,
                                              std::optional<gguf::Value> value = std::nullopt) {
  return [key = std::move(key), value = std::move(value)](Metadata& kv) {
    for (auto it = kv.begin(); it != kv.end(); ++it) {
      if (it->first != key) continue;
      if (value) {
        it->second = *value;
      } else {
        kv.erase(it);
      }
      return;
    }
    if (value) kv.emplace_back(key, *value);
  };
}

}  // namespace ds4::model::testing
