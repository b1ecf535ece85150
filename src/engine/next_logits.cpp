// src/engine/next_logits.cpp: see next_logits.h.
#include "engine/next_logits.h"

#include "base/check.h"

namespace ds4 {

void NextLogits::take(backend::Act row, bool wait) {
  DS4_CHECK(row.rows == 1);
  if (!backend_->picks_tokens()) {  // the host draws: the copy it reads, at once
    host_.resize(static_cast<size_t>(row.cols));
    backend_->download(row, host_.data());
    where_ = Where::kHost;
    return;
  }
  if (!row_ || row_->size() != row.cols) {
    row_ = backend_->alloc(row.cols);
    act_ = row_->view(1, row.cols);
  }
  backend_->copy(row, act_);
  // Returns with the pass done, as the download did: callers time steps and pace by them.
  if (wait) backend_->wait_idle();
  where_ = Where::kDevice;
}

void NextLogits::assign(std::span<const float> host) {
  host_.assign(host.begin(), host.end());
  where_ = host_.empty() ? Where::kNone : Where::kHost;
}

void NextLogits::assign(std::vector<float>&& host) {
  host_ = std::move(host);
  where_ = host_.empty() ? Where::kNone : Where::kHost;
}

std::span<const float> NextLogits::host() const {
  if (where_ == Where::kNone) return {};
  if (where_ == Where::kDevice) {
    host_.resize(static_cast<size_t>(act_.cols));
    backend_->download(act_, host_.data());
    where_ = Where::kBoth;
  }
  return host_;
}

}  // namespace ds4
