// A read-only mapping of part of a file, its pages populated up front: how the program reads
// the embeddings of a weight file without copying them.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// A read-only mapping of part of a file, unmapped on destruction; move-only.
class mapped_bytes {
 public:
  mapped_bytes() = default;
  /// @param[in] base    what mmap returned
  /// @param[in] length  the mapped length
  /// @param[in] data    the first byte asked for, inside [base, base + length)
  mapped_bytes(void* base, std::size_t length, const void* data) noexcept : base_(base), length_(length), data_(data) {}
  mapped_bytes(mapped_bytes&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), length_(other.length_), data_(other.data_) {}
  mapped_bytes& operator=(mapped_bytes&& other) noexcept {
    if (this != &other) {
      unmap();
      base_ = std::exchange(other.base_, nullptr);
      length_ = other.length_;
      data_ = other.data_;
    }
    return *this;
  }
  mapped_bytes(const mapped_bytes&) = delete;
  mapped_bytes& operator=(const mapped_bytes&) = delete;
  ~mapped_bytes() { unmap(); }

  const void* data() const noexcept { return data_; }

  /// Bytes [offset, offset + size) of file `fd` (size > 0) mapped read-only, the pages
  /// populated up front; empty (data() null, errno set) where mmap refuses.
  static mapped_bytes populated(int fd, std::uint64_t offset, std::uint64_t size) noexcept {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t start = offset / page * page;
    const auto length = static_cast<std::size_t>(offset + size - start);
    void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(start));
    if (base == MAP_FAILED) return {};
    return {base, length, static_cast<const char*>(base) + (offset - start)};
  }

 private:
  void unmap() noexcept {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = nullptr;
  }
  void* base_ = nullptr;
  std::size_t length_ = 0;
  const void* data_ = nullptr;
};

}  // namespace clp_transfer::io
