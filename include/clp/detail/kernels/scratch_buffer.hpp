// SPDX-License-Identifier: MIT
#pragma once

// Internal: uninitialised, growable scratch memory for the blocked kernels. Growing never
// zero-fills (every element is written before it is read), and buffers of 2 MiB and more are
// 2 MiB-aligned and offered to Linux as transparent huge pages, so that first touching them
// costs one page fault per 2 MiB instead of one per 4 KiB.
#include <clp/detail/internal_header_check.hpp>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace clp::detail {

template <class T>
class scratch_buffer {
 public:
  /// Makes room for n elements; the contents are unspecified afterwards.
  T* reserve(std::size_t n) {
    if (n > capacity_) {
      constexpr std::size_t huge_page = std::size_t(2) << 20;
      const std::size_t alignment = n * sizeof(T) >= huge_page ? huge_page : 64;
      const std::size_t bytes = (n * sizeof(T) + alignment - 1) / alignment * alignment;
      void* memory = std::aligned_alloc(alignment, bytes);
      if (memory == nullptr) throw std::bad_alloc();
#ifdef __linux__
      if (alignment == huge_page) ::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
      data_.reset(static_cast<T*>(memory));
      capacity_ = n;
    }
    return data_.get();
  }
  T* data() const { return data_.get(); }

 private:
  struct free_memory {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, free_memory> data_;
  std::size_t capacity_ = 0;
};

}  // namespace clp::detail
