// Writing a safetensors file as a stream: the header first, then each tensor's bytes in order,
// so that a multi-gigabyte tensor is copied file to file (copy_range) instead of through memory.
// The disk writes are started as the bytes arrive, so that the flush at the end has little
// left to do. A caller's mistake (a repeated name, a size that does not fit its shape, bytes
// past the end) is a clp::invalid_argument; a failed write a clp::io_error; both name the file.
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
#include "io/posix_file.hpp"
#include "io/safetensors_format.hpp"

namespace clp::io {

namespace detail {

/// The header text for `tensors` laid out back to back in their order, and the size of the data
/// section they need. Built by hand rather than through nlohmann::ordered_json: the caller's
/// order must survive, and ordered_json inserts in linear time per key. The header is what
/// safetensors_file accepts: unique names, known dtypes, sizes that fit their shapes.
inline std::pair<std::string, std::uint64_t> header_text(const std::filesystem::path& path,
                                                         const std::vector<tensor_spec>& tensors,
                                                         const std::map<std::string, std::string>& metadata) {
  using json = nlohmann::json;
  const auto refuse = [&](const std::string& problem, const std::string& tensor = {}) {
    throw clp::invalid_argument(about(path, tensor), problem);
  };
  try {
    std::string header = "{";
    if (!metadata.empty()) header += "\"__metadata__\":" + json(metadata).dump();
    std::unordered_set<std::string_view> names;
    std::uint64_t data_size = 0;
    for (const tensor_spec& tensor : tensors) {
      if (tensor.name == "__metadata__") refuse("\"__metadata__\" is reserved");
      if (!names.insert(tensor.name).second) refuse("is listed twice", tensor.name);
      const std::size_t element_size = dtype_size(tensor.dtype);
      if (element_size == 0) refuse("unknown dtype " + std::to_string(static_cast<int>(tensor.dtype)), tensor.name);
      const auto count = element_count(tensor.shape, element_size);
      if (!count || *count * element_size != tensor.byte_size)
        refuse("byte size " + std::to_string(tensor.byte_size) + " does not fit shape " + format_shape(tensor.shape) +
                   " of " + std::string(dtype_name(tensor.dtype)),
               tensor.name);
      const json entry = {{"dtype", dtype_name(tensor.dtype)},
                          {"shape", tensor.shape},
                          {"data_offsets", {data_size, data_size + tensor.byte_size}}};
      if (header.size() > 1) header += ',';
      // dump(), not quoted_name(): a name that is not UTF-8 must be refused, not rewritten.
      header += json(tensor.name).dump() + ':' + entry.dump();
      data_size += tensor.byte_size;
    }
    header += '}';
    // Readers may map the data section and view it as typed arrays; 8-byte alignment of
    // 8 + header length keeps every element aligned.
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > max_header_bytes)
      refuse("header of " + std::to_string(header.size()) + " bytes exceeds the " +
             std::to_string(max_header_bytes / 1'000'000) + " MB limit of readers");
    return {std::move(header), data_size};
  } catch (const json::exception& error) {  // type_error 316: a name or metadata that is not UTF-8
    throw clp::invalid_argument(about(path), std::string("cannot write the header (") + error.what() + ")");
  }
}

}  // namespace detail

/// Starts the disk writes of a durable file's bytes as they arrive, every 64 MiB, so that the
/// flush at the end has little left to do. sync_file_range only starts them: its result is a
/// hint, and the final fsync reports any error.
class writeback {
 public:
  static constexpr std::size_t chunk = std::size_t{64} << 20;

  /// @param[in] durable  whether the file will be flushed at the end (else nothing is started)
  /// @param[in] from     file offset of the first byte to come
  writeback(bool durable, std::uint64_t from) : durable_(durable), from_(from) {}

  /// `size` more bytes reached the file open on `fd`.
  void arrived(int fd, std::size_t size) {
    pending_ += size;
    if (!durable_ || pending_ < chunk) return;
    ::sync_file_range(fd, static_cast<off_t>(from_), static_cast<off_t>(pending_), SYNC_FILE_RANGE_WRITE);
    from_ += pending_;
    pending_ = 0;
  }

 private:
  bool durable_;
  std::uint64_t from_;  // file offset of the first byte whose write was not started
  std::uint64_t pending_ = 0;
};

class safetensors_writer;
inline void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

