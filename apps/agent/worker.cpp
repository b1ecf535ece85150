// apps/agent/worker.cpp: the worker thread: the session, its turns and its commands.
#include "worker.h"

#include <chrono>
#include <ctime>
#include <functional>
#include <thread>

#include "agent/history.h"
#include "base/byte_buffer.h"

namespace ds4::agent_app {
namespace {

// A saved session is shown by the first 8 digits of its id.
constexpr size_t kShortId = 8;
// The user turns /switch shows of the session it resumes.
constexpr int kSwitchShownTurns = 3;
// A session file may hold at most its KV state at the largest context plus this much text.
constexpr uint64_t kSessionTextAllowance = uint64_t{1} << 30;

std::string short_id(std::string_view id) { return std::string(id.substr(0, kShortId)); }

std::string age(uint64_t then, uint64_t now) {
  const uint64_t s = now > then ? now - then : 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

std::string turns_text(const std::vector<agent::HistoryTurn>& turns) {
  std::string out;
  for (const agent::HistoryTurn& t : turns) {
    if (t.summary) {
      out += "[compacted summary]\n" + t.answer + "\n";
      continue;
    }
    out += "> " + t.user + "\n";
    if (t.tool_rounds > 0) out += "(" + std::to_string(t.tool_rounds) + " tool rounds)\n";
    if (!t.answer.empty()) out += t.answer + "\n";
  }
  return out;
}

uint64_t now_seconds() { return static_cast<uint64_t>(std::time(nullptr)); }

}  // namespace

Worker::Worker(Engine& engine, const Tokenizer& tok, const AgentOptions& o, Inbox& inbox,
               Frontend& fe)
    : engine_(engine), tok_(tok), o_(o), inbox_(inbox), fe_(fe) {}

Worker::~Worker() = default;

void Worker::forget_identity() {
  title_.clear();
  created_ = 0;
  dirty_ = false;
}

std::string Worker::id() const {
  return created_ == 0 ? std::string() : agent::session_id(title_, created_);
}

Status Worker::start() {
  DS4_ASSIGN_OR_RETURN(session_, engine_.create_session(app::session_options(o_.run)));
  tools_ = std::make_unique<agent::ToolContext>(agent::ToolContextOptions{.workdir = "."});
  tools_->cancel = [this] { return interrupt_.load(); };
  agent::TurnLoopOptions lo{.mode = {.think = chat::effective_think_mode(o_.run.think, o_.run.ctx),
                                     .context_size = o_.run.ctx},
                            .sampling = o_.run.sampling,
                            .drafting = app::drafting(o_.run),
                            .max_round_tokens = o_.n_predict,
                            .extra_system = o_.system,
                            .prefill_piece = o_.run.prefill_chunk,
                            .interrupt = &interrupt_,
                            .scripted_rounds = o_.scripted};
  loop_ = std::make_unique<agent::TurnLoop>(
      *session_, tok_, *tools_, std::move(lo), fe_,
      [this](const agent::ToolCall& call, std::string_view reason) {
        return fe_.approve(call, reason);
      },
      [this] { return inbox_.take_prompts(); });
  fe_.attach(loop_.get(), session_->n_ctx());
  const ModelInfo& info = engine_.info();
  agent::SessionStore::Options so{
      .dir = o_.kv_dir.empty() ? agent::default_session_dir() : o_.kv_dir,
      .model = {.fingerprint = info.fingerprint,
                .quant_bits = static_cast<uint8_t>(info.expert_bits),
                .model = info.shape == "pro" ? kv::KvcModel::kPro : kv::KvcModel::kFlash},
      .max_file_bytes = engine_.session_bytes(info.n_ctx_max) + kSessionTextAllowance};
  if (o_.test_save_pause_ms > 0) {
    // Test hook: a save stops halfway through its file for a while (a test kills it there).
    so.write_hook = [ms = o_.test_save_pause_ms, paused = false](size_t written,
                                                                 size_t total) mutable {
      if (paused || written < total / 2) return;
      paused = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
  }
  if (auto store = agent::SessionStore::open(std::move(so)); store.is_ok()) {
    store_.emplace(std::move(store).value());
  } else {
    fe_.problem("sessions cannot be saved: " + store.status().message(), false);
  }
  DS4_TRY(start_system());
  fe_.ready(loop_->from_checkpoint());
  publish_sessions();
  return Status::ok();
}

// The system prompt: from sysprompt.kv when it holds exactly these tokens, else evaluated and
// saved there for the next start.
Status Worker::start_system() {
  DS4_TRY(loop_->render_system());
  const std::vector<TokenId>& system = loop_->system_tokens();
  const std::string text = tok_.decode(system);
  std::vector<uint8_t> checkpoint;
  if (store_) {
    auto loaded = store_->load_system(text, static_cast<uint32_t>(session_->n_ctx()));
    if (loaded.is_ok()) {
      checkpoint = std::move(loaded).value();
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      fe_.problem(loaded.status().message() + " (evaluating the system prompt instead)", false);
    }
  }
  DS4_TRY(loop_->start(checkpoint));
  if (store_ && !loop_->from_checkpoint()) {
    const Status st =
        store_->save_system(text, static_cast<uint32_t>(system.size()),
                            static_cast<uint32_t>(session_->n_ctx()), loop_->system_checkpoint());
    if (!st.is_ok())
      fe_.problem("cannot save the system prompt checkpoint: " + st.message(), false);
  }
  return Status::ok();
}

int Worker::run() {
  if (Status st = start(); !st.is_ok()) {
    fe_.problem(st.message(), true);
    inbox_.fail();
    fe_.quit();
    return 1;
  }
  while (!quit_ && status_ == 0) {
    fe_.idle();
    std::optional<WorkItem> item = inbox_.next();
    if (!item) break;
    interrupt_.store(false);
    if (item->command) {
      command(*item->command);
    } else {
      turn(item->prompts);
    }
  }
  if (status_ == 0 && !quit_) offer_save();
  if (status_ != 0) inbox_.fail();
  fe_.quit();
  return status_;
}

void Worker::turn(const std::vector<std::string>& prompts) {
  const std::string text = agent::join_queued(prompts);
  if (created_ == 0) {
    title_ = agent::make_title(text);
    created_ = now_seconds();
  }
  dirty_ = true;
  Result<agent::TurnEnd> end = loop_->run_turn(text);
  if (!end.is_ok()) {
    fe_.problem(end.status().message(), !fe_.keep_going());
    if (!fe_.keep_going()) status_ = 1;
  }
}

void Worker::command(const agent::Command& c) {
  using agent::CommandKind;
  switch (c.kind) {
    case CommandKind::kSave: return save();
    case CommandKind::kCompact: return compact();
    case CommandKind::kList: return list();
    case CommandKind::kSwitch: return switch_to(c.arg);
    case CommandKind::kDel: return remove(c.arg);
    case CommandKind::kStrip: return strip(c.arg);
    case CommandKind::kHistory: return history(c.arg);
    case CommandKind::kNew: return new_session();
    case CommandKind::kThink: return set_think(true);
    case CommandKind::kNoThink: return set_think(false);
    case CommandKind::kHelp: return fe_.note(agent::help_text());
    case CommandKind::kPower: return fe_.note(app::power_command(engine_, c.arg));
    case CommandKind::kQuit:
      offer_save();
      quit_ = true;
      return;
    case CommandKind::kUnknown:
      return fe_.problem("unknown command " + c.name + " (see /help)", false);
  }
}

bool Worker::sessions_ok() {
  if (store_) return true;
  fe_.problem("sessions are not available (see the message at start)", false);
  return false;
}

void Worker::publish_sessions() {
  if (!store_) return;
  auto listed = store_->list();
  if (!listed.is_ok()) return;
  std::vector<std::string> ids;
  for (const agent::SessionInfo& s : *listed) ids.push_back(s.id);
  fe_.sessions(std::move(ids));
}

void Worker::save() {
  if (!sessions_ok()) return;
  if (created_ == 0) return fe_.note("nothing to save yet: the session has no turn");
  fe_.saving();
  Status st = loop_->flush();
  if (!st.is_ok()) return fe_.problem("save failed: " + st.message(), false);
  // The payload is written to the file while the session's export fills it (no zero fill, the
  // export's time behind the write).
  base::ByteBuffer payload(static_cast<size_t>(session_->save_bytes()));
  const std::vector<TokenId>& t = loop_->transcript();
  st = store_->save({.title = title_, .created = created_}, tok_.decode(t),
                    static_cast<uint32_t>(t.size()), static_cast<uint32_t>(session_->n_ctx()),
                    payload.span(), [&](const std::function<void(size_t)>& publish) {
                      return session_->save_to(payload.span(), publish);
                    });
  if (!st.is_ok()) return fe_.problem("save failed: " + st.message(), false);
  dirty_ = false;
  fe_.note("saved session " + short_id(id()) + " (" + std::to_string(t.size()) + " tokens)");
  publish_sessions();
}

void Worker::offer_save() {
  if (!dirty_ || !store_ || created_ == 0) return;
  if (fe_.confirm("save the current session " + short_id(id()) + " first?")) save();
}

void Worker::list() {
  if (!sessions_ok()) return;
  auto listed = store_->list();
  if (!listed.is_ok()) return fe_.problem(listed.status().message(), false);
  if (listed->empty()) return fe_.note("no saved sessions in " + store_->dir());
  const uint64_t now = now_seconds();
  std::string out;
  const std::string current = id();
  for (const agent::SessionInfo& s : *listed) {
    out += short_id(s.id) + (s.id == current ? " * " : " > ") + s.title + "\n";
    out += "         > " + age(s.last_used, now) + " ago, " + std::to_string(s.tokens) +
           " tokens, " + megabytes(s.file_bytes) + (s.stripped ? ", stripped" : "") + "\n";
  }
  out += "(/switch <id prefix> resumes one; Tab completes ids)";
  fe_.note(out);
}

void Worker::switch_to(const std::string& prefix) {
  if (!sessions_ok()) return;
  if (prefix.empty()) return fe_.problem("/switch needs a session id prefix (see /list)", false);
  auto resolved = store_->resolve(prefix);
  if (!resolved.is_ok()) return fe_.problem(resolved.status().message(), false);
  auto loaded = store_->load(*resolved);
  if (!loaded.is_ok()) return fe_.problem(loaded.status().message(), false);
  offer_save();
  const agent::LoadedSession& s = *loaded;
  bool rebuilt = false;
  if (!s.payload.empty()) {
    if (Status st = loop_->load(s.payload); !st.is_ok()) {
      forget_identity();
      return fe_.problem("cannot resume session " + short_id(s.info.id) + ": " + st.message() +
                             " (now at a new session)",
                         false);
    }
  } else {
    rebuilt = true;
    auto end = loop_->rebuild(tok_.encode(s.transcript, SpecialTokens::kRecognize));
    if (!end.is_ok() || *end == agent::TurnEnd::kInterrupted) {
      forget_identity();
      return fe_.problem(
          std::string("resuming session ") + short_id(s.info.id) + " " +
              (end.is_ok() ? "was interrupted" : "failed: " + end.status().message()) +
              " (now at a new session)",
          false);
    }
  }
  title_ = s.info.title;
  created_ = s.info.created;
  dirty_ = false;
  std::string out = "switched to session " + short_id(s.info.id) + " (" +
                    std::to_string(loop_->transcript().size()) + " tokens" +
                    (rebuilt ? ", rebuilt from text" : "") + ")\n";
  out += turns_text(agent::recent_turns(s.transcript, kSwitchShownTurns));
  fe_.note(out);
}

void Worker::remove(const std::string& prefix) {
  if (!sessions_ok()) return;
  auto resolved = store_->resolve(prefix);
  if (!resolved.is_ok()) return fe_.problem(resolved.status().message(), false);
  if (Status st = store_->remove(*resolved); !st.is_ok()) return fe_.problem(st.message(), false);
  if (*resolved == id()) dirty_ = true;  // still live here, no longer on disk
  fe_.note("deleted session " + short_id(*resolved));
  publish_sessions();
}

void Worker::strip(const std::string& prefix) {
  if (!sessions_ok()) return;
  auto resolved = store_->resolve(prefix);
  if (!resolved.is_ok()) return fe_.problem(resolved.status().message(), false);
  const Status st = store_->strip(*resolved, [this](std::string_view text) {
    return static_cast<uint32_t>(tok_.encode(text, SpecialTokens::kRecognize).size());
  });
  if (!st.is_ok()) return fe_.problem(st.message(), false);
  fe_.note("stripped session " + short_id(*resolved) + ": its text is kept, its KV is gone");
  publish_sessions();
}

void Worker::history(const std::string& arg) {
  int n = agent::kHistoryDefaultTurns;
  if (!arg.empty()) {
    char* end = nullptr;
    const long v = std::strtol(arg.c_str(), &end, 10);
    if (end == nullptr || *end != '\0' || v < 1 || v > agent::kHistoryMaxTurns) {
      return fe_.problem(
          "/history takes a number of turns from 1 to " + std::to_string(agent::kHistoryMaxTurns),
          false);
    }
    n = static_cast<int>(v);
  }
  const std::string text = turns_text(agent::recent_turns(tok_.decode(loop_->transcript()), n));
  fe_.note(text.empty() ? "no turns yet" : text);
}

void Worker::new_session() {
  offer_save();
  if (Status st = loop_->reset(); !st.is_ok()) return fe_.problem(st.message(), true);
  forget_identity();
  fe_.note("new session");
}

void Worker::compact() {
  Result<agent::TurnEnd> end = loop_->compact();
  if (!end.is_ok()) return fe_.problem("compaction failed: " + end.status().message(), false);
  if (*end == agent::TurnEnd::kDone) dirty_ = true;
}

void Worker::set_think(bool on) {
  const chat::ThinkMode mode =
      on ? chat::effective_think_mode(
               o_.run.think == chat::ThinkMode::kNone ? chat::ThinkMode::kHigh : o_.run.think,
               o_.run.ctx)
         : chat::ThinkMode::kNone;
  loop_->set_think(mode);
  fe_.note(on ? "thinking on (from the next turn)" : "thinking off (from the next turn)");
}

}  // namespace ds4::agent_app
