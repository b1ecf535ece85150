// apps/common/dist_options.cpp: the distributed flags, their checks and the roles' start-up.
#include "apps/common/dist_options.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "dist/build_id.h"
#include "dist/route.h"
#if DS4_HAVE_ZMQ
#include "dist/coordinator.h"
#include "dist/curve.h"
#include "dist/slice_worker.h"
#endif

namespace ds4::app {
DistFlags::DistFlags(CLI::App& app, DistOptions& o, unsigned roles) : o_(o), roles_(roles) {
  const bool worker = (roles & kDistWorker) != 0;
  app.add_option("--role", o.role,
                 worker ? "distributed role: coordinator (layers from 0, tokenizing and sampling) "
                          "or worker (a later slice)"
                        : "distributed role: coordinator (layers from 0; workers are started with "
                          "`ds4 --role worker`)")
      ->check(CLI::IsMember(worker ? std::vector<std::string>{"none", "coordinator", "worker"}
                                   : std::vector<std::string>{"none", "coordinator"}))
      ->capture_default_str();
  layers_ = app.add_option("--layers", o.layers,
                           "this process's layers with a role: A:B or A:output (inclusive)");
  listen_ = app.add_option("--listen", o.listen,
                           "coordinator: the address workers register at (HOST:PORT, required); "
                           "worker: its data address (default 127.0.0.1, any free port)");
  if (worker) {
    coordinator_ =
        app.add_option("--coordinator", o.coordinator, "worker: the coordinator's HOST:PORT");
  }
  bits_ = app.add_option("--dist-activation-bits", o.activation_bits,
                         "coordinator: hidden states on the wire as 32-bit or 16-bit floats")
              ->check(CLI::IsMember({32, 16}))
              ->capture_default_str();
  window_ = app.add_option("--dist-prefill-window", o.prefill_window,
                           "coordinator: prefill chunks in flight (0: the route's hops + 2, "
                           "within 2..8)")
                ->check(CLI::Range(0, 64))
                ->capture_default_str();
  key_ = app.add_option("--dist-key", o.key_file,
                        "cluster key file (ds4 --dist-keygen): CURVE authentication and "
                        "encryption on every distributed socket; needed to listen beyond loopback")
             ->option_text("FILE");
  if (worker) {
    app.add_option("--dist-keygen", o.keygen, "write a new cluster key for --dist-key and exit")
        ->option_text("FILE");
  }
  app.add_option("--dist-route-wait", o.route_wait_s,
                 "coordinator: seconds a request waits for a full route of workers")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
}

std::string DistFlags::finish() {
  const bool any = layers_->count() > 0 || listen_->count() > 0 ||
                   (coordinator_ != nullptr && coordinator_->count() > 0) || bits_->count() > 0 ||
                   window_->count() > 0 || key_->count() > 0;
  if (o_.role == "none") {
    return any ? "the distributed options need --role coordinator or --role worker" : "";
  }
  if (o_.layers.empty()) return "--role " + o_.role + " needs --layers A:B or A:output";
  auto slice = parse_layer_slice(o_.layers);
  if (!slice.is_ok()) return slice.status().message();
  if (o_.role == "coordinator") {
    if (slice->first != 0) return "the coordinator's --layers start at 0";
    if (slice->output) {
      return "a coordinator with every layer and the head needs no workers: drop --role, or "
             "leave the later layers to workers (--layers 0:B)";
    }
    if (coordinator_ != nullptr && coordinator_->count() > 0) {
      return "--coordinator is a worker's option (a coordinator takes --listen)";
    }
    if (o_.listen.empty()) return "--role coordinator needs --listen HOST:PORT";
    if (auto e = dist_endpoint(o_.listen, true, !o_.key_file.empty()); !e.is_ok())
      return e.status().message();
    return "";
  }
  if (slice->first == 0) return "a worker's --layers start after 0 (layer 0 is the coordinator's)";
  if (o_.coordinator.empty()) return "--role worker needs --coordinator HOST:PORT";
  if (bits_->count() > 0 || window_->count() > 0) {
    return "--dist-activation-bits and --dist-prefill-window are the coordinator's options";
  }
  if (auto e = dist_endpoint(o_.coordinator, false, true); !e.is_ok()) return e.status().message();
  if (!o_.listen.empty()) {
    if (auto e = dist_endpoint(o_.listen, true, !o_.key_file.empty()); !e.is_ok())
      return e.status().message();
  }
  return "";
}

Result<std::string> dist_endpoint(const std::string& text, bool listening, bool keyed) {
  std::string rest = text.rfind("tcp://", 0) == 0 ? text.substr(6) : text;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status::invalid_argument("address '%s': expected HOST:PORT", text.c_str());
  }
  const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoi(port) > 65535) {
    return Status::invalid_argument("address '%s': the port is not a number of 0..65535",
                                    text.c_str());
  }
  if (listening && !keyed && !dist::is_loopback_endpoint(host + ":" + port)) {
    return Status::invalid_argument(
        "address '%s': listening beyond loopback needs a cluster key (--dist-key FILE, written by "
        "ds4 --dist-keygen FILE): CURVE authentication and encryption",
        text.c_str());
  }
  return "tcp://" + host + ":" + port;
}

namespace {

// Engine::open, and the line features.md §8.2 has every program print when steering is on.
Result<std::unique_ptr<Engine>> open_local(const EngineOptions& eo) {
  DS4_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::open(eo));
  if (engine->info().steering) {
    std::fprintf(stderr, "ds4: directional steering enabled: %s attn=%g ffn=%g\n",
                 eo.steering_file.c_str(), static_cast<double>(eo.steering.attn),
                 static_cast<double>(eo.steering.ffn));
  }
  return engine;
}

}  // namespace

