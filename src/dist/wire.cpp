// src/dist/wire.cpp: frames and records, little-endian, strictly bounded.
#include "dist/wire.h"

#include <cinttypes>
#include <cstring>

#include "base/f16.h"

namespace ds4::dist {
namespace {

class Writer {
 public:
  explicit Writer(MessageType type) {
    u32(kWireMagic);
    u16(kWireVersion);
    u16(static_cast<uint16_t>(type));
    u32(0);  // body length, set by finish()
  }
  void u8(uint8_t v) { out_.push_back(v); }
  void raw(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void token_ids(std::span<const int32_t> ids) {
    for (int32_t t : ids) u32(static_cast<uint32_t>(t));
  }
  void hop(const Hop& h) {
    text(h.endpoint);
    u32(h.layer_first);
    u32(h.layer_last);
    u8(h.output ? 1 : 0);
  }
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void text(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void floats(std::span<const float> v, HiddenBits bits) {
    for (float f : v) {
      if (bits == HiddenBits::kF16) {
        u16(f32_to_f16(f));
      } else {
        u32(std::bit_cast<uint32_t>(f));
      }
    }
  }
  std::vector<uint8_t> finish() {
    const uint32_t body = static_cast<uint32_t>(out_.size() - kFrameHeaderBytes);
    for (int i = 0; i < 4; ++i) out_[8 + i] = static_cast<uint8_t>(body >> (8 * i));
    return std::move(out_);
  }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  size_t left() const { return b_.size() - at_; }
  bool u8(uint8_t* v) {
    return take(1, [&](const uint8_t* p) { *v = p[0]; });
  }
  bool u16(uint16_t* v) {
    return take(2, [&](const uint8_t* p) { *v = static_cast<uint16_t>(p[0] | (p[1] << 8)); });
  }
  bool u32(uint32_t* v) {
    return take(4, [&](const uint8_t* p) {
      *v = 0;
      for (int i = 0; i < 4; ++i) *v |= static_cast<uint32_t>(p[i]) << (8 * i);
    });
  }
  bool u64(uint64_t* v) {
    return take(8, [&](const uint8_t* p) {
      *v = 0;
      for (int i = 0; i < 8; ++i) *v |= static_cast<uint64_t>(p[i]) << (8 * i);
    });
  }
  bool raw(std::vector<uint8_t>* v, uint64_t n) {
    if (n > left()) return false;
    v->assign(b_.begin() + static_cast<ptrdiff_t>(at_),
              b_.begin() + static_cast<ptrdiff_t>(at_ + n));
    at_ += static_cast<size_t>(n);
    return true;
  }
  bool text(std::string* s, uint32_t max) {
    uint32_t n = 0;
    if (!u32(&n) || n > max || n > left()) return false;
    s->assign(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return true;
  }
  // `count` values of `bits` each, checked against what is left before anything is allocated.
  bool floats(std::vector<float>* v, uint64_t count, HiddenBits bits) {
    const uint64_t size = bits == HiddenBits::kF16 ? 2 : 4;
    if (count > left() / size) return false;
    v->resize(static_cast<size_t>(count));
    for (float& f : *v) {
      if (bits == HiddenBits::kF16) {
        uint16_t h = 0;
        u16(&h);
        f = f16_to_f32(h);
      } else {
        uint32_t x = 0;
        u32(&x);
        f = std::bit_cast<float>(x);
      }
    }
    return true;
  }

 private:
  template <typename F>
  bool take(size_t n, F&& f) {
    if (left() < n) return false;
    f(b_.data() + at_);
    at_ += n;
    return true;
  }
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

Status cut(const char* what) {
  return Status::invalid_file("wire: the message ends inside its %s", what);
}

bool valid_bits(uint8_t b) { return b == 32 || b == 16; }

Status decode_hello(Reader& r, const WireLimits& lim, Hello* h) {
  if (!r.text(&h->build, lim.max_text_bytes) || !r.text(&h->fingerprint, lim.max_text_bytes) ||
      !r.text(&h->shape, lim.max_text_bytes)) {
    return Status::invalid_file("wire: HELLO's names are cut or longer than %u bytes",
                                lim.max_text_bytes);
  }
  uint8_t output = 0;
  if (!r.u32(&h->n_layer) || !r.u32(&h->n_vocab) || !r.u32(&h->hidden_width) ||
      !r.u32(&h->expert_bits) || !r.u32(&h->layer_first) || !r.u32(&h->layer_last) ||
      !r.u8(&output) || !r.u32(&h->ctx)) {
    return cut("HELLO");
  }
  if (!r.text(&h->data_endpoint, lim.max_text_bytes) || !r.u64(&h->incarnation)) {
    return cut("HELLO endpoint");
  }
  if (output > 1) return Status::invalid_file("wire: HELLO output flag %u", output);
  h->output = output == 1;
  if (h->layer_first > h->layer_last || h->layer_last >= h->n_layer) {
    return Status::invalid_file("wire: HELLO layers %u:%u of a %u-layer model", h->layer_first,
                                h->layer_last, h->n_layer);
  }
  if (h->output && h->layer_last + 1 != h->n_layer) {
    return Status::invalid_file("wire: HELLO claims the head but ends at layer %u of %u",
                                h->layer_last, h->n_layer);
  }
  return Status::ok();
}

Status decode_hop(Reader& r, const WireLimits& lim, Hop* h) {
  uint8_t output = 0;
  if (!r.text(&h->endpoint, lim.max_text_bytes) || !r.u32(&h->layer_first) ||
      !r.u32(&h->layer_last) || !r.u8(&output)) {
    return cut("hop");
  }
  if (output > 1 || h->layer_first == 0 || h->layer_first > h->layer_last) {
    return Status::invalid_file("wire: hop layers %u:%u", h->layer_first, h->layer_last);
  }
  h->output = output == 1;
  return Status::ok();
}

// `n` token ids (a count the caller has bounded), each a non-negative int32.
Status read_token_ids(Reader& r, uint32_t n, const char* what, std::vector<int32_t>* ids) {
  if (n > r.left() / 4) return cut(what);
  ids->resize(n);
  for (int32_t& t : *ids) {
    uint32_t v = 0;
    r.u32(&v);
    if (v > INT32_MAX) return Status::invalid_file("wire: %s token id %u", what, v);
    t = static_cast<int32_t>(v);
  }
  return Status::ok();
}

Status decode_route(Reader& r, const WireLimits& lim, Work* w) {
  uint32_t n_hops = 0;
  if (!r.u32(&n_hops) || !r.u32(&w->route_index)) return cut("WORK route");
  if (n_hops == 0 || n_hops > lim.max_hops || w->route_index >= n_hops) {
    return Status::invalid_file("wire: WORK for hop %u of a route of %u (1..%u hops)",
                                w->route_index, n_hops, lim.max_hops);
  }
  // Each hop takes at least 13 bytes: checked against what is left before the vector grows.
  if (n_hops > r.left() / 13) return cut("WORK route");
  w->route.resize(n_hops);
  for (uint32_t i = 0; i < n_hops; ++i) {
    Hop& h = w->route[i];
    DS4_TRY(decode_hop(r, lim, &h));
    if ((h.output && i + 1 != n_hops) ||
        (i > 0 && h.layer_first != w->route[i - 1].layer_last + 1)) {
      return Status::invalid_file("wire: WORK route hop %u (layers %u:%u%s) does not follow on", i,
                                  h.layer_first, h.layer_last, h.output ? " with the head" : "");
    }
  }
  return Status::ok();
}

Status decode_work(Reader& r, const WireLimits& lim, Work* w) {
  uint32_t n_tokens = 0;
  uint8_t bits = 0;
  if (!r.u64(&w->session) || !r.u64(&w->request) || !r.u64(&w->prefix_hash) ||
      !r.u64(&w->result_hash) || !r.u32(&w->pos0) || !r.u32(&w->flags) || !r.u32(&w->n_ctx) ||
      !r.u32(&w->prefill_chunk) || !r.u8(&bits) || !r.u32(&w->hidden_width) || !r.u32(&n_tokens)) {
    return cut("WORK header");
  }
  if ((w->flags & ~kWorkKnownFlags) != 0)
    return Status::invalid_file("wire: WORK flags 0x%x", w->flags);
  if (!valid_bits(bits)) return Status::invalid_file("wire: WORK hidden bits %u", bits);
  w->bits = static_cast<HiddenBits>(bits);
  DS4_TRY(decode_route(r, lim, w));
  if (n_tokens == 0 || n_tokens > lim.max_tokens)
    return Status::invalid_file("wire: WORK of %u tokens (1..%u)", n_tokens, lim.max_tokens);
  if (w->hidden_width == 0 || w->hidden_width > lim.max_hidden_width)
    return Status::invalid_file("wire: WORK hidden width %u", w->hidden_width);
  DS4_TRY(read_token_ids(r, n_tokens, "WORK", &w->tokens));
  if (extend_prefix_hash(w->prefix_hash, w->tokens) != w->result_hash) {
    return Status::invalid_file("wire: WORK's hashes do not chain: prefix %016" PRIx64
                                " + %u tokens != %016" PRIx64,
                                w->prefix_hash, n_tokens, w->result_hash);
  }
  if (!r.floats(&w->hidden, uint64_t{n_tokens} * w->hidden_width, w->bits))
    return cut("WORK hidden state");
  return Status::ok();
}

Status decode_result(Reader& r, const WireLimits& lim, WorkResult* m) {
  uint8_t kind = 0, bits = 0;
  uint32_t rows = 0;
  if (!r.u64(&m->session) || !r.u64(&m->request) || !r.u64(&m->result_hash) || !r.u8(&kind) ||
      !r.u8(&bits) || !r.u32(&m->width) || !r.u32(&rows)) {
    return cut("RESULT header");
  }
  if (kind > 2) return Status::invalid_file("wire: RESULT kind %u", kind);
  if (!valid_bits(bits)) return Status::invalid_file("wire: RESULT bits %u", bits);
  m->kind = static_cast<ResultKind>(kind);
  m->bits = static_cast<HiddenBits>(bits);
  if (m->kind == ResultKind::kAck && (rows != 0 || m->width != 0))
    return Status::invalid_file("wire: an ACK with %u rows of %u", rows, m->width);
  if (m->kind == ResultKind::kLogits &&
      (rows != 1 || m->bits != HiddenBits::kF32 || m->width == 0 || m->width > lim.max_vocab)) {
    return Status::invalid_file("wire: logits of %u rows of %u at %u bits", rows, m->width, bits);
  }
  if (m->kind == ResultKind::kHidden &&
      (rows == 0 || rows > lim.max_tokens || m->width == 0 || m->width > lim.max_hidden_width)) {
    return Status::invalid_file("wire: a hidden state of %u rows of %u", rows, m->width);
  }
  if (!r.floats(&m->values, uint64_t{rows} * m->width, m->bits)) return cut("RESULT values");
  return Status::ok();
}

Status decode_state(Reader& r, const WireLimits& lim, MessageType type, StateMsg* m) {
  if (!r.u64(&m->session) || !r.u64(&m->request)) return cut("STATE header");
  if (type == MessageType::kStateSave) {
    if (!r.u64(&m->prefix_hash) || !r.u32(&m->n_tokens)) return cut("STATE_SAVE");
    if (m->n_tokens == 0 || m->n_tokens > lim.max_session_tokens)
      return Status::invalid_file("wire: STATE_SAVE of %u tokens", m->n_tokens);
    return decode_hop(r, lim, &m->hop);
  }
  if (type == MessageType::kStateLoad) {
    if (!r.u32(&m->n_ctx) || !r.u32(&m->prefill_chunk)) return cut("STATE_LOAD");
    DS4_TRY(decode_hop(r, lim, &m->hop));
    uint32_t n = 0;
    if (!r.u32(&n)) return cut("STATE_LOAD tokens");
    if (n == 0 || n > lim.max_session_tokens || n > r.left() / 4)
      return Status::invalid_file("wire: STATE_LOAD of %u tokens", n);
    DS4_TRY(read_token_ids(r, n, "STATE_LOAD", &m->tokens));
  } else if (!r.u32(&m->n_tokens)) {
    return cut("STATE");
  }
  uint64_t bytes = 0;
  if (!r.u64(&bytes)) return cut("state shard");
  if (bytes == 0 || !r.raw(&m->shard, bytes)) return cut("state shard");
  return Status::ok();
}

}  // namespace

uint64_t extend_prefix_hash(uint64_t hash, std::span<const int32_t> tokens) {
  constexpr uint64_t kPrime = 1099511628211ull;
  for (int32_t t : tokens) {
    const uint32_t v = static_cast<uint32_t>(t);
    for (int i = 0; i < 4; ++i) {
      hash ^= (v >> (8 * i)) & 0xffu;
      hash *= kPrime;
    }
  }
  return hash;
}

std::vector<uint8_t> encode(const Hello& m) {
  Writer w(MessageType::kHello);
  w.text(m.build);
  w.text(m.fingerprint);
  w.text(m.shape);
  for (uint32_t v :
       {m.n_layer, m.n_vocab, m.hidden_width, m.expert_bits, m.layer_first, m.layer_last}) {
    w.u32(v);
  }
  w.u8(m.output ? 1 : 0);
  w.u32(m.ctx);
  w.text(m.data_endpoint);
  w.u64(m.incarnation);
  return w.finish();
}

std::vector<uint8_t> encode(const Work& m) {
  Writer w(MessageType::kWork);
  for (uint64_t v : {m.session, m.request, m.prefix_hash, m.result_hash}) w.u64(v);
  for (uint32_t v : {m.pos0, m.flags, m.n_ctx, m.prefill_chunk}) w.u32(v);
  w.u8(static_cast<uint8_t>(m.bits));
  w.u32(m.hidden_width);
  w.u32(static_cast<uint32_t>(m.tokens.size()));
  w.u32(static_cast<uint32_t>(m.route.size()));
  w.u32(m.route_index);
  for (const Hop& h : m.route) w.hop(h);
  w.token_ids(m.tokens);
  w.floats(m.hidden, m.bits);
  return w.finish();
}

std::vector<uint8_t> encode(const WorkResult& m) {
  Writer w(MessageType::kResult);
  w.u64(m.session);
  w.u64(m.request);
  w.u64(m.result_hash);
  w.u8(static_cast<uint8_t>(m.kind));
  w.u8(static_cast<uint8_t>(m.bits));
  w.u32(m.width);
  w.u32(m.width == 0 ? 0 : static_cast<uint32_t>(m.values.size() / m.width));
  w.floats(m.values, m.bits);
  return w.finish();
}

std::vector<uint8_t> encode(const ErrorInfo& m) {
  Writer w(MessageType::kError);
  w.u64(m.session);
  w.u64(m.request);
  w.text(m.text);
  return w.finish();
}

std::vector<uint8_t> encode_beat(MessageType type, uint64_t incarnation) {
  Writer w(type);
  w.u64(incarnation);
  return w.finish();
}

std::vector<uint8_t> encode_release(uint64_t session) {
  Writer w(MessageType::kRelease);
  w.u64(session);
  return w.finish();
}

std::vector<uint8_t> encode(const StateMsg& m, MessageType type) {
  Writer w(type);
  w.u64(m.session);
  w.u64(m.request);
  if (type == MessageType::kStateSave) {
    w.u64(m.prefix_hash);
    w.u32(m.n_tokens);
    w.hop(m.hop);
    return w.finish();
  }
  if (type == MessageType::kStateLoad) {
    w.u32(m.n_ctx);
    w.u32(m.prefill_chunk);
    w.hop(m.hop);
    w.u32(static_cast<uint32_t>(m.tokens.size()));
    w.token_ids(m.tokens);
  } else {
    w.u32(m.n_tokens);
  }
  w.u64(m.shard.size());
  w.raw(m.shard);
  return w.finish();
}

Result<Message> decode(std::span<const uint8_t> bytes, const WireLimits& limits) {
  Reader r(bytes);
  uint32_t magic = 0, body = 0;
  uint16_t version = 0, type = 0;
  if (!r.u32(&magic) || !r.u16(&version) || !r.u16(&type) || !r.u32(&body)) return cut("frame");
  if (magic != kWireMagic) return Status::invalid_file("wire: bad magic 0x%08x", magic);
  if (version != kWireVersion) {
    return Status::invalid_file("wire: protocol version %u (this build speaks %u)", version,
                                kWireVersion);
  }
  if (body > limits.max_body_bytes) return Status::invalid_file("wire: a %u-byte body", body);
  if (body != r.left()) {
    return Status::invalid_file("wire: the frame says %u body bytes, %zu came", body, r.left());
  }
  Message m;
  switch (static_cast<MessageType>(type)) {
    case MessageType::kHello: DS4_TRY(decode_hello(r, limits, &m.hello)); break;
    case MessageType::kWork: DS4_TRY(decode_work(r, limits, &m.work)); break;
    case MessageType::kResult: DS4_TRY(decode_result(r, limits, &m.result)); break;
    case MessageType::kError:
      if (!r.u64(&m.error.session) || !r.u64(&m.error.request) ||
          !r.text(&m.error.text, limits.max_text_bytes)) {
        return cut("ERROR");
      }
      break;
    case MessageType::kAccept:
    case MessageType::kBeat:
      if (!r.u64(&m.beat.incarnation)) return cut("BEAT");
      break;
    case MessageType::kRelease:
      if (!r.u64(&m.release)) return cut("RELEASE");
      break;
    case MessageType::kStateSave:
    case MessageType::kState:
    case MessageType::kStateLoad:
      DS4_TRY(decode_state(r, limits, static_cast<MessageType>(type), &m.state));
      break;
    default: return Status::invalid_file("wire: message type %u", type);
  }
  if (r.left() != 0) return Status::invalid_file("wire: %zu bytes after the record", r.left());
  m.type = static_cast<MessageType>(type);
  return m;
}

}  // namespace ds4::dist
