// src/base/ready_bytes.h: how much of a buffer one thread has finished writing, for another
// thread that consumes it in order meanwhile (issue 55 item 4: a session's save writes the
// payload's first pieces to its file while the device is still copying the next ones).
// Owns: the count of final leading bytes and the producer's verdict; fill_beside, the one way a
// producer on the calling thread and a consumer on a helper run side by side. Does not own: the
// buffer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

#include "ds4/status.h"

namespace ds4::base {

class ReadyBytes {
 public:
  // A buffer of `total` bytes, none final yet.
  explicit ReadyBytes(size_t total) : total_(total) {}
  ReadyBytes(const ReadyBytes&) = delete;
  ReadyBytes& operator=(const ReadyBytes&) = delete;

  size_t total() const { return total_; }
  // The producer: the first n bytes are final (n only grows; a smaller n is ignored, a larger
  // one than total() is total()).
  void publish(size_t n);
  // The producer succeeded: every byte is final. The first verdict stands (a later fail() or
  // finish() is ignored).
  void finish();
  // The producer gave up: waiters return false from now on, whatever was published.
  void fail();
  // The consumer: blocks until the first `end` bytes are final (true) or the producer failed
  // (false). `end` beyond total() waits for the whole buffer.
  bool wait(size_t end) const;
  // The consumer: blocks until the producer's verdict: true once it finished, false once it
  // failed (every byte published does not make a success: a producer may fail after its last).
  bool wait_finished() const;

 private:
  const size_t total_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  size_t ready_ = 0;       // guarded by mu_
  bool finished_ = false;  // guarded by mu_
  bool failed_ = false;    // guarded by mu_
};

// Fills a buffer, telling `publish` how many leading bytes are final so far (a count that only
// grows): Session::save_to.
using FillBytes = std::function<Status(const std::function<void(size_t)>& publish)>;

// Runs `consume` on a helper thread while `fill` runs on the calling thread, fill's publish(n)
// going to `ready` and its end to ready.finish() (ok) or ready.fail() (an error, or an exception:
// rethrown once the helper is joined, as is one from `consume`). Returns fill's error first, else
// consume's. A consumer that must not commit a failed fill's bytes asks ready.wait_finished().
Status fill_beside(ReadyBytes& ready, const FillBytes& fill,
                   const std::function<Status()>& consume);

}  // namespace ds4::base
