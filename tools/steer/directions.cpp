// tools/steer/directions.cpp: `ds4-steer build` (see directions.h).
#include "tools/steer/directions.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/read_file.h"
#include "ds4/chat.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"

namespace ds4::steer {
namespace {

// Keeps each layer's row of the last position reported for one sublayer: after a prompt's
// prefill, the rows of its last token. Sized by shape() once the engine that reports is open.
class LastRows : public Observer {
 public:
  explicit LastRows(Sublayer which) : which_(which) {}
  void shape(int n_layer, int64_t n_embd) {
    n_embd_ = n_embd;
    rows_.assign(static_cast<size_t>(n_layer * n_embd), 0.0f);
  }
  void on_sublayer_outputs(const SublayerOutputs& o) override {
    if (o.sublayer != which_ || o.rows == 0 || o.n_embd != n_embd_) return;
    const float* last = o.values.data() + (o.rows - 1) * o.n_embd;
    std::copy(last, last + o.n_embd, rows_.begin() + o.layer * n_embd_);
  }
  const std::vector<float>& rows() const { return rows_; }

 private:
  Sublayer which_;
  int64_t n_embd_ = 0;
  std::vector<float> rows_;
};

double norm_of(const double* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

void normalise(double* v, int64_t n) {
  const double s = norm_of(v, n);
  if (s > 0)
    for (int64_t i = 0; i < n; ++i) v[i] /= s;
}

std::string metadata_path_of(const std::string& output) {
  std::filesystem::path p(output);
  if (p.extension() == ".f32") p.replace_extension();
  return p.string() + ".json";
}

}  // namespace

Result<std::vector<std::string>> read_prompts(const std::string& path) {
  DS4_ASSIGN_OR_RETURN(const std::string text, base::read_file(path));
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    out.push_back(line);
  }
  if (out.empty()) return Status::invalid_argument("'%s' holds no prompt", path.c_str());
  return out;
}

std::vector<float> directions(const std::vector<std::vector<float>>& good,
                              const std::vector<std::vector<float>>& bad, int n_layer,
                              int64_t n_embd, bool pair_normalize, bool orthogonalize) {
  std::vector<float> out(static_cast<size_t>(n_layer * n_embd), 0.0f);
  const size_t n = std::min(good.size(), bad.size());
  std::vector<double> d(static_cast<size_t>(n_embd)), pair(static_cast<size_t>(n_embd)),
      control(static_cast<size_t>(n_embd));
  for (int il = 0; il < n_layer; ++il) {
    std::fill(d.begin(), d.end(), 0.0);
    std::fill(control.begin(), control.end(), 0.0);
    const int64_t at = il * n_embd;
    for (size_t p = 0; p < n; ++p) {
      for (int64_t i = 0; i < n_embd; ++i) {
        pair[size_t(i)] = double{good[p][size_t(at + i)]} - bad[p][size_t(at + i)];
        control[size_t(i)] += bad[p][size_t(at + i)];
      }
      if (pair_normalize) normalise(pair.data(), n_embd);
      for (int64_t i = 0; i < n_embd; ++i) d[size_t(i)] += pair[size_t(i)];
    }
    for (double& v : d) v /= static_cast<double>(n);
    if (orthogonalize) {
      normalise(control.data(), n_embd);
      double along = 0;
      for (int64_t i = 0; i < n_embd; ++i) along += d[size_t(i)] * control[size_t(i)];
      for (int64_t i = 0; i < n_embd; ++i) d[size_t(i)] -= along * control[size_t(i)];
    }
    normalise(d.data(), n_embd);
    for (int64_t i = 0; i < n_embd; ++i) out[size_t(at + i)] = static_cast<float>(d[size_t(i)]);
  }
  return out;
}

Status build(const BuildOptions& o, BuildReport* report) {
  DS4_ASSIGN_OR_RETURN(std::vector<std::string> good, read_prompts(o.good_file));
  DS4_ASSIGN_OR_RETURN(std::vector<std::string> bad, read_prompts(o.bad_file));
  const size_t n = std::min(good.size(), bad.size());
  good.resize(n);
  bad.resize(n);
  DS4_ASSIGN_OR_RETURN(const Tokenizer tok, Tokenizer::open(o.model));
  EngineOptions eo;
  eo.model_path = o.model;
  eo.threads = o.threads;
  eo.backend = o.backend;
  LastRows capture(o.component);
  eo.observer = &capture;
  DS4_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::open(eo));
  const int n_layer = engine->info().n_layer;
  const int64_t n_embd = engine->info().n_embd;
  capture.shape(n_layer, n_embd);  // before the first pass reports
  const chat::RenderOptions ro{.think = o.think ? chat::ThinkMode::kHigh : chat::ThinkMode::kNone,
                               .context_size = o.ctx};
  auto run_set = [&](const std::vector<std::string>& prompts, const char* which,
                     std::vector<std::vector<float>>* rows) -> Status {
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::vector<chat::Message> msgs;
      if (!o.system.empty()) msgs.push_back({.role = chat::Role::kSystem, .content = o.system});
      msgs.push_back({.role = chat::Role::kUser, .content = prompts[i]});
      DS4_ASSIGN_OR_RETURN(const std::string text, chat::render(msgs, ro));
      const std::vector<TokenId> ids = tok.encode(text, SpecialTokens::kRecognize);
      if (static_cast<int>(ids.size()) >= o.ctx) {
        return Status::invalid_argument("%s prompt %zu is %zu tokens, more than --ctx %d allows",
                                        which, i + 1, ids.size(), o.ctx);
      }
      DS4_ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
                           engine->create_session({.n_ctx = o.ctx, .prefill_chunk = o.ctx}));
      DS4_TRY(s->sync(ids).status());
      rows->push_back(capture.rows());
      if (o.progress) std::fprintf(stderr, "ds4-steer: %s %zu/%zu\n", which, i + 1, prompts.size());
    }
    return Status::ok();
  };
  std::vector<std::vector<float>> good_rows, bad_rows;
  DS4_TRY(run_set(good, "target", &good_rows));
  DS4_TRY(run_set(bad, "contrast", &bad_rows));
  const std::vector<float> dirs =
      directions(good_rows, bad_rows, n_layer, n_embd, o.pair_normalize, o.orthogonalize);
  DS4_TRY(base::write_file(o.output, dirs.data(), dirs.size() * sizeof(float)));
  const nlohmann::json meta = {
      {"format", "ds4-directional-steering-v1"},
      {"shape", {n_layer, n_embd}},
      {"component", o.component == Sublayer::kFfn ? "ffn_out" : "attn_out"},
      {"thinking", o.think},
      {"pair_normalize", o.pair_normalize},
      {"orthogonalize_control_mean", o.orthogonalize},
      {"good_file", o.good_file},
      {"bad_file", o.bad_file},
      {"pairs", n},
      {"model", o.model},
      {"note",
       "built by ds4-steer build: per layer the normalised difference of the target "
       "prompts' mean output at their last token from the contrast prompts'"}};
  const std::string meta_path = metadata_path_of(o.output);
  const std::string meta_text = meta.dump(2) + "\n";
  DS4_TRY(base::write_file(meta_path, meta_text.data(), meta_text.size()));
  if (report != nullptr) *report = {static_cast<int>(n), n_layer, n_embd, meta_path};
  return Status::ok();
}

}  // namespace ds4::steer
