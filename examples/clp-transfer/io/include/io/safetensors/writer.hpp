// Writing a safetensors file: the header first, then the tensors' bytes, each tensor's in order
// (tensors may interleave), so that a multi-gigabyte tensor is copied file to file (copy_range)
// instead of through memory, and a tensor being made can be written out as it is made. Large
// writes bypass the page cache (direct I/O), so that writing an output does not cost as much
// fresh memory as the output itself. The disk writes of the rest are started as the bytes
// arrive, so that the flush at the end has little left to do. A caller's mistake (a repeated
// name, a size that does not fit its shape, bytes past the end) is a clp::invalid_argument; a
// failed write a io_error; both name the file.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/safetensors/format.hpp"
#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

/// Where direct I/O needs file offsets, sizes and memory addresses aligned, at most: the
/// logical block size of the disks we know (512 bytes or 4 KiB).
inline constexpr std::size_t direct_io_alignment = 4096;

namespace detail {

/// The header text for `tensors` laid out back to back in their order, and the size of the data
/// section they need. Built by hand rather than through nlohmann::ordered_json: the caller's
/// order must survive, and ordered_json inserts in linear time per key. The header is what
/// safetensors_file accepts: unique names, known dtypes, sizes that fit their shapes.
std::pair<std::string, std::uint64_t> header_text(const std::filesystem::path& path,
                                                  const std::vector<tensor_spec>& tensors,
                                                  const std::map<std::string, std::string>& metadata);

}  // namespace detail

/// Starts the disk writes of a durable file's bytes as they arrive, every 64 MiB of one run of
/// consecutive bytes, so that the flush at the end has little left to do. sync_file_range only
/// starts them: its result is a hint, and the final fsync reports any error.
class writeback {
 public:
  static constexpr std::size_t chunk = std::size_t{64} << 20;

  /// @param[in] durable  whether the file will be flushed at the end (else nothing is started)
  explicit writeback(bool durable = false) : durable_(durable) {}

  /// Bytes [offset, offset + size) of the file open on `fd` were written.
  void arrived(int fd, std::uint64_t offset, std::size_t size) {
    if (!durable_) return;
    if (offset != from_ + pending_) {  // a new run: start the old one's writes
      start(fd);
      from_ = offset;
    }
    pending_ += size;
    if (pending_ >= chunk) start(fd);
  }

 private:
  void start(int fd) {
    if (pending_ > 0)
      ::sync_file_range(fd, static_cast<off_t>(from_), static_cast<off_t>(pending_), SYNC_FILE_RANGE_WRITE);
    from_ += pending_;
    pending_ = 0;
  }

  bool durable_;
  std::uint64_t from_ = 0;  // file offset of the run's first byte whose write was not started
  std::uint64_t pending_ = 0;
};

/// One file being written at chosen offsets: through the page cache, or straight to the disk
/// (O_DIRECT) for the 4 KiB-aligned stretches of large writes whose memory is aligned like their
/// place in the file, where the file system allows it (the page cache would otherwise take as
/// much fresh memory as the file is large). A durable file's disk writes start as its bytes
/// arrive (writeback), and commit() flushes it. Until commit() the file is deleted on
/// destruction, so no half-written file is left behind.
class file_writes {
 public:
  /// Writes of at least this many bytes go to the disk directly where they can.
  static constexpr std::size_t direct_io_min = std::size_t{1} << 20;