#if DS4_HAVE_ZMQ

namespace {

// --dist-key's cluster key, or none without the flag.
Result<std::shared_ptr<const dist::ClusterKey>> cluster_key(const DistOptions& o) {
  if (o.key_file.empty()) return std::shared_ptr<const dist::ClusterKey>();
  DS4_ASSIGN_OR_RETURN(dist::ClusterKey k, dist::load_cluster_key(o.key_file));
  return std::make_shared<const dist::ClusterKey>(k);
}

}  // namespace

Result<std::unique_ptr<Engine>> open_engine(EngineOptions eo, const DistOptions& o, int ctx) {
  if (o.role != "coordinator") return open_local(eo);
  DS4_ASSIGN_OR_RETURN(std::string listen, dist_endpoint(o.listen, true, !o.key_file.empty()));
  DS4_ASSIGN_OR_RETURN(std::shared_ptr<const dist::ClusterKey> key, cluster_key(o));
  DS4_ASSIGN_OR_RETURN(eo.layers, parse_layer_slice(o.layers));
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(o.route_wait_s * 1000));
  DS4_ASSIGN_OR_RETURN(
      std::shared_ptr<dist::Coordinator> c,
      dist::Coordinator::open(
          {.listen = listen,
           .key = key,
           .bits = o.activation_bits == 16 ? dist::HiddenBits::kF16 : dist::HiddenBits::kF32,
           .window = o.prefill_window,
           .route_timeout = wait,
           .log = [](const std::string& s) { std::fprintf(stderr, "ds4 %s\n", s.c_str()); }}));
  eo.tail = c;
  DS4_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_local(eo));
  std::fprintf(stderr, "ds4 coordinator: layers %s, workers register at %s\n", o.layers.c_str(),
               c->endpoint().c_str());
  DS4_TRY(c->start(dist::hello_of(engine->info(), dist::build_id(), ctx)));
  DS4_TRY(c->wait_for_route(wait, [](const Status& why) {
    std::fprintf(stderr, "ds4: waiting for distributed route: %s\n", why.message().c_str());
  }));
  std::fprintf(stderr, "ds4 coordinator: route %s\n", c->describe_route().c_str());
  return engine;
}

int run_worker(const DistOptions& o, const RunOptions& run, const char* program) {
  // SIGINT and SIGTERM stop the worker: blocked here, before any thread starts, and taken by a
  // watcher thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto coordinator = dist_endpoint(o.coordinator, false, true);
  auto listen =
      dist_endpoint(o.listen.empty() ? "127.0.0.1:0" : o.listen, true, !o.key_file.empty());
  auto slice = parse_layer_slice(o.layers);
  auto key = cluster_key(o);
  for (const Status& st : {coordinator.status(), listen.status(), slice.status(), key.status()}) {
    if (!st.is_ok()) {
      std::fprintf(stderr, "%s: %s\n", program, st.message().c_str());
      return 2;
    }
  }
  EngineOptions eo = engine_options(run);
  eo.layers = *slice;
  auto engine = Engine::open(eo);
  if (!engine.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program, engine.status().message().c_str());
    return 2;
  }
  auto worker =
      dist::SliceWorker::open(**engine, {.coordinator = *coordinator,
                                         .listen = *listen,
                                         .key = *key,
                                         .build = std::string(dist::build_id()),
                                         .n_ctx = run.ctx,
                                         .prefill_chunk = run.prefill_chunk,
                                         .log = [program](const std::string& s) {
                                           std::fprintf(stderr, "%s %s\n", program, s.c_str());
                                         }});
  if (!worker.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program, worker.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s worker: layers %s on %s, registering with %s\n", program,
               o.layers.c_str(), (*worker)->endpoint().c_str(), coordinator->c_str());
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    const timespec tick{0, 100'000'000};
    while (!done.load()) {
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) (*worker)->stop();
    }
  });
  const Status st = (*worker)->serve();
  done.store(true);
  watcher.join();
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program, st.message().c_str());
    return 1;
  }
  return 0;
}

std::optional<int> run_keygen(const DistOptions& o, const char* program) {
  if (o.keygen.empty()) return std::nullopt;
  if (const Status st = dist::write_cluster_key(o.keygen); !st.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program, st.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: wrote the cluster key %s (mode 600): copy it to every host\n", program,
               o.keygen.c_str());
  return 0;
}

#else  // a build without ZeroMQ: the flags parse, the roles refuse

Result<std::unique_ptr<Engine>> open_engine(EngineOptions eo, const DistOptions& o, int) {
  if (o.role != "coordinator") return open_local(eo);
  return Status::invalid_argument("this build has no ZeroMQ (libzmq3-dev, cppzmq-dev): no --role");
}

std::optional<int> run_keygen(const DistOptions& o, const char* program) {
  if (o.keygen.empty()) return std::nullopt;
  std::fprintf(stderr, "%s: this build has no ZeroMQ (libzmq3-dev, cppzmq-dev): no keys\n",
               program);
  return 2;
}

int run_worker(const DistOptions&, const RunOptions&, const char* program) {
  std::fprintf(stderr, "%s: this build has no ZeroMQ (libzmq3-dev, cppzmq-dev): no --role\n",
               program);
  return 2;
}

#endif

}  // namespace ds4::app
