// src/dist/slice_worker.cpp: registration and liveness on a control thread; WORK in, evaluated,
// and on to the next hop or back to the coordinator, on the serving thread.
#include "dist/slice_worker.h"

#include <map>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "dist/route.h"
#include "dist/socket_util.h"

namespace ds4::dist {

struct SliceWorker::Impl {
  zmq::context_t context{1};
  std::unique_ptr<CurveAuthenticator> auth;  // with a key; goes before the context
  zmq::socket_t data{context, zmq::socket_type::pull};
  zmq::socket_t from_control{context, zmq::socket_type::pair};  // serving thread's end
  zmq::socket_t answers{context, zmq::socket_type::dealer};     // RESULT / ERROR to the coordinator
  std::string control_address;                                  // inproc name of the pair
  std::map<std::string, zmq::socket_t> next_hops;               // PUSH, by endpoint
  struct Timeline {
    std::unique_ptr<Session> session;
    uint64_t hash = kPrefixHashBasis;
  };
  std::map<uint64_t, Timeline> sessions;
  std::thread control;
  std::mutex mu;
  Status refused;  // the coordinator's refusal of the registration

  void send_answer(const std::vector<uint8_t>& bytes) {
    answers.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  }
};

SliceWorker::SliceWorker(Engine& engine, SliceWorkerOptions options)
    : engine_(engine), options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

SliceWorker::~SliceWorker() {
  stop();
  if (impl_->control.joinable()) impl_->control.join();
}

Result<std::unique_ptr<SliceWorker>> SliceWorker::open(Engine& engine, SliceWorkerOptions options) {
  if (options.coordinator.empty()) {
    return Status::invalid_argument("a worker needs the coordinator's address (--coordinator)");
  }
  if (engine.info().layer_first == 0) {
    return Status::invalid_argument(
        "a worker's layers start after 0 (layer 0 is the coordinator's)");
  }
  DS4_TRY(check_listen(options.listen, options.key != nullptr));
  std::unique_ptr<SliceWorker> w(new SliceWorker(engine, std::move(options)));
  Impl& im = *w->impl_;
  const ClusterKey* key = w->options_.key.get();
  if (key != nullptr) {
    DS4_ASSIGN_OR_RETURN(im.auth, CurveAuthenticator::start(im.context, *key));
  }
  try {
    if (key != nullptr) {
      secure_server(im.data, *key);
      secure_client(im.answers, *key);
    }
    im.data.set(zmq::sockopt::linger, 0);
    // A frame over the wire's limit drops the sender's connection before it is read whole.
    im.data.set(zmq::sockopt::maxmsgsize,
                static_cast<int64_t>(w->options_.limits.max_body_bytes + kFrameHeaderBytes));
    im.data.bind(w->options_.listen);
    w->endpoint_ = im.data.get(zmq::sockopt::last_endpoint);
    im.control_address = "inproc://ds4-worker-control";
    im.from_control.bind(im.control_address);
    im.answers.set(zmq::sockopt::linger, 0);
    im.answers.connect(w->options_.coordinator);
  } catch (const zmq::error_t& e) {
    return Status::unavailable("cannot listen on %s or reach %s: %s", w->options_.listen.c_str(),
                               w->options_.coordinator.c_str(), e.what());
  }
  return w;
}

// Registers with the coordinator, beats, and passes RELEASE on to the serving thread; registers
// again (and drops every session) when the coordinator stops answering or restarts.
void SliceWorker::control_loop() {
  Impl& im = *impl_;
  zmq::socket_t to_serving(im.context, zmq::socket_type::pair);
  to_serving.connect(im.control_address);
  const ModelInfo& info = engine_.info();
  Hello hello = hello_of(info, options_.build, options_.n_ctx);
  hello.data_endpoint = endpoint_;
  const auto say = [&](const std::string& s) {
    if (options_.log) options_.log(s);
  };
  const auto drop_all = [&] { to_serving.send(zmq::buffer(encode_release(0))); };
  while (!stop_.load()) {
    zmq::socket_t control(im.context, zmq::socket_type::dealer);
    control.set(zmq::sockopt::linger, 0);
    if (options_.key) secure_client(control, *options_.key);
    control.connect(options_.coordinator);
    // Each registration is a new incarnation: a worker that dropped its sessions must not look
    // like the one whose timelines the coordinator remembers (it replays them instead).
    hello.incarnation = draw_incarnation();
    control.send(zmq::buffer(encode(hello)), zmq::send_flags::dontwait);
    uint64_t coordinator = 0;
    Clock::time_point heard = Clock::now(), beat = Clock::now();
    bool lost = false;
    while (!stop_.load() && !lost) {
      zmq::pollitem_t item{control.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPollSlice);
      zmq::message_t msg;
      while (control.recv(msg, zmq::recv_flags::dontwait)) {
        auto m = decode(bytes_of(msg), options_.limits);
        if (!m.is_ok()) {
          say("worker: a malformed message from the coordinator: " + m.status().message());
          continue;
        }
        heard = Clock::now();
        if (m->type == MessageType::kError && m->error.request == 0) {
          std::lock_guard lock(im.mu);
          im.refused =
              Status::invalid_argument("the coordinator at %s refused this worker: %s",
                                       options_.coordinator.c_str(), m->error.text.c_str());
          stop_.store(true);
        } else if (m->type == MessageType::kAccept) {
          coordinator = m->beat.incarnation;
          registered_.store(true);
          say("worker: layers " + std::to_string(info.layer_first) + ":" +
              (info.layer_output ? "output" : std::to_string(info.layer_last)) +
              " registered with the coordinator at " + options_.coordinator + ", serving on " +
              endpoint_);
        } else if (m->type == MessageType::kBeat && m->beat.incarnation != coordinator) {
          lost = true;  // a coordinator that does not know this registration
        } else if (m->type == MessageType::kRelease) {
          to_serving.send(zmq::buffer(encode_release(m->release)));
        }
      }
      const auto now = Clock::now();
      if (registered_.load() && now - heard > options_.beat_timeout) lost = true;
      if (registered_.load() && now >= beat) {
        control.send(zmq::buffer(encode_beat(MessageType::kBeat, hello.incarnation)),
                     zmq::send_flags::dontwait);
        beat = now + options_.beat_interval;
      }
    }
    if (lost) {
      say("worker: lost the coordinator at " + options_.coordinator +
          "; dropping every session and registering again");
      registered_.store(false);
      drop_all();
    }
  }
}

Status SliceWorker::serve() {
  Impl& im = *impl_;
  im.control = std::thread([this] { control_loop(); });
  const ModelInfo& info = engine_.info();
  Status result = Status::ok();
  while (!stop_.load()) {
    try {
      zmq::pollitem_t items[] = {{im.data.handle(), 0, ZMQ_POLLIN, 0},
                                 {im.from_control.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, kPollSlice);
      zmq::message_t msg;
      while (im.from_control.recv(msg, zmq::recv_flags::dontwait)) {
        auto m = decode(bytes_of(msg));
        if (!m.is_ok() || m->type != MessageType::kRelease) continue;
        if (m->release == 0) {
          im.sessions.clear();
        } else {
          im.sessions.erase(m->release);
        }
      }
      if (im.data.recv(msg, zmq::recv_flags::dontwait)) serve_item(bytes_of(msg), info);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      result = Status::io_error("worker socket %s: %s", endpoint_.c_str(), e.what());
      break;
    }
  }
  stop_.store(true);
  im.control.join();
  std::lock_guard lock(im.mu);
  return im.refused.is_ok() ? result : im.refused;
}

void SliceWorker::serve_item(std::span<const uint8_t> bytes, const ModelInfo& info) {
  Impl& im = *impl_;
  auto m = decode(bytes, options_.limits);
  const bool state =
      m.is_ok() && (m->type == MessageType::kStateSave || m->type == MessageType::kStateLoad);
  if (!m.is_ok() || (m->type != MessageType::kWork && !state)) {
    // Nobody to answer but the coordinator, which cannot match it to a request: it logs it.
    im.send_answer(encode(ErrorInfo{.text = "worker " + endpoint_ + ": " +
                                            (m.is_ok() ? "a message that is neither WORK nor "
                                                         "STATE on the data endpoint"
                                                       : m.status().message())}));
    return;
  }
  if (state) return serve_state(m->type, m->state, info);
  Work& w = m->work;
  const auto refuse = [&](const std::string& text) { refuse_item(w.session, w.request, text); };
  const Hop& hop = w.hop();
  if (static_cast<int>(hop.layer_first) != info.layer_first ||
      static_cast<int>(hop.layer_last) != info.layer_last) {
    return refuse("layers " + std::to_string(hop.layer_first) + ":" +
                  std::to_string(hop.layer_last) + " asked of this worker");
  }
  if (hop.output && !info.layer_output) return refuse("logits asked of a worker without the head");
  if (w.hidden_width != static_cast<uint32_t>(info.hidden_width)) {
    return refuse("a hidden state " + std::to_string(w.hidden_width) + " wide for a model of " +
                  std::to_string(info.hidden_width));
  }
  auto found = im.sessions.find(w.session);
  if ((w.flags & kWorkReset) != 0) {
    if (w.pos0 != 0 || w.prefix_hash != kPrefixHashBasis) {
      return refuse("a reset item must start at position 0");
    }
    if (const Status st = fresh_session(w.session, w.n_ctx, w.prefill_chunk); !st.is_ok()) {
      return refuse(st.message());
    }
    found = im.sessions.find(w.session);
  }
  if (found == im.sessions.end() || found->second.hash != w.prefix_hash ||
      static_cast<int64_t>(w.pos0) != found->second.session->n_tokens()) {
    return refuse(
        "worker KV prefix hash mismatch: this worker holds " +
        std::to_string(found == im.sessions.end() ? 0 : found->second.session->n_tokens()) +
        " tokens of session " + std::to_string(w.session) + ", the item continues from " +
        std::to_string(w.pos0));
  }
  Impl::Timeline& t = found->second;
  auto out = t.session->append_slice(w.tokens, w.hidden);
  if (!out.is_ok()) {
    // The session may hold part of the span: its timeline is no longer what the hash says.
    im.sessions.erase(found);
    return refuse(out.status().message());
  }
  t.hash = w.result_hash;
  if (w.route_index + 1 < w.route.size()) {
    w.route_index += 1;
    w.hidden = std::move(out).value();
    const std::string& next = w.hop().endpoint;
    auto sock = im.next_hops.find(next);
    if (sock == im.next_hops.end()) {
      zmq::socket_t s(im.context, zmq::socket_type::push);
      s.set(zmq::sockopt::linger, 0);
      s.set(zmq::sockopt::immediate, 1);  // no queue for a hop that is not connected
      s.set(zmq::sockopt::sndtimeo, static_cast<int>(options_.forward_timeout.count()));
      if (options_.key) secure_client(s, *options_.key);
      s.connect(next);
      sock = im.next_hops.emplace(next, std::move(s)).first;
    }
    if (!sock->second.send(zmq::buffer(encode(w)), zmq::send_flags::none)) {
      im.next_hops.erase(sock);
      return refuse("the next worker at " + next + " took nothing within " +
                    std::to_string(options_.forward_timeout.count()) + " ms");
    }
    return;
  }
  WorkResult r{.session = w.session, .request = w.request, .result_hash = w.result_hash};
  if ((w.flags & kWorkAckOnly) == 0) {
    if (info.layer_output) {
      r.kind = ResultKind::kLogits;
      r.width = static_cast<uint32_t>(info.n_vocab);
    } else {
      r.kind = ResultKind::kHidden;
      r.bits = w.bits;
      r.width = static_cast<uint32_t>(info.hidden_width);
    }
    r.values = std::move(out).value();
  }
  im.send_answer(encode(r));
}

// An ERROR to the coordinator for one item, naming this worker and its layers.
void SliceWorker::refuse_item(uint64_t session, uint64_t request, const std::string& text) {
  const ModelInfo& info = engine_.info();
  impl_->send_answer(encode(ErrorInfo{.session = session,
                                      .request = request,
                                      .text = "worker " + endpoint_ + " (layers " +
                                              std::to_string(info.layer_first) + ":" +
                                              std::to_string(info.layer_last) + "): " + text}));
}

// A session for the coordinator's `id` with its context size and prefill chunk (0: this worker's
// own), replacing any it had.
Status SliceWorker::fresh_session(uint64_t id, uint32_t n_ctx, uint32_t prefill_chunk) {
  impl_->sessions.erase(id);
  const int ctx = n_ctx == 0 ? options_.n_ctx : static_cast<int>(n_ctx);
  if (ctx > options_.n_ctx) {
    return Status::out_of_range("a session of %d tokens exceeds this worker's context (--ctx %d)",
                                ctx, options_.n_ctx);
  }
  auto s = engine_.create_session({.n_ctx = ctx,
                                   .prefill_chunk = prefill_chunk == 0
                                                        ? options_.prefill_chunk
                                                        : static_cast<int>(prefill_chunk)});
  if (!s.is_ok()) return s.status();
  impl_->sessions.emplace(id, Impl::Timeline{std::move(s).value()});
  return Status::ok();
}

// A snapshot's shard: sent (STATE_SAVE) or installed (STATE_LOAD).
void SliceWorker::serve_state(MessageType type, const StateMsg& q, const ModelInfo& info) {
  Impl& im = *impl_;
  const auto refuse = [&](const std::string& text) { refuse_item(q.session, q.request, text); };
  if (static_cast<int>(q.hop.layer_first) != info.layer_first ||
      static_cast<int>(q.hop.layer_last) != info.layer_last) {
    return refuse("the state of layers " + std::to_string(q.hop.layer_first) + ":" +
                  std::to_string(q.hop.layer_last) + " asked of this worker");
  }
  auto found = im.sessions.find(q.session);
  if (type == MessageType::kStateSave) {
    if (found == im.sessions.end() || found->second.hash != q.prefix_hash ||
        found->second.session->n_tokens() != static_cast<int>(q.n_tokens)) {
      return refuse("worker KV prefix hash mismatch: the state of " + std::to_string(q.n_tokens) +
                    " tokens of session " + std::to_string(q.session) + " is not held here");
    }
    auto shard = found->second.session->save_layers();
    if (!shard.is_ok()) return refuse(shard.status().message());
    StateMsg a{.session = q.session, .request = q.request, .n_tokens = q.n_tokens};
    a.shard = std::move(shard).value();
    im.send_answer(encode(a, MessageType::kState));
    return;
  }
  if (const Status st = fresh_session(q.session, q.n_ctx, q.prefill_chunk); !st.is_ok()) {
    return refuse(st.message());
  }
  found = im.sessions.find(q.session);
  const Status st = found->second.session->load_layers(q.shard, q.tokens);
  if (!st.is_ok()) {
    im.sessions.erase(found);  // what it holds is no timeline the coordinator knows
    return refuse(st.message());
  }
  found->second.hash = extend_prefix_hash(kPrefixHashBasis, q.tokens);
  im.send_answer(encode(
      WorkResult{.session = q.session, .request = q.request, .result_hash = found->second.hash}));
}

}  // namespace ds4::dist