/// Writes a safetensors file as a stream: the constructor writes the header for all tensors,
/// then append() and copy_range() supply the tensor bytes in that same order, and finish()
/// checks that every byte arrived. A writer destroyed before finish() succeeded deletes its
/// file, so no half-written checkpoint is left behind.
///
/// A durable writer (the default) makes finish() flush the file to disk, so that a rename after
/// it is a commit point that survives a power loss; its disk writes start as the bytes arrive
/// (writeback), so that the flush does not cost a second pass over the whole file.
class safetensors_writer {
 public:
  /// Creates `path` (replacing a file there) and writes the header.
  /// @param[in] path      file to create
  /// @param[in] tensors   tensors in the order their bytes will be supplied
  /// @param[in] metadata  "__metadata__" entries; none are written when empty
  /// @param[in] durable   flush to disk in finish(); false leaves that to the kernel, like cp
  safetensors_writer(std::filesystem::path path, std::vector<tensor_spec> tensors,
                     const std::map<std::string, std::string>& metadata = {}, bool durable = true)
      : path_(std::move(path)), tensors_(std::move(tensors)), durable_(durable) {
    auto [header, data_size] = detail::header_text(path_, tensors_, metadata);
    data_size_ = data_size;
    fd_ = file_descriptor(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (fd_.get() < 0) failed(path_, "cannot create");
    try {
      write_all(path_, fd_.get(), length_prefix(header.size()).data(), 8);
      write_all(path_, fd_.get(), header.data(), header.size());
      writeback_ = writeback(durable_, 8 + header.size());
    } catch (...) {
      discard();  // the destructor does not run for a constructor that throws
      throw;
    }
  }

  safetensors_writer(const safetensors_writer&) = delete;
  safetensors_writer& operator=(const safetensors_writer&) = delete;
  ~safetensors_writer() {
    if (!finished_) discard();
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  /// Tensor bytes still expected before finish().
  std::uint64_t remaining() const noexcept { return data_size_ - written_; }

  /// Appends tensor bytes; a call may cover part of a tensor or run across several.
  /// @param[in] data  `size` readable bytes
  /// @param[in] size  byte count; must not exceed remaining()
  void append(const void* data, std::size_t size) {
    expect(size);
    const auto* bytes = static_cast<const char*>(data);
    for (std::size_t done = 0; done < size;) {
      const std::size_t part = std::min(size - done, writeback::chunk);
      write_all(path_, fd_.get(), bytes + done, part);
      done += part;
      arrived(part);
    }
  }

  /// Checks that every tensor received exactly its byte size, then flushes and closes the file.
  void finish() {
    if (written_ != data_size_)
      throw clp::invalid_argument(about(path_, tensor_at(written_).name),
                                  "is incomplete: " + std::to_string(data_size_ - written_) + " of " +
                                      std::to_string(data_size_) + " data bytes never arrived");
    if (durable_ && ::fsync(fd_.get()) != 0) failed(path_, "flushing");
    if (fd_.close() != 0) failed(path_, "closing");
    finished_ = true;
  }

 private:
  friend void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

  void arrived(std::size_t size) {
    written_ += size;
    writeback_.arrived(fd_.get(), size);
  }

  void discard() noexcept {
    fd_.close();
    ::unlink(path_.c_str());
  }

  void expect(std::size_t size) const {
    if (size > remaining())
      throw clp::invalid_argument(about(path_), std::to_string(size) + " more bytes do not fit: " +
                                                    std::to_string(remaining()) + " of the data section remain");
  }

  const tensor_spec& tensor_at(std::uint64_t position) const {
    for (const tensor_spec& tensor : tensors_) {
      if (position < tensor.byte_size) return tensor;
      position -= tensor.byte_size;
    }
    return tensors_.back();
  }

  std::filesystem::path path_;
  std::vector<tensor_spec> tensors_;
  file_descriptor fd_;
  std::uint64_t data_size_ = 0;
  std::uint64_t written_ = 0;
  bool durable_ = true;
  writeback writeback_{false, 0};
  bool finished_ = false;
};

/// Streams `size` bytes starting at `offset` of `in_fd` into `out`, as the next tensor bytes.
/// Uses copy_file_range so that the kernel moves the data (or the filesystem shares extents);
/// where that is unavailable (EXDEV, ENOSYS, EINVAL, EOPNOTSUPP) it falls back to pread/write
/// through a buffer of at most 8 MiB. Neither way holds a whole tensor in memory.
/// @param[in]     in_fd   readable descriptor, e.g. safetensors_file::descriptor(); its file
///                        position is not used or changed
/// @param[in]     offset  byte offset in the source file, e.g. tensor_entry::offset
/// @param[in]     size    byte count, e.g. tensor_entry::byte_size
/// @param[in,out] out     writer receiving the bytes
inline void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out) {
  out.expect(size);
  const auto source_ended = [&] {
    throw clp::io_error(about(out.path_), "source ended before " + std::to_string(size) + " bytes from offset " +
                                              std::to_string(offset) + " were copied");
  };
  off_t position = offset;
  std::size_t left = size;
  while (left > 0) {
    const ssize_t copied =
        ::copy_file_range(in_fd, &position, out.fd_.get(), nullptr, std::min(left, writeback::chunk), 0);
    if (copied > 0) {
      left -= static_cast<std::size_t>(copied);
      out.arrived(static_cast<std::size_t>(copied));
      continue;
    }
    if (copied == 0) source_ended();
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
    failed(out.path_, "copying tensor data");
  }
  if (left == 0) return;
  std::vector<char> buffer(std::min<std::size_t>(left, std::size_t{8} << 20));
  while (left > 0) {
    const ssize_t got = ::pread(in_fd, buffer.data(), std::min(left, buffer.size()), position);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) failed(out.path_, "reading tensor data to copy");
    if (got == 0) source_ended();
    write_all(out.path_, out.fd_.get(), buffer.data(), static_cast<std::size_t>(got));
    position += got;
    left -= static_cast<std::size_t>(got);
    out.arrived(static_cast<std::size_t>(got));
  }
}

}  // namespace clp::io
