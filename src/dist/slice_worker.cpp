// src/dist/slice_worker.cpp: WORK in, RESULT out, on a REP socket.
#include "dist/slice_worker.h"

#include <zmq.hpp>

namespace ds4::dist {

struct SliceWorker::Impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::rep};
};

SliceWorker::SliceWorker(Engine& engine, SliceWorkerOptions options)
    : engine_(engine), options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

SliceWorker::~SliceWorker() = default;

Result<std::unique_ptr<SliceWorker>> SliceWorker::open(Engine& engine, SliceWorkerOptions options) {
  std::unique_ptr<SliceWorker> w(new SliceWorker(engine, std::move(options)));
  try {
    w->impl_->socket.set(zmq::sockopt::linger, 0);
    w->impl_->socket.bind(w->options_.endpoint);
    w->endpoint_ = w->impl_->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::unavailable("cannot listen on %s: %s", w->options_.endpoint.c_str(), e.what());
  }
  return w;
}

Status SliceWorker::serve() {
  constexpr auto kPoll = std::chrono::milliseconds(100);
  zmq::pollitem_t item{impl_->socket.handle(), 0, ZMQ_POLLIN, 0};
  while (!stop_.load()) {
    try {
      if (zmq::poll(&item, 1, kPoll) == 0) continue;
      zmq::message_t request;
      if (!impl_->socket.recv(request, zmq::recv_flags::dontwait)) continue;
      const std::vector<uint8_t> reply =
          answer({static_cast<const uint8_t*>(request.data()), request.size()});
      impl_->socket.send(zmq::buffer(reply), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      return Status::io_error("worker socket %s: %s", endpoint_.c_str(), e.what());
    }
  }
  return Status::ok();
}

std::vector<uint8_t> SliceWorker::answer(std::span<const uint8_t> request) {
  auto m = decode(request, options_.limits);
  if (!m.is_ok()) return encode_error(m.status().message());
  if (m->type != MessageType::kWork) return encode_error("this worker takes WORK items only");
  const Work& w = m->work;
  const ModelInfo& info = engine_.info();
  if (static_cast<int>(w.layer_first) != info.layer_first ||
      static_cast<int>(w.layer_last) != info.layer_last) {
    return encode_error("layers " + std::to_string(w.layer_first) + ":" +
                        std::to_string(w.layer_last) + " asked of a worker holding " +
                        std::to_string(info.layer_first) + ":" + std::to_string(info.layer_last));
  }
  if ((w.flags & kWorkWantLogits) != 0 && !info.layer_output) {
    return encode_error("logits asked of a worker without the output head");
  }
  if (w.layer_first > 0 && w.hidden_width != static_cast<uint32_t>(info.hidden_width)) {
    return encode_error("a hidden state " + std::to_string(w.hidden_width) +
                        " wide for a model of " + std::to_string(info.hidden_width));
  }
  Timeline& t = sessions_[w.session];
  if ((w.flags & kWorkReset) != 0) {
    if (w.pos0 != 0 || w.prefix_hash != kPrefixHashBasis) {
      return encode_error("a reset item must start at position 0");
    }
    t.session.reset();
    t.hash = kPrefixHashBasis;
  }
  if (!t.session) {
    auto s =
        engine_.create_session({.n_ctx = options_.n_ctx, .prefill_chunk = options_.prefill_chunk});
    if (!s.is_ok()) return encode_error(s.status().message());
    t.session = std::move(s).value();
    t.hash = kPrefixHashBasis;
  }
  if (t.hash != w.prefix_hash || static_cast<int64_t>(w.pos0) != t.session->n_tokens()) {
    return encode_error("worker KV prefix hash mismatch: this worker holds " +
                        std::to_string(t.session->n_tokens()) + " tokens of session " +
                        std::to_string(w.session) + ", the item continues from " +
                        std::to_string(w.pos0));
  }
  auto out = t.session->append_slice(w.tokens, w.hidden);
  if (!out.is_ok()) {
    // The session may hold part of the span: its timeline is no longer what the hash says.
    sessions_.erase(w.session);
    return encode_error(out.status().message());
  }
  t.hash = w.result_hash;
  WorkResult r{.request = w.request, .result_hash = w.result_hash};
  if ((w.flags & kWorkAckOnly) != 0) return encode(r);
  if (info.layer_output) {
    r.kind = ResultKind::kLogits;
    r.width = static_cast<uint32_t>(info.n_vocab);
  } else {
    r.kind = ResultKind::kHidden;
    r.bits = w.bits;
    r.width = static_cast<uint32_t>(info.hidden_width);
  }
  r.values = std::move(out).value();
  return encode(r);
}

}  // namespace ds4::dist
