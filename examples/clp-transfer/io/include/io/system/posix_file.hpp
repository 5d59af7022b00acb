// The POSIX calls the safetensors reader and writer make, wrapped once: a descriptor that closes
// itself, positioned reads and writes that retry short transfers and EINTR, and a flush to disk. Each
// failure is a io_error naming the file (io/errors.hpp).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "io/errors.hpp"
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// Owns a POSIX file descriptor and closes it once; move-only.
class file_descriptor {
 public:
  /// @param[in] fd  descriptor to own, or -1 for none
  explicit file_descriptor(int fd = -1) noexcept : fd_(fd) {}
  file_descriptor(file_descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;
  ~file_descriptor() { close(); }

  int get() const noexcept { return fd_; }

  /// Closes the descriptor; returns ::close's result (0 when there was none) so that writers
  /// can notice delayed write errors.
  int close() noexcept { return fd_ < 0 ? 0 : ::close(std::exchange(fd_, -1)); }

 private:
  int fd_;
};

/// Reads exactly `size` bytes at `offset` of `fd`, retrying short reads. A file that ends
/// first is malformed (shorter than its header says), not an I/O failure.
/// @param[in]  path    file behind `fd`, for messages
/// @param[in]  fd      open descriptor
/// @param[out] buffer  `size` writable bytes
/// @param[in]  size    bytes to read
/// @param[in]  offset  byte offset in the file
/// @param[in]  what    what is being read, for messages ("the header", "tensor "x"")
void read_exactly(const std::filesystem::path& path, int fd, void* buffer, std::size_t size, std::uint64_t offset,
                  const std::string& what);

/// Writes all `size` bytes at `offset` of `fd`, retrying short writes.
/// @param[in] path    file behind `fd`, for messages
/// @param[in] fd      open descriptor
/// @param[in] data    `size` readable bytes
/// @param[in] size    bytes to write
/// @param[in] offset  byte offset in the file
void write_exactly(const std::filesystem::path& path, int fd, const void* data, std::size_t size, std::uint64_t offset);

/// Flushes file or folder `path` to disk (fsync); false, with errno set, when that failed.
/// @param[in] path  file or folder
inline bool try_flush_to_disk(const std::filesystem::path& path) noexcept {
  const file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd.get() >= 0 && ::fsync(fd.get()) == 0;
}

/// Flushes file or folder `path` to disk; throws io_error naming it on failure.
/// @param[in] path  file or folder
inline void flush_to_disk(const std::filesystem::path& path) {
  if (!try_flush_to_disk(path)) failed(path, "cannot flush to disk");
}

}  // namespace clp_transfer::io
