// src/dist/coordinator.cpp: registrations and liveness on the control thread; spans out to the
// route's first worker and their answers back, for the engine's sessions.
#include "dist/coordinator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "dist/route.h"
#include "dist/socket_util.h"

namespace ds4::dist {
namespace {

// "HOST" of "tcp://HOST:PORT".
std::string host_of(const std::string& endpoint) {
  const size_t begin = endpoint.find("://");
  const size_t from = begin == std::string::npos ? 0 : begin + 3;
  const size_t colon = endpoint.rfind(':');
  return endpoint.substr(
      from, colon == std::string::npos || colon < from ? std::string::npos : colon - from);
}

std::string range_text(uint32_t first, uint32_t last, bool output) {
  return std::to_string(first) + ":" + (output ? "output" : std::to_string(last));
}

struct Member {
  std::string identity;  // the ROUTER's id of the worker's control connection
  Hello hello;
  Clock::time_point seen;
};

struct Pending {
  uint64_t request = 0;
  uint64_t result_hash = 0;
  bool want_logits = false;
};

// An engine session's timeline as sent.
struct Timeline {
  std::vector<Hop> route;
  std::vector<uint64_t> incarnations;  // of the route's workers
  uint32_t pos = 0;
  uint64_t hash = kPrefixHashBasis;
  bool broken = true;  // nothing sent yet, or a failure voided it: the next span must reset
  uint32_t n_ctx = 0, prefill_chunk = 0;  // the engine session's (attach)
  std::deque<Pending> pending;
};

struct Plan {
  std::vector<Hop> route;
  std::vector<uint64_t> incarnations;
};

}  // namespace

struct Coordinator::Impl {
  CoordinatorOptions o;
  Hello self;  // set once by start(), before the control thread runs
  zmq::context_t context{1};
  std::unique_ptr<CurveAuthenticator> auth;  // with a key; goes before the context
  zmq::socket_t control{context, zmq::socket_type::router};
  std::string endpoint;
  uint64_t incarnation = draw_incarnation();
  std::thread thread;
  std::atomic<bool> stop{false};

  mutable std::mutex mu;  // everything below up to send_mu
  mutable std::condition_variable cv;
  std::vector<Member> members;
  std::map<uint64_t, Timeline> timelines;
  std::map<uint64_t, Message> arrived;  // answers by request id
  std::set<uint64_t> expected;          // request ids awaited
  std::vector<uint64_t> released;       // sessions whose state the workers may drop
  uint64_t next_request = 1;

  std::mutex send_mu;
  std::map<std::string, zmq::socket_t> first_hops;  // PUSH, by endpoint

  explicit Impl(CoordinatorOptions options) : o(std::move(options)) {}

  void say(const std::string& s) const {
    if (o.log) o.log(s);
  }

  // With mu held: the route the registered workers make now.
  Result<Plan> plan() const {
    if (self.n_layer == 0) return Status::unavailable("the coordinator has not started");
    std::vector<Candidate> c;
    for (size_t i = 0; i < members.size(); ++i) {
      const Hello& h = members[i].hello;
      c.push_back({static_cast<int>(i), h.layer_first, h.layer_last, h.output});
    }
    DS4_ASSIGN_OR_RETURN(std::vector<int> hops,
                         plan_route(self.n_layer, self.layer_last, false, c));
    Plan p;
    for (int i : hops) {
      const Hello& h = members[static_cast<size_t>(i)].hello;
      p.route.push_back({h.data_endpoint, h.layer_first, h.layer_last, h.output});
      p.incarnations.push_back(h.incarnation);
    }
    return p;
  }

  // With `lock` (of mu) held: the route, waiting for one up to route_timeout.
  Result<Plan> plan_within(std::unique_lock<std::mutex>& lock) {
    const auto deadline = Clock::now() + o.route_timeout;
    auto p = plan();
    while (!p.is_ok() && cv.wait_until(lock, deadline) != std::cv_status::timeout) p = plan();
    if (!p.is_ok()) p = plan();
    if (p.is_ok()) return p;
    return Status::unavailable("%s (waited %lld ms for workers)", p.status().message().c_str(),
                               static_cast<long long>(o.route_timeout.count()));
  }

