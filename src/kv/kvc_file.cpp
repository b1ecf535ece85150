// src/kv/kvc_file.cpp: KVC version 2 encoding, hashing and decoding (see kvc_file.h).
#include "kv/kvc_file.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <thread>
#include <vector>

#include "base/check.h"

namespace ds4::kv {
namespace {

constexpr uint8_t kMagic[3] = {'K', 'V', 'C'};
constexpr uint8_t kToolMapMagic[3] = {'K', 'T', 'M'};
constexpr uint8_t kToolMapVersion = 1;
constexpr uint8_t kFooterMagic[4] = {'K', 'S', 'U', 'M'};

void put_u32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// Little-endian reads at a checked position.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> b) : b_(b) {}
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  bool u32(uint32_t* v) {
    if (left() < 4) return false;
    *v = 0;
    for (int i = 3; i >= 0; --i) *v = (*v << 8) | b_[pos_ + static_cast<size_t>(i)];
    pos_ += 4;
    return true;
  }
  bool bytes(size_t n, std::span<const uint8_t>* out) {
    if (left() < n) return false;
    *out = b_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint64_t le64(const uint8_t* p) {
  return static_cast<uint64_t>(le32(p)) | static_cast<uint64_t>(le32(p + 4)) << 32;
}

std::string_view as_text(std::span<const uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace

std::vector<ToolMapEntry> decode_kvc_tool_map(std::span<const uint8_t> section,
                                              const KvcLimits& limits, std::string* error) {
  std::vector<ToolMapEntry> out;
  Cursor c(section);
  std::span<const uint8_t> head;
  uint32_t count = 0;
  if (!c.bytes(4, &head) || std::memcmp(head.data(), kToolMapMagic, 3) != 0 ||
      head[3] != kToolMapVersion || !c.u32(&count)) {
    *error = "the tool-id map section has no KTM version 1 header";
    return out;
  }
  if (count == 0) {  // the encoder writes no section for an empty map
    *error = "the tool-id map section holds no entries";
    return out;
  }
  if (count > 4 * static_cast<uint64_t>(limits.max_tool_ids)) {
    *error = "the tool-id map claims " + std::to_string(count) + " entries";
    return out;
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t id_len = 0, dsml_len = 0;
    std::span<const uint8_t> id, dsml;
    if (!c.u32(&id_len) || !c.u32(&dsml_len) || id_len == 0 || id_len > kMaxToolIdBytes ||
        dsml_len == 0 || dsml_len > kMaxDsmlBytes || !c.bytes(id_len, &id) ||
        !c.bytes(dsml_len, &dsml)) {
      *error = "tool-id map entry " + std::to_string(i) + " of " + std::to_string(count) +
               " is malformed or truncated";
      return out;
    }
    out.push_back({std::string(as_text(id)), std::string(as_text(dsml))});
  }
  if (c.left() != 0) *error = std::to_string(c.left()) + " bytes follow the tool-id map";
  return out;
}

std::vector<uint8_t> encode_kvc_header(const KvcHeader& h) {
  std::vector<uint8_t> out(kMagic, kMagic + 3);
  out.push_back(kKvcVersion);
  out.push_back(h.quant_bits);
  out.push_back(static_cast<uint8_t>(h.reason));
  out.push_back(h.flags);
  out.push_back(static_cast<uint8_t>(h.model));
  put_u32(&out, h.tokens);
  put_u32(&out, h.hits);
  put_u32(&out, h.n_ctx);
  out.insert(out.end(), {kKvcPayloadAbi, 0, 0, 0});
  put_u64(&out, h.created);
  put_u64(&out, h.last_used);
  put_u64(&out, h.payload_bytes);
  return out;
}

namespace {

// The KTM section of a map (nothing for an empty map).
std::vector<uint8_t> encode_tool_map(std::span<const ToolMapEntry> tool_map) {
  std::vector<uint8_t> out;
  if (tool_map.empty()) return out;
  out.insert(out.end(), kToolMapMagic, kToolMapMagic + 3);
  out.push_back(kToolMapVersion);
  put_u32(&out, static_cast<uint32_t>(tool_map.size()));
  for (const ToolMapEntry& e : tool_map) {
    put_u32(&out, static_cast<uint32_t>(e.id.size()));
    put_u32(&out, static_cast<uint32_t>(e.dsml.size()));
    out.insert(out.end(), e.id.begin(), e.id.end());
    out.insert(out.end(), e.dsml.begin(), e.dsml.end());
  }
  return out;
}

}  // namespace

KvcWriter::KvcWriter(KvcHeader header, std::string_view text, uint64_t payload_bytes,
                     std::span<const ToolMapEntry> tool_map)
    : head_([&] {
        header.payload_bytes = payload_bytes;
        header.flags = static_cast<uint8_t>((header.flags & ~kKvcToolMapFlag) |
                                            (tool_map.empty() ? 0 : kKvcToolMapFlag));
        std::vector<uint8_t> h = encode_kvc_header(header);
        put_u32(&h, static_cast<uint32_t>(text.size()));
        h.insert(h.end(), text.begin(), text.end());
        return h;
      }()),
      map_(encode_tool_map(tool_map)),
      file_bytes_(head_.size() + payload_bytes + map_.size() + kKvcFooterBytes),
      hasher_(file_bytes_) {
  hasher_.update(head_);
}

Status KvcWriter::stream(std::span<const uint8_t> payload,
                         const std::function<Status(std::span<const uint8_t>)>& put,
                         size_t hash_threads, const base::ReadyBytes* ready) {
  DS4_CHECK(head_.size() + payload.size() + map_.size() + kKvcFooterBytes == file_bytes_);
  DS4_CHECK(ready == nullptr || ready->total() == payload.size());
  // Whether the payload's first `end` bytes are final (always, without a producer).
  auto have = [&](size_t end) { return ready == nullptr || ready->wait(end); };
  const Status unfinished =
      Status::unavailable("the payload was not finished: its producer failed");
  DS4_TRY(put(head_));
  // One thread: each piece hashed, then handed over while it is still in the cache. Several: the
  // payload up to the body's first block boundary by update(), its whole blocks after that by
  // hash_threads - 1 helpers (block i by helper i % helpers) while the pieces go out, the rest
  // after them.
  const bool helped = hash_threads > 1;
  const size_t block = base::kChecksumBlockBytes, head = head_.size();
  if (helped) {
    const size_t lead = std::min(payload.size(), (block - head % block) % block);
    if (!have(lead)) return unfinished;
    hasher_.update(payload.first(lead));
  }
  const KvcHasher::Range apart = helped ? hasher_.apart() : KvcHasher::Range{};
  std::vector<uint64_t> digests(apart.blocks());
  const size_t helpers = helped ? std::min(hash_threads - 1, digests.size()) : 0;
  std::atomic<bool> stop{false}, unhashed{false};
  std::vector<std::jthread> hashers;  // stopped and joined on the way out of an error
  for (size_t t = 0; t < helpers; ++t) {
    hashers.emplace_back([&, t] {
      for (size_t i = t; i < digests.size() && !stop.load(std::memory_order_relaxed);
           i += helpers) {
        const uint64_t o = apart.begin + i * block;
        const size_t from = static_cast<size_t>(o) - head;
        if (!have(from + block)) {  // the producer failed: no sums from this stream
          unhashed = true;
          return;
        }
        hasher_.hash_apart(o, payload.subspan(from, block), digests);
      }
    });
  }
  for (size_t at = 0; at < payload.size(); at += kKvcWritePieceBytes) {
    const auto piece = payload.subspan(at, std::min(kKvcWritePieceBytes, payload.size() - at));
    if (!have(at + piece.size())) {
      stop = true;
      return unfinished;
    }
    if (!helped) hasher_.update(piece);
    if (Status st = put(piece); !st.is_ok()) {
      stop = true;
      return st;
    }
  }
  if (helped) {
    hashers.clear();  // joined: every digest is in, unless the producer failed
    if (unhashed) return unfinished;
    hasher_.add_apart(digests);
    hasher_.update(payload.subspan(static_cast<size_t>(hasher_.at()) - head));
  }
  // A producer may fail after its last byte: the file is whole only once it has finished.
  if (ready != nullptr && !ready->wait_finished()) return unfinished;
  hasher_.update(map_);
  const KvcChecksums sums = hasher_.sums();
  std::vector<uint8_t> tail = map_;
  tail.insert(tail.end(), kFooterMagic, kFooterMagic + 4);
  put_u32(&tail, 0);
  put_u64(&tail, sums.body);
  put_u64(&tail, sums.tool_map);
  return put(tail);
}

std::vector<uint8_t> encode_kvc(KvcHeader header, std::string_view text,
                                std::span<const uint8_t> payload,
                                std::span<const ToolMapEntry> tool_map) {
  KvcWriter w(header, text, payload.size(), tool_map);
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(w.file_bytes()));
  (void)w.stream(payload, [&](std::span<const uint8_t> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
    return Status::ok();
  });
  return out;
}

KvcHasher::KvcHasher(uint64_t file_bytes)
    : file_bytes_(file_bytes),
      footer_at_(file_bytes >= kKvcFooterBytes ? file_bytes - kKvcFooterBytes : 0) {}

void KvcHasher::update(std::span<const uint8_t> piece) {
  while (!piece.empty()) {
    size_t take = piece.size();
    if (at_ < kLead) {
      take = std::min<size_t>(take, kLead - at_);
      std::memcpy(lead_ + at_, piece.data(), take);
      if (at_ + take == kLead) {
        // The lead is whole: where the body ends is known, and the header goes in with its
        // bookkeeping fields as zero.
        const uint64_t payload = le64(lead_ + 40), text = le32(lead_ + kKvcHeaderBytes);
        const uint64_t end = payload > file_bytes_ ? file_bytes_ : kLead + text + payload;
        body_end_ = std::max<uint64_t>(kLead, std::min(end, footer_at_));
        uint8_t masked[kLead];
        std::memcpy(masked, lead_, kLead);
        std::memset(masked + kKvcHitsAt, 0, 4);
        std::memset(masked + kKvcLastUsedAt, 0, 8);
        body_.update(masked);
      }
    } else if (at_ < body_end_) {
      take = static_cast<size_t>(std::min<uint64_t>(take, body_end_ - at_));
      body_.update(piece.first(take));
    } else if (at_ < footer_at_) {
      take = static_cast<size_t>(std::min<uint64_t>(take, footer_at_ - at_));
      map_.update(piece.first(take));
    }  // else: the footer itself, not hashed
    at_ += take;
    piece = piece.subspan(take);
  }
}

KvcHasher::Range KvcHasher::apart() const {
  const size_t block = base::kChecksumBlockBytes;
  if (at_ < kLead || at_ >= body_end_ || !body_.at_block_boundary()) return {at_, at_};
  return {at_, std::max(at_, body_end_ / block * block)};
}

void KvcHasher::hash_apart(uint64_t offset, std::span<const uint8_t> bytes,
                           std::span<uint64_t> digests) const {
  const size_t block = base::kChecksumBlockBytes;
  const Range r = apart();
  DS4_CHECK(digests.size() == r.blocks());
  // The first block boundary of the range at or after `offset`, up to the last that ends in bytes.
  const uint64_t from = std::max(r.begin, offset), to = std::min(r.end, offset + bytes.size());
  for (uint64_t o = r.begin + (from - r.begin + block - 1) / block * block; o + block <= to;
       o += block) {
    const uint64_t i = (o - r.begin) / block;
    digests[i] =
        base::checksum_block(bytes.subspan(o - offset, block), kKvcBodySeed, body_.blocks() + i);
  }
}

void KvcHasher::add_apart(std::span<const uint64_t> digests) {
  const Range r = apart();
  DS4_CHECK(digests.size() == r.blocks());
  if (digests.empty()) return;
  body_.add_blocks(digests);
  at_ = r.end;
}

KvcChecksums KvcHasher::sums() const { return {.body = body_.digest(), .tool_map = map_.digest()}; }

KvcChecksums kvc_checksums(std::span<const uint8_t> file) {
  KvcHasher h(file.size());
  h.update(file);
  return h.sums();
}

Result<KvcHeader> decode_kvc_header(std::span<const uint8_t> b) {
  if (b.size() < kKvcHeaderBytes)
    return Status::invalid_file("KVC file has %zu bytes, less than its %zu-byte header", b.size(),
                                kKvcHeaderBytes);
  if (std::memcmp(b.data(), kMagic, 3) != 0) return Status::invalid_file("not a KVC file (magic)");
  if (b[3] == 1) {
    return Status::invalid_file(
        "KVC version 1, a file from before payload checksums: this build reads version %u only",
        kKvcVersion);
  }
  if (b[3] != kKvcVersion) {
    return b[3] > kKvcVersion
               ? Status::unimplemented("KVC version %u is newer than this build's %u", b[3],
                                       kKvcVersion)
               : Status::invalid_file("KVC version %u, this build reads version %u", b[3],
                                      kKvcVersion);
  }
  KvcHeader h;
  h.quant_bits = b[4];
  if (h.quant_bits != 2 && h.quant_bits != 4)
    return Status::invalid_file("KVC routed-expert quant bits %u (2 or 4)", h.quant_bits);
  if (b[5] > static_cast<uint8_t>(SaveReason::kAgentSystem))
    return Status::invalid_file("KVC save reason %u is unknown", b[5]);
  h.reason = static_cast<SaveReason>(b[5]);
  h.flags = b[6];
  if ((h.flags & ~kKvcKnownFlags) != 0)
    return Status::unimplemented("KVC extension flags 0x%02x name sections this version lacks",
                                 h.flags);
  if (b[7] > static_cast<uint8_t>(KvcModel::kPro))
    return Status::invalid_file("KVC model id %u is unknown", b[7]);
  h.model = static_cast<KvcModel>(b[7]);
  h.tokens = le32(b.data() + 8);
  h.hits = le32(b.data() + 12);
  h.n_ctx = le32(b.data() + 16);
  if (b[20] != kKvcPayloadAbi)
    return Status::invalid_file("KVC payload ABI %u, expected %u", b[20], kKvcPayloadAbi);
  if (b[21] != 0 || b[22] != 0 || b[23] != 0)
    return Status::invalid_file("KVC reserved header bytes 21-23 are not zero");
  if (h.tokens == 0) return Status::invalid_file("KVC file caches 0 tokens");
  h.created = le64(b.data() + 24);
  h.last_used = le64(b.data() + 32);
  h.payload_bytes = le64(b.data() + 40);
  return h;
}

Result<KvcChecksums> decode_kvc_footer(std::span<const uint8_t> b) {
  if (b.size() != kKvcFooterBytes || std::memcmp(b.data(), kFooterMagic, 4) != 0)
    return Status::invalid_file(
        "KVC checksum footer is missing (the file is cut short or damaged)");
  if (le32(b.data() + 4) != 0)
    return Status::invalid_file("KVC checksum footer bytes 4-7 are not zero");
  return KvcChecksums{.body = le64(b.data() + 8), .tool_map = le64(b.data() + 16)};
}

std::vector<ToolMapEntry> decode_kvc_trailer(std::span<const uint8_t> trailer,
                                             const KvcLimits& limits, std::string* error) {
  if (trailer.size() < kKvcFooterBytes) {
    *error = "the file ends before its checksum footer";
    return {};
  }
  const auto map = trailer.first(trailer.size() - kKvcFooterBytes);
  auto footer = decode_kvc_footer(trailer.last(kKvcFooterBytes));
  if (!footer.is_ok()) {
    *error = footer.status().message();
    return {};
  }
  if (base::checksum64(map, kKvcToolMapSeed) != footer->tool_map) {
    *error = "the tool-id map does not match its checksum: none of its entries is used";
    return {};
  }
  return decode_kvc_tool_map(map, limits, error);
}

Result<KvcView> decode_kvc(std::span<const uint8_t> file, const KvcLimits& limits,
                           const KvcChecksums* computed) {
  KvcView v;
  DS4_ASSIGN_OR_RETURN(v.header, decode_kvc_header(file));
  Cursor c(file.subspan(kKvcHeaderBytes));
  uint32_t text_len = 0;
  std::span<const uint8_t> text;
  if (!c.u32(&text_len) || !c.bytes(text_len, &text))
    return Status::invalid_file("KVC cache text of %u bytes runs past the end of the file",
                                text_len);
  v.text = as_text(text);
  if (c.left() < kKvcFooterBytes) {
    return Status::invalid_file(
        "KVC file ends %zu bytes after its text, before its %zu-byte "
        "checksum footer",
        c.left(), kKvcFooterBytes);
  }
  const size_t before_footer = c.left() - kKvcFooterBytes;
  if (v.header.payload_bytes > before_footer) {
    return Status::invalid_file("KVC payload of %" PRIu64
                                " bytes, but %zu bytes are left before the checksum footer",
                                v.header.payload_bytes, before_footer);
  }
  c.bytes(static_cast<size_t>(v.header.payload_bytes), &v.payload);
  std::span<const uint8_t> map, footer;
  c.bytes(before_footer - v.payload.size(), &map);
  c.bytes(kKvcFooterBytes, &footer);
  DS4_ASSIGN_OR_RETURN(v.checksums, decode_kvc_footer(footer));
  if ((v.header.flags & kKvcToolMapFlag) != 0) {
    v.tool_map = decode_kvc_tool_map(map, limits, &v.tool_map_error);
  } else if (!map.empty()) {
    return Status::invalid_file("%zu bytes follow the KVC payload", map.size());
  }
  const KvcChecksums sums = computed != nullptr ? *computed : kvc_checksums(file);
  if (sums.body != v.checksums.body) {
    return Status::invalid_file(
        "KVC checksum mismatch: the header, text or payload changed after the file was written "
        "(stored %016" PRIx64 ", computed %016" PRIx64 ")",
        v.checksums.body, sums.body);
  }
  if (sums.tool_map != v.checksums.tool_map) {
    v.tool_map.clear();
    v.tool_map_error = "the tool-id map does not match its checksum: none of its entries is used";
  }
  return v;
}

}  // namespace ds4::kv