  /// Creates `path` (replacing a file there). @param[in] durable  commit() flushes to disk
  file_writes(std::filesystem::path path, bool durable)
      : path_(std::move(path)), durable_(durable), writeback_(durable) {
    fd_ = file_descriptor(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (fd_.get() < 0) failed(path_, "cannot create");
#ifdef O_DIRECT
    direct_fd_ = file_descriptor(::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));  // -1: buffered only
#endif
  }
  file_writes(const file_writes&) = delete;
  file_writes& operator=(const file_writes&) = delete;
  ~file_writes() {
    if (!committed_) discard();
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  int descriptor() const noexcept { return fd_.get(); }

  /// Writes `size` bytes at file offset `at`.
  void write(std::uint64_t at, const char* bytes, std::size_t size);

  /// Bytes [at, at + size) were written through descriptor() by the caller (copy_file_range).
  void written_elsewhere(std::uint64_t at, std::size_t size) { writeback_.arrived(fd_.get(), at, size); }

  /// Flushes (when durable) and closes the file; it is kept from now on.
  void commit() {
    if (durable_ && ::fsync(fd_.get()) != 0) failed(path_, "flushing");
    direct_fd_.close();
    if (fd_.close() != 0) failed(path_, "closing");
    committed_ = true;
  }

 private:
  void write_buffered(std::uint64_t at, const char* bytes, std::size_t size) {
    for (std::size_t done = 0; done < size;) {
      const std::size_t part = std::min(size - done, writeback::chunk);
      write_exactly(path_, fd_.get(), bytes + done, part, at + done);
      writeback_.arrived(fd_.get(), at + done, part);
      done += part;
    }
  }

  /// Writes aligned bytes past the page cache; false (and no more direct writes) where the
  /// file system does not take them.
  bool write_direct(std::uint64_t at, const char* bytes, std::size_t size);

  void discard() noexcept {
    direct_fd_.close();
    fd_.close();
    ::unlink(path_.c_str());
  }

  std::filesystem::path path_;
  bool durable_;
  file_descriptor fd_, direct_fd_;
  writeback writeback_;
  bool committed_ = false;
};

class safetensors_writer;
void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

/// Writes a safetensors file: the constructor writes the header for all tensors, then append(),
/// append_to() and copy_range() supply the tensor bytes, and finish() checks that every byte
/// arrived. A writer destroyed before finish() succeeded deletes its file, so no half-written
/// checkpoint is left behind.
///
/// Each tensor's bytes arrive in order; tensors may be filled one after the other (append,
/// copy_range: the next bytes of the first tensor not yet complete, running on into the next)
/// or interleaved (append_to: the next bytes of a tensor named by its position). The data
/// section starts on a 4 KiB boundary, so large writes can go to the disk directly (file_writes).
///
/// A durable writer (the default) makes finish() flush the file to disk, so that a rename after
/// it is a commit point that survives a power loss; its disk writes start as the bytes arrive,
/// so that the flush does not cost a second pass over the whole file.
class safetensors_writer {
 public:
  /// Creates `path` (replacing a file there) and writes the header.
  /// @param[in] path      file to create
  /// @param[in] tensors   the tensors, in the order of the data section
  /// @param[in] metadata  "__metadata__" entries; none are written when empty
  /// @param[in] durable   flush to disk in finish(); false leaves that to the kernel, like cp
  safetensors_writer(std::filesystem::path path, std::vector<tensor_spec> tensors,
                     const std::map<std::string, std::string>& metadata = {}, bool durable = true);

  const std::filesystem::path& path() const noexcept { return file_.path(); }
  /// Tensor bytes still expected before finish().
  std::uint64_t remaining() const noexcept { return data_size_ - total_written_; }

  /// The next tensor bytes, in file order: those of the first tensor not yet complete, running
  /// on into the next ones; a call may cover part of a tensor or run across several.
  /// @param[in] data  `size` readable bytes
  /// @param[in] size  byte count; must not exceed remaining()
  void append(const void* data, std::size_t size);

  /// The next bytes of tensor `tensor` (its position in the constructor's list), whatever the
  /// other tensors have received.
  /// @param[in] tensor  position of the tensor
  /// @param[in] data    `size` readable bytes
  /// @param[in] size    byte count; must not exceed what the tensor still expects
  void append_to(std::size_t tensor, const void* data, std::size_t size);

  /// Checks that every tensor received exactly its byte size, then flushes and closes the file.
  void finish();

 private:
  friend void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

  std::size_t first_incomplete() const {
    std::size_t tensor = 0;
    while (tensor + 1 < tensors_.size() && written_[tensor] == tensors_[tensor].byte_size) ++tensor;
    return tensor;
  }

  /// Writes the next `size` bytes of `tensor`, which fit.
  void write_to(std::size_t tensor, const void* data, std::size_t size) {
    file_.write(offsets_[tensor] + written_[tensor], static_cast<const char*>(data), size);
    arrived(tensor, size);
  }

  void arrived(std::size_t tensor, std::size_t size) {
    written_[tensor] += size;
    total_written_ += size;
  }

  void expect(std::size_t size) const {
    if (size > remaining())
      throw clp::invalid_argument(about(path()), std::to_string(size) + " more bytes do not fit: " +
                                                     std::to_string(remaining()) + " of the data section remain");
  }

  std::vector<tensor_spec> tensors_;
  std::vector<std::uint64_t> offsets_;  // file offset of each tensor's first byte
  std::vector<std::uint64_t> written_;  // bytes each tensor has received
  std::uint64_t data_size_ = 0;
  std::uint64_t total_written_ = 0;
  file_writes file_;
};

/// Streams `size` bytes starting at `offset` of `in_fd` into `out`, as the next tensor bytes in
/// file order (see append). Uses copy_file_range so that the kernel moves the data (or the
/// filesystem shares extents); where that is unavailable (EXDEV, ENOSYS, EINVAL, EOPNOTSUPP) it
/// falls back to pread/pwrite through a buffer of at most 8 MiB. Neither way holds a whole
/// tensor in memory.
/// @param[in]     in_fd   readable descriptor, e.g. safetensors_file::descriptor(); its file
///                        position is not used or changed
/// @param[in]     offset  byte offset in the source file, e.g. tensor_entry::offset
/// @param[in]     size    byte count, e.g. tensor_entry::byte_size
/// @param[in,out] out     writer receiving the bytes
void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

}  // namespace clp_transfer::io