  // With mu held: the first hop of a route (its workers' incarnations) that is no longer
  // registered, or -1.
  int lost_hop(const std::vector<uint64_t>& incarnations) const {
    for (size_t i = 0; i < incarnations.size(); ++i) {
      const bool alive = std::any_of(members.begin(), members.end(), [&](const Member& m) {
        return m.hello.incarnation == incarnations[i];
      });
      if (!alive) return static_cast<int>(i);
    }
    return -1;
  }

  // With mu held: voids `t`'s spans in flight; the next span must reset.
  Status fail(Timeline& t, Status why) {
    for (const Pending& p : t.pending) {
      expected.erase(p.request);
      arrived.erase(p.request);
    }
    t.pending.clear();
    t.broken = true;
    return why;
  }

  void reply(const std::string& identity, const std::vector<uint8_t>& body) {
    control.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    control.send(zmq::buffer(body), zmq::send_flags::dontwait);
  }

  void on_hello(const std::string& identity, const Hello& h);
  void on_message(const std::string& identity, Message m);
  void expire_and_release();
};

Coordinator::Coordinator(CoordinatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Coordinator::~Coordinator() {
  impl_->stop.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::shared_ptr<Coordinator>> Coordinator::open(CoordinatorOptions options) {
  DS4_TRY(check_listen(options.listen, options.key != nullptr));
  std::shared_ptr<Coordinator> c(new Coordinator(std::move(options)));
  Impl& im = *c->impl_;
  if (im.o.key) {
    DS4_ASSIGN_OR_RETURN(im.auth, CurveAuthenticator::start(im.context, *im.o.key));
  }
  try {
    if (im.o.key) secure_server(im.control, *im.o.key);
    im.control.set(zmq::sockopt::linger, 0);
    im.control.set(zmq::sockopt::router_mandatory, 1);  // a reply to a gone worker fails, no block
    // A frame over the wire's limit drops the sender's connection before it is read whole.
    im.control.set(zmq::sockopt::maxmsgsize,
                   static_cast<int64_t>(im.o.limits.max_body_bytes + kFrameHeaderBytes));
    im.control.bind(im.o.listen);
    im.endpoint = im.control.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::unavailable("cannot listen on %s: %s", im.o.listen.c_str(), e.what());
  }
  return c;
}

Status Coordinator::start(const Hello& self) {
  Impl& im = *impl_;
  if (im.thread.joinable()) return Status::invalid_argument("the coordinator has started already");
  if (self.layer_first != 0 || self.output || self.n_layer == 0) {
    return Status::invalid_argument(
        "the coordinator holds the layers from 0 and leaves the head to a worker");
  }
  {
    std::lock_guard lock(im.mu);
    im.self = self;
  }
  im.thread = std::thread([this] { control_loop(); });
  return Status::ok();
}

const std::string& Coordinator::endpoint() const { return impl_->endpoint; }

void Coordinator::Impl::on_hello(const std::string& identity, const Hello& h) {
  Status ok = check_registration(self, h);
  if (ok.is_ok() && (h.data_endpoint.empty() || h.incarnation == 0)) {
    ok = Status::invalid_argument("worker refused: no data endpoint");
  }
  const std::string who = range_text(h.layer_first, h.layer_last, h.output) + " at " +
                          (h.data_endpoint.empty() ? std::string("?") : h.data_endpoint);
  if (!ok.is_ok()) {
    say("coordinator: worker " + who + " " + ok.message());
    try {
      reply(identity, encode(ErrorInfo{.text = ok.message()}));
    } catch (const zmq::error_t&) {
    }
    return;
  }
  {
    std::lock_guard lock(mu);
    std::erase_if(members, [&](const Member& m) {
      const bool same_slot = m.hello.layer_first == h.layer_first &&
                             m.hello.layer_last == h.layer_last &&
                             host_of(m.hello.data_endpoint) == host_of(h.data_endpoint);
      if (m.identity != identity && !same_slot) return false;
      say("coordinator: worker " + who + " replaces the one at " + m.hello.data_endpoint);
      return true;
    });
    members.push_back({identity, h, Clock::now()});
    cv.notify_all();
  }
  try {
    reply(identity, encode_beat(MessageType::kAccept, incarnation));
  } catch (const zmq::error_t&) {
  }
  say("coordinator: worker " + who + " registered");
}

void Coordinator::Impl::on_message(const std::string& identity, Message m) {
  switch (m.type) {
    case MessageType::kHello: on_hello(identity, m.hello); return;
    case MessageType::kBeat: {
      bool known = false;
      {
        std::lock_guard lock(mu);
        for (Member& w : members) {
          if (w.identity == identity) {
            w.seen = Clock::now();
            known = true;
          }
        }
      }
      // An unknown worker (dropped as silent, or registered with an earlier coordinator) hears
      // another incarnation and registers again.
      try {
        reply(identity, encode_beat(MessageType::kBeat, known ? incarnation : 0));
      } catch (const zmq::error_t&) {
      }
      return;
    }
    case MessageType::kResult:
    case MessageType::kState:
    case MessageType::kError: {
      const uint64_t request = m.type == MessageType::kResult  ? m.result.request
                               : m.type == MessageType::kState ? m.state.request
                                                               : m.error.request;
      std::lock_guard lock(mu);
      if (expected.erase(request) == 1) {
        arrived.emplace(request, std::move(m));
        cv.notify_all();
      } else if (m.type == MessageType::kError) {
        // A registration's, a stranger's, or one for a span already given up: worth a line.
        say("coordinator: " + m.error.text);
      }
      return;
    }
    default: say("coordinator: a message of type " + std::to_string(int(m.type)) + " ignored");
  }
}

void Coordinator::Impl::expire_and_release() {
  std::vector<uint64_t> sessions;
  std::vector<std::string> identities;
  {
    std::lock_guard lock(mu);
    const auto now = Clock::now();
    const size_t before = members.size();
    std::erase_if(members, [&](const Member& m) {
      if (now - m.seen <= o.beat_timeout) return false;
      say("coordinator: worker " +
          range_text(m.hello.layer_first, m.hello.layer_last, m.hello.output) + " at " +
          m.hello.data_endpoint + " lost: no beat for " + std::to_string(o.beat_timeout.count()) +
          " ms");
      return true;
    });
    if (members.size() != before) cv.notify_all();
    sessions.swap(released);
    for (const Member& m : members) identities.push_back(m.identity);
  }
  for (uint64_t s : sessions) {
    for (const std::string& id : identities) {
      try {
        reply(id, encode_release(s));
      } catch (const zmq::error_t&) {
      }
    }
  }
}

void Coordinator::control_loop() {
  Impl& im = *impl_;
  while (!im.stop.load()) {
    try {
      zmq::pollitem_t item{im.control.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPollSlice);
      zmq::message_t identity, body;
      while (im.control.recv(identity, zmq::recv_flags::dontwait)) {
        if (!identity.more() || !im.control.recv(body, zmq::recv_flags::none)) continue;
        while (body.more()) {  // a peer that sent several frames: the message is malformed
          (void)im.control.recv(body, zmq::recv_flags::none);
        }
        auto m = decode(bytes_of(body), im.o.limits);
        if (!m.is_ok()) {
          im.say("coordinator: a malformed message: " + m.status().message());
          continue;
        }
        im.on_message(identity.to_string(), std::move(m).value());
      }
      im.expire_and_release();
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      im.say(std::string("coordinator: control socket: ") + e.what());
    }
  }
}

Status Coordinator::route_ready() const {
  std::lock_guard lock(impl_->mu);
  return impl_->plan().status();
}

std::string Coordinator::describe_route() const {
  std::lock_guard lock(impl_->mu);
  auto p = impl_->plan();
  if (!p.is_ok()) return "";
  std::string out;
  for (const Hop& h : p->route) {
    out += (out.empty() ? "" : ", ") + range_text(h.layer_first, h.layer_last, h.output) + "@" +
           h.endpoint;
  }
  return out;
}

Status Coordinator::wait_for_route(std::chrono::milliseconds timeout,
                                   const std::function<void(const Status&)>& waiting) const {
  const auto deadline = Clock::now() + timeout;
  std::unique_lock lock(impl_->mu);
  for (;;) {
    Status st = impl_->plan().status();
    if (st.is_ok()) return st;
    const auto now = Clock::now();
    if (now >= deadline) {
      return Status::unavailable("%s (waited %lld ms for workers)", st.message().c_str(),
                                 static_cast<long long>(timeout.count()));
    }
    if (waiting) {
      lock.unlock();
      waiting(st);
      lock.lock();
    }
    impl_->cv.wait_until(lock, std::min(deadline, now + std::chrono::seconds(1)));
  }
}

int Coordinator::window() const {
  if (impl_->o.window > 0) return impl_->o.window;
  std::lock_guard lock(impl_->mu);
  auto p = impl_->plan();
  const int hops = p.is_ok() ? static_cast<int>(p->route.size()) : 1;
  return std::clamp(hops + 2, 2, 8);
}

void Coordinator::attach(uint64_t session, const SessionOptions& options) {
  std::lock_guard lock(impl_->mu);
  Timeline& t = impl_->timelines[session];
  t.n_ctx = static_cast<uint32_t>(options.n_ctx);
  t.prefill_chunk = static_cast<uint32_t>(options.prefill_chunk);
}

bool Coordinator::holds(uint64_t session, size_t n_tokens) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->timelines.find(session);
  if (it == impl_->timelines.end()) return false;
  const Timeline& t = it->second;
  return !t.broken && t.pending.empty() && t.pos == n_tokens && impl_->lost_hop(t.incarnations) < 0;
}

void Coordinator::release(uint64_t session) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->timelines.find(session);
  if (it == impl_->timelines.end()) return;
  (void)impl_->fail(it->second, Status::ok());
  impl_->timelines.erase(it);
  impl_->released.push_back(session);
}

Status Coordinator::send(uint64_t session, std::span<const TokenId> tokens,
                         std::span<const float> hidden, bool reset, bool want_logits) {
  Impl& im = *impl_;
  Work w;
  {
    std::unique_lock lock(im.mu);
    Timeline& t = im.timelines[session];
    if (reset) {
      (void)im.fail(t, Status::ok());
      DS4_ASSIGN_OR_RETURN(Plan p, im.plan_within(lock));
      t.route = std::move(p.route);
      t.incarnations = std::move(p.incarnations);
      t.pos = 0;
      t.hash = kPrefixHashBasis;
      t.broken = false;
    } else if (t.broken || im.lost_hop(t.incarnations) >= 0) {
      return Status::unavailable(
          "the route of distributed session %llu changed: it starts again from position 0",
          static_cast<unsigned long long>(session));
    }
    w.session = session;
    w.request = im.next_request++;
    w.prefix_hash = t.hash;
    w.tokens.assign(tokens.begin(), tokens.end());
    w.result_hash = extend_prefix_hash(t.hash, w.tokens);
    w.pos0 = t.pos;
    w.flags = (reset ? kWorkReset : 0u) | (want_logits ? 0u : kWorkAckOnly);
    w.n_ctx = t.n_ctx;
    w.prefill_chunk = t.prefill_chunk;
    w.route = t.route;
    w.bits = im.o.bits;
    w.hidden_width = im.self.hidden_width;
    t.pos += static_cast<uint32_t>(tokens.size());
    t.hash = w.result_hash;
    t.pending.push_back({w.request, w.result_hash, want_logits});
    im.expected.insert(w.request);
  }
  w.hidden.assign(hidden.begin(), hidden.end());
  const std::string& first = w.route.front().endpoint;
  if (push(first, encode(w))) return Status::ok();
  std::lock_guard lock(im.mu);
  return im.fail(im.timelines[session],
                 Status::unavailable("the worker at %s took nothing within %lld ms", first.c_str(),
                                     static_cast<long long>(im.o.beat_timeout.count())));
}

bool Coordinator::push(const std::string& to, const std::vector<uint8_t>& bytes) {
  Impl& im = *impl_;
  std::lock_guard lock(im.send_mu);
  auto sock = im.first_hops.find(to);
  if (sock == im.first_hops.end()) {
    zmq::socket_t s(im.context, zmq::socket_type::push);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::immediate, 1);  // nothing queued for a worker that is not connected
    s.set(zmq::sockopt::sndtimeo, static_cast<int>(im.o.beat_timeout.count()));
    if (im.o.key) secure_client(s, *im.o.key);
    s.connect(to);
    sock = im.first_hops.emplace(to, std::move(s)).first;
  }
  bool sent = false;
  try {
    sent = sock->second.send(zmq::buffer(bytes), zmq::send_flags::none).has_value();
  } catch (const zmq::error_t&) {
    sent = false;
  }
  if (!sent) im.first_hops.erase(sock);
  return sent;
}

