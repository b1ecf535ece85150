// apps/common/dist_options.h: the distributed-inference options (features.md §10.2), declared once
// for ds4, ds4-bench, ds4-server and ds4-agent, their validation, and the two roles' start-up:
// a coordinator (the engine's first layers, with a dist::Coordinator as its tail, waiting for a
// full route) and a worker (`ds4 --role worker`: its slice served until SIGINT or SIGTERM).
// Owns: the flags' names, defaults and checks; endpoint syntax ("HOST:PORT" or "tcp://HOST:PORT");
// refusing a listen address beyond loopback (no CURVE keys yet).
// Does not own: the coordinator and worker themselves (src/dist), what a program does with its
// engine once the route is up.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "apps/common/run_options.h"
#include "ds4/engine.h"

namespace ds4::app {

struct DistOptions {
  std::string role = "none";  // none, coordinator or worker
  std::string layers;         // "A:B" or "A:output"
  std::string listen;         // coordinator: its control address; worker: its data address
  std::string coordinator;    // worker: the coordinator's address
  int activation_bits = 32;   // hidden states on the wire: 32 (f32) or 16 (f16)
  int prefill_window = 0;     // prefill chunks in flight (0: the route's hops + 2, within [2, 8])
  double route_wait_s = 60;   // how long a request waits for a full route
  std::string key_file;       // the cluster key (CURVE on every socket); needed beyond loopback
  std::string keygen;         // ds4 --dist-keygen FILE: write a new cluster key and exit
};

// The roles a program takes (a bit set).
enum DistRole : unsigned { kDistCoordinator = 1u << 0, kDistWorker = 1u << 1 };

class DistFlags {
 public:
  DistFlags(CLI::App& app, DistOptions& o, unsigned roles);
  DistFlags(const DistFlags&) = delete;
  DistFlags& operator=(const DistFlags&) = delete;

  // After app.parse(): the checks of features.md §10.2 that need no model. Returns a usage
  // error's text, or "" when all is well.
  std::string finish();

 private:
  DistOptions& o_;
  unsigned roles_;
  CLI::Option* layers_ = nullptr;
  CLI::Option* listen_ = nullptr;
  CLI::Option* coordinator_ = nullptr;
  CLI::Option* bits_ = nullptr;
  CLI::Option* window_ = nullptr;
  CLI::Option* key_ = nullptr;
};

// "tcp://HOST:PORT" from "HOST:PORT" or "tcp://HOST:PORT"; an error for anything else, or for a
// HOST other than loopback when `listening` without a cluster key (`keyed`).
Result<std::string> dist_endpoint(const std::string& text, bool listening, bool keyed);

// --dist-keygen: writes the key file and returns the exit code; nullopt when not asked for.
std::optional<int> run_keygen(const DistOptions& o, const char* program);

// Engine::open(eo), and in the coordinator role first the coordinator: the control address bound,
// `eo` narrowed to the coordinator's layers with the coordinator as its tail; then registrations
// taken and a full route waited for ("waiting for distributed route: ..." on stderr every second).
// Errors: the engine's; kUnavailable when the route is not complete within --dist-route-wait.
Result<std::unique_ptr<Engine>> open_engine(EngineOptions eo, const DistOptions& o, int ctx);

// The worker role, the whole program: opens the slice of `run.model`, registers with the
// coordinator and serves until SIGINT or SIGTERM. Returns the exit code (2: usage, 1: failure).
int run_worker(const DistOptions& o, const RunOptions& run, const char* program);

}  // namespace ds4::app
