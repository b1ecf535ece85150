// src/base/ready_bytes.h: how much of a buffer one thread has finished writing, for another
// thread that consumes it in order meanwhile (issue 55 item 4: a session's save writes the
// payload's first pieces to its file while the device is still copying the next ones).
// Owns: the count of final leading bytes and the producer's verdict. Does not own: the buffer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

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
  // The producer gave up: waiters return false from now on, whatever was published.
  void fail();
  // The consumer: blocks until the first `end` bytes are final (true) or the producer failed
  // (false). `end` beyond total() waits for the whole buffer.
  bool wait(size_t end) const;

 private:
  const size_t total_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  size_t ready_ = 0;     // guarded by mu_
  bool failed_ = false;  // guarded by mu_
};

}  // namespace ds4::base