Result<Message> Coordinator::await(std::unique_lock<std::mutex>& lock, uint64_t request,
                                   const std::vector<uint64_t>& incarnations,
                                   const std::vector<Hop>& route) {
  Impl& im = *impl_;
  const auto deadline = Clock::now() + im.o.work_timeout;
  while (im.arrived.count(request) == 0) {
    if (const int lost = im.lost_hop(incarnations); lost >= 0) {
      const Hop& h = route[static_cast<size_t>(lost)];
      im.expected.erase(request);
      return Status::unavailable("the worker at %s (layers %s) was lost: no beat for %lld ms",
                                 h.endpoint.c_str(),
                                 range_text(h.layer_first, h.layer_last, h.output).c_str(),
                                 static_cast<long long>(im.o.beat_timeout.count()));
    }
    if (im.cv.wait_until(lock, deadline) == std::cv_status::timeout &&
        im.arrived.count(request) == 0) {
      im.expected.erase(request);
      return Status::unavailable("no answer from the distributed route within %lld ms",
                                 static_cast<long long>(im.o.work_timeout.count()));
    }
  }
  Message m = std::move(im.arrived.extract(request).mapped());
  if (m.type == MessageType::kError) return Status::unavailable("%s", m.error.text.c_str());
  return m;
}

Result<std::vector<float>> Coordinator::receive(uint64_t session) {
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  auto it = im.timelines.find(session);
  if (it == im.timelines.end() || it->second.pending.empty()) {
    return Status::invalid_argument("no span of distributed session %llu is in flight",
                                    static_cast<unsigned long long>(session));
  }
  Timeline& t = it->second;
  const Pending p = t.pending.front();
  Result<Message> got = await(lock, p.request, t.incarnations, t.route);
  if (!got.is_ok()) return im.fail(t, got.status());
  t.pending.pop_front();
  Message& m = *got;
  const WorkResult& r = m.result;
  const bool fits = r.session == session && r.result_hash == p.result_hash &&
                    (p.want_logits ? r.kind == ResultKind::kLogits && r.width == im.self.n_vocab &&
                                         r.values.size() == im.self.n_vocab
                                   : r.kind == ResultKind::kAck);
  if (!fits) {
    return im.fail(
        t, Status::invalid_file("the distributed route answered another item (kind %d, %zu values)",
                                static_cast<int>(r.kind), r.values.size()));
  }
  return std::move(m.result.values);
}

