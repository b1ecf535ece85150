// src/base/byte_buffer.cpp: see byte_buffer.h.
#include "base/byte_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace ds4::base {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void advise_huge_pages(void* p, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = round_up(begin, kHugePage);
  const uintptr_t last = (begin + n) / kHugePage * kHugePage;
  if (p == nullptr || last <= first) return;
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

ByteBuffer::ByteBuffer(size_t n) : size_(n), capacity_(n) {
  if (n < kHugeBytes) {
    data_ = n == 0 ? nullptr : new uint8_t[n];
    return;
  }
  // Mapped one huge page larger, then trimmed to a 2 MiB-aligned run of whole huge pages.
  const size_t want = round_up(n, kHugePage);
  void* raw = ::mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(base, kHugePage);
  if (aligned > base) ::munmap(raw, aligned - base);
  const uintptr_t end = base + want + kHugePage;
  if (end > aligned + want) ::munmap(reinterpret_cast<void*>(aligned + want), end - aligned - want);
  data_ = reinterpret_cast<uint8_t*>(aligned);
  mapped_ = want;
  capacity_ = want;
  // Advice only: a kernel without THP keeps 4 KiB pages, and the buffer works the same.
  (void)::madvise(data_, mapped_, MADV_HUGEPAGE);
}

ByteBuffer::~ByteBuffer() { release(); }

ByteBuffer::ByteBuffer(ByteBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      capacity_(std::exchange(o.capacity_, 0)),
      mapped_(std::exchange(o.mapped_, 0)) {}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
  }
  return *this;
}

void ByteBuffer::release() {
  if (data_ == nullptr) return;
  if (mapped_ != 0) {
    ::munmap(data_, mapped_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = capacity_ = mapped_ = 0;
}

bool ByteBuffer::resize_within(size_t n) {
  if (n > capacity_) return false;
  size_ = n;
  return true;
}

}  // namespace ds4::base
