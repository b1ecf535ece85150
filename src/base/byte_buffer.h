// src/base/byte_buffer.h: a large byte buffer whose first touch is cheap (issue 55 item 4: a
// session's 420 MB state saved and loaded at memory speed). A std::vector<uint8_t> of that size
// writes zeros over every byte before anyone reads it, on 4 KiB pages: ~100k page faults, then a
// pass the next copy overwrites. This buffer is left uninitialised and, from kHugeBytes up, is
// 2 MiB-aligned anonymous memory advised for transparent huge pages (MADV_HUGEPAGE: 512x fewer
// faults where the kernel's THP mode is "madvise" or "always"; plain pages elsewhere).
// Owns: its memory (move-only). Does not own: what is written into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ds4::base {

// Advises transparent huge pages for the whole 2 MiB pages inside [p, p + n) (memory not yet
// touched, such as a large vector's fresh reserve(): its first touch then faults 2 MiB at a time).
// Advice only: nothing happens for smaller ranges or where the kernel has no THP.
void advise_huge_pages(void* p, size_t n);

class ByteBuffer {
 public:
  // Buffers this large or larger are mapped with huge pages advised.
  static constexpr size_t kHugeBytes = size_t{2} << 20;

  ByteBuffer() = default;
  // `n` bytes, not initialised. Throws std::bad_alloc when the memory cannot be had.
  explicit ByteBuffer(size_t n);
  ~ByteBuffer();
  ByteBuffer(ByteBuffer&& o) noexcept;
  ByteBuffer& operator=(ByteBuffer&& o) noexcept;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  // Bytes the buffer can hold without a new allocation (>= size()).
  size_t capacity() const { return capacity_; }
  // Makes the buffer `n` bytes long if it can hold them (its bytes are kept), for reusing one
  // buffer across payloads of varying size: its pages are already faulted in. False (nothing
  // changed) when n > capacity().
  bool resize_within(size_t n);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_, size_}; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_ = 0;  // bytes mapped at data_ (0: allocated with new[])
};

}  // namespace ds4::base