Result<std::vector<std::vector<uint8_t>>> Coordinator::export_layers(uint64_t session,
                                                                     size_t n_tokens) {
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  auto it = im.timelines.find(session);
  if (it == im.timelines.end() || it->second.broken || !it->second.pending.empty() ||
      it->second.pos != n_tokens || im.lost_hop(it->second.incarnations) >= 0) {
    return Status::unavailable("the workers do not hold distributed session %llu as sent",
                               static_cast<unsigned long long>(session));
  }
  const Timeline t = it->second;  // a copy: the lock is let go while pushing
  DS4_ASSIGN_OR_RETURN(
      std::vector<Message> answers,
      exchange(lock, t.route, t.incarnations, [&](const Hop& hop, uint64_t request) {
        return encode(StateMsg{.session = session,
                               .request = request,
                               .prefix_hash = t.hash,
                               .n_tokens = t.pos,
                               .hop = hop},
                      MessageType::kStateSave);
      }));
  std::vector<std::vector<uint8_t>> shards;
  for (Message& m : answers) {
    if (m.type != MessageType::kState || m.state.session != session || m.state.n_tokens != t.pos) {
      return Status::invalid_file("a worker answered another state than asked");
    }
    shards.push_back(std::move(m.state.shard));
  }
  return shards;
}

