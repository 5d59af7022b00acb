// Reading a safetensors file without holding tensor data in memory: opening reads and checks the
// header only (io/safetensors_header.hpp); tensor bytes are read on demand with pread, or mapped
// read-only (the embeddings the program computes from).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "io/posix_file.hpp"
#include "io/safetensors_format.hpp"
#include "io/safetensors_header.hpp"
#include "library_names.hpp"

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

/// A safetensors file opened for reading: its checked header, and the bytes on demand.
class safetensors_file {
 public:
  /// Opens `path` and checks its header; throws clp::io_error (cannot open) or
  /// clp::malformed_file (a header that lies) naming the file.
  /// @param[in] path  safetensors file
  explicit safetensors_file(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = file_descriptor(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd_.get() < 0) failed(path_, "cannot open");
    struct stat info {};
    if (::fstat(fd_.get(), &info) != 0) failed(path_, "cannot stat");
    if (!S_ISREG(info.st_mode)) throw clp::io_error(about(path_), "not a regular file");
    file_size_ = static_cast<std::uint64_t>(info.st_size);
    header_ = read_safetensors_header(path_, fd_.get(), file_size_);
    for (std::size_t i = 0; i < header_.tensors.size(); ++i) by_name_.emplace(header_.tensors[i].name, i);
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  std::uint64_t file_size() const noexcept { return file_size_; }
  /// Offset of the data section: 8 + header length.
  std::uint64_t data_start() const noexcept { return header_.data_start; }
  /// Tensors in file order, i.e. by position in the data section.
  const std::vector<tensor_entry>& tensors() const noexcept { return header_.tensors; }
  /// The "__metadata__" object; empty when the file has none.
  const std::map<std::string, std::string>& metadata() const noexcept { return header_.metadata; }
  /// The open descriptor, valid while this object lives; pass it to copy_range().
  int descriptor() const noexcept { return fd_.get(); }

  /// The tensor called `name`, or nullptr.
  const tensor_entry* find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &header_.tensors[it->second];
  }

  /// The tensor called `name`; throws clp::invalid_argument naming the file when there is none.
  const tensor_entry& at(std::string_view name) const {
    if (const tensor_entry* tensor = find(name)) return *tensor;
    throw clp::invalid_argument(about(path_), "no tensor " + quoted_name(name));
  }

  /// Reads the bytes of `tensor` into a caller buffer.
  /// @param[in]  tensor       an entry of this file's tensors()
  /// @param[out] buffer       tensor.byte_size writable bytes
  /// @param[in]  buffer_size  size of `buffer`; must equal tensor.byte_size
  void read(const tensor_entry& tensor, void* buffer, std::size_t buffer_size) const {
    if (buffer_size != tensor.byte_size)
      throw clp::invalid_argument(
          about(path_, tensor.name),
          "holds " + std::to_string(tensor.byte_size) + " bytes but the buffer holds " + std::to_string(buffer_size));
    read_exactly(path_, fd_.get(), buffer, buffer_size, tensor.offset, "tensor " + quoted_name(tensor.name));
  }

  /// Reads the bytes of `tensor` into a new vector (for small tensors; large ones should go
  /// through map() or copy_range()).
  std::vector<std::byte> read(const tensor_entry& tensor) const {
    std::vector<std::byte> bytes(tensor.byte_size);
    read(tensor, bytes.data(), bytes.size());
    return bytes;
  }

  /// Maps the bytes of `tensor` read-only, with the pages populated up front (one system call
  /// instead of a page fault per 4 KiB, and no copy out of the page cache). The header was
  /// checked against the file's size, but like any mapping this one assumes that nobody
  /// truncates the file while it is mapped.
  /// @param[in] tensor  an entry of this file's tensors(), with byte_size > 0
  mapped_bytes map(const tensor_entry& tensor) const {
    mapped_bytes bytes = mapped_bytes::populated(fd_.get(), tensor.offset, tensor.byte_size);
    if (bytes.data() == nullptr) failed(path_, "cannot map tensor " + quoted_name(tensor.name));
    return bytes;
  }

 private:
  std::filesystem::path path_;
  file_descriptor fd_;
  std::uint64_t file_size_ = 0;
  safetensors_header header_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace clp_transfer::io
