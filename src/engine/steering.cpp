// src/engine/steering.cpp: directional steering's direction file and scales (features.md §8;
// EngineOptions::steering_file, Session::set_steering).
#include "engine/steering.h"

#include <cmath>
#include <cstring>

#include "base/read_file.h"
#include "engine/session_impl.h"

namespace ds4 {

Status check_steering(const Steering& s, bool has_file) {
  for (const auto& [name, v] : {std::pair{"attn", s.attn}, std::pair{"ffn", s.ffn}}) {
    if (!std::isfinite(v) || std::fabs(v) > Steering::kMaxScale) {
      return Status::invalid_argument(
          "steering scale %s=%g is outside [-%g, %g]", name, static_cast<double>(v),
          static_cast<double>(Steering::kMaxScale), static_cast<double>(Steering::kMaxScale));
    }
  }
  if (s.active() && !has_file) {
    return Status::invalid_argument(
        "a steering scale (attn=%g, ffn=%g) needs a direction file (--dir-steering-file)",
        static_cast<double>(s.attn), static_cast<double>(s.ffn));
  }
  return Status::ok();
}

Status check_session_steering(const Engine::Impl& e, const Steering& s) {
  DS4_TRY(check_steering(s, e.info.steering));
  if (e.tail && s != e.options.steering) {
    return Status::invalid_argument(
        "a session's own steering scales do not reach the workers of a distributed engine (give "
        "every process the same --dir-steering-* flags)");
  }
  return Status::ok();
}

Status load_steering(Engine::Impl& e, const std::string& path) {
  const auto n_layer = static_cast<size_t>(e.shape.n_layer);
  const auto n_embd = static_cast<size_t>(e.shape.n_embd);
  const size_t want = n_layer * n_embd * sizeof(float);
  DS4_ASSIGN_OR_RETURN(const std::string bytes, base::read_file(path));
  if (bytes.size() != want) {
    return Status::invalid_file(
        "steering file '%s' is %zu bytes; this model (%zu layers x %zu) needs exactly %zu "
        "(float32, one direction per layer)",
        path.c_str(), bytes.size(), n_layer, n_embd, want);
  }
  e.steering_host.resize(n_layer * n_embd);
  std::memcpy(e.steering_host.data(), bytes.data(), want);
  for (size_t i = 0; i < e.steering_host.size(); ++i) {
    if (!std::isfinite(e.steering_host[i])) {
      return Status::invalid_file("steering file '%s': layer %zu holds a value that is not finite",
                                  path.c_str(), i / n_embd);
    }
  }
  e.weights.steering.clear();
  for (size_t il = 0; il < n_layer; ++il) {
    backend::Weight host;
    host.data = e.steering_host.data() + il * n_embd;
    host.type = gguf::GgufType::kF32;
    host.ne = {static_cast<int64_t>(n_embd), 1, 1};
    DS4_ASSIGN_OR_RETURN(backend::Weight bound, e.backend->upload(host));
    e.weights.steering.push_back(bound);
  }
  return Status::ok();
}

backend::RowTag Session::Impl::tag(int32_t pos, TokenId token) const {
  return {.seq = seq,
          .pos = pos,
          .token = token,
          .steer_attn = steering.attn,
          .steer_ffn = steering.ffn};
}

Status Session::set_steering(const Steering& steering) {
  DS4_TRY(check_session_steering(*impl_->engine, steering));
  impl_->steering = steering;
  return Status::ok();
}

Steering Session::steering() const { return impl_->steering; }

}  // namespace ds4