Status Coordinator::import_layers(
    uint64_t session, std::span<const TokenId> tokens,
    const std::function<std::vector<uint8_t>(int first, int last)>& shard_of) {
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  Timeline& t = im.timelines[session];
  (void)im.fail(t, Status::ok());
  DS4_ASSIGN_OR_RETURN(Plan p, im.plan_within(lock));
  const uint64_t hash = extend_prefix_hash(kPrefixHashBasis, tokens);
  const uint32_t n_ctx = t.n_ctx, prefill_chunk = t.prefill_chunk;
  DS4_ASSIGN_OR_RETURN(
      std::vector<Message> answers,
      exchange(lock, p.route, p.incarnations, [&](const Hop& hop, uint64_t request) {
        StateMsg q{.session = session,
                   .request = request,
                   .n_ctx = n_ctx,
                   .prefill_chunk = prefill_chunk,
                   .hop = hop};
        q.tokens.assign(tokens.begin(), tokens.end());
        q.shard = shard_of(static_cast<int>(hop.layer_first), static_cast<int>(hop.layer_last));
        return encode(q, MessageType::kStateLoad);
      }));
  for (const Message& m : answers) {
    if (m.type != MessageType::kResult || m.result.session != session ||
        m.result.result_hash != hash) {
      return Status::invalid_file("a worker answered another state load than asked");
    }
  }
  Timeline& done = im.timelines[session];
  done.route = std::move(p.route);
  done.incarnations = std::move(p.incarnations);
  done.pos = static_cast<uint32_t>(tokens.size());
  done.hash = hash;
  done.broken = false;
  return Status::ok();
}

Result<std::vector<Message>> Coordinator::exchange(
    std::unique_lock<std::mutex>& lock, const std::vector<Hop>& route,
    const std::vector<uint64_t>& incarnations,
    const std::function<std::vector<uint8_t>(const Hop&, uint64_t request)>& make) {
  Impl& im = *impl_;
  std::vector<uint64_t> requests;
  const auto forget = [&] {
    for (uint64_t r : requests) {
      im.expected.erase(r);
      im.arrived.erase(r);
    }
  };
  for (const Hop& hop : route) {
    const uint64_t request = im.next_request++;
    im.expected.insert(request);
    requests.push_back(request);
    lock.unlock();  // making and sending a shard takes a while; answers are filed meanwhile
    const bool sent = push(hop.endpoint, make(hop, request));
    lock.lock();
    if (!sent) {
      forget();
      return Status::unavailable("the worker at %s took nothing", hop.endpoint.c_str());
    }
  }
  std::vector<Message> answers;
  for (uint64_t r : requests) {
    Result<Message> m = await(lock, r, incarnations, route);
    if (!m.is_ok()) {
      forget();
      return m.status();
    }
    answers.push_back(std::move(m).value());
  }
  return answers;
}

}  // namespace ds4::dist
