// src/dist/remote_slice.cpp: WORK out, RESULT in, on a REQ socket with a deadline.
#include "dist/remote_slice.h"

#include <zmq.hpp>

namespace ds4::dist {

struct RemoteSlice::Impl {
  zmq::context_t context{1};
  std::unique_ptr<zmq::socket_t> socket;
};

RemoteSlice::RemoteSlice(RemoteSliceOptions options)
    : o_(std::move(options)), impl_(std::make_unique<Impl>()) {
  reconnect();
}

RemoteSlice::~RemoteSlice() = default;

void RemoteSlice::reconnect() {
  // A REQ socket that sent and got no answer cannot send again: a new one takes its place.
  impl_->socket = std::make_unique<zmq::socket_t>(impl_->context, zmq::socket_type::req);
  impl_->socket->set(zmq::sockopt::linger, 0);
  impl_->socket->connect(o_.endpoint);
}

Result<std::vector<float>> RemoteSlice::append(std::span<const int32_t> tokens,
                                               std::span<const float> hidden, bool reset) {
  if (broken_ && !reset) {
    return Status::unavailable("the worker at %s lost this session's timeline: reset it first",
                               o_.endpoint.c_str());
  }
  Work w;
  w.session = o_.session;
  w.request = next_request_++;
  w.pos0 = reset ? 0 : pos_;
  w.prefix_hash = reset ? kPrefixHashBasis : hash_;
  w.tokens.assign(tokens.begin(), tokens.end());
  w.result_hash = extend_prefix_hash(w.prefix_hash, w.tokens);
  w.layer_first = o_.layer_first;
  w.layer_last = o_.layer_last;
  w.flags = (reset ? kWorkReset : 0u) | (o_.output ? kWorkWantLogits : 0u);
  w.bits = o_.bits;
  w.hidden_width = o_.layer_first == 0 ? 0 : o_.hidden_width;
  w.hidden.assign(hidden.begin(), hidden.end());
  const std::vector<uint8_t> bytes = encode(w);
  broken_ = true;  // until an answer that matches comes back
  zmq::message_t reply;
  try {
    impl_->socket->send(zmq::buffer(bytes), zmq::send_flags::none);
    zmq::pollitem_t item{impl_->socket->handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, o_.timeout) == 0) {
      reconnect();
      return Status::unavailable("the worker at %s (layers %u:%u) did not answer within %lld ms",
                                 o_.endpoint.c_str(), o_.layer_first, o_.layer_last,
                                 static_cast<long long>(o_.timeout.count()));
    }
    if (!impl_->socket->recv(reply, zmq::recv_flags::none)) {
      reconnect();
      return Status::unavailable("no answer from the worker at %s", o_.endpoint.c_str());
    }
  } catch (const zmq::error_t& e) {
    reconnect();
    return Status::unavailable("the worker at %s: %s", o_.endpoint.c_str(), e.what());
  }
  auto m = decode({static_cast<const uint8_t*>(reply.data()), reply.size()}, o_.limits);
  if (!m.is_ok())
    return Status::invalid_file("from %s: %s", o_.endpoint.c_str(), m.status().message().c_str());
  if (m->type == MessageType::kError) {
    return Status::unavailable("the worker at %s: %s", o_.endpoint.c_str(), m->error.c_str());
  }
  if (m->type != MessageType::kResult || m->result.request != w.request ||
      m->result.result_hash != w.result_hash) {
    return Status::invalid_file("the worker at %s answered another item", o_.endpoint.c_str());
  }
  const WorkResult& r = m->result;
  const bool fits = o_.output ? r.kind == ResultKind::kLogits && r.width == o_.n_vocab
                              : r.kind == ResultKind::kHidden && r.width == o_.hidden_width &&
                                    r.values.size() == tokens.size() * size_t{o_.hidden_width};
  if (!fits) {
    return Status::invalid_file("the worker at %s answered %zu values of the wrong kind or size",
                                o_.endpoint.c_str(), r.values.size());
  }
  broken_ = false;
  pos_ = w.pos0 + static_cast<uint32_t>(tokens.size());
  hash_ = w.result_hash;
  return std::move(m->result.values);
}

}  // namespace ds4::dist
