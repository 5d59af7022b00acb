// A weight file opened for reading, whatever its format: a safetensors file (its header checked
// by io/safetensors/header.hpp) or a torch checkpoint (a pytorch_model.bin, read without running
// it by io/torch/checkpoint.hpp). Either way each tensor is a checked range of the file, read on
// demand with pread or mapped read-only; opening reads no tensor data.
#pragma once

#include <fcntl.h>
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
#include "io/library_names.hpp"
#include "io/safetensors/format.hpp"
#include "io/safetensors/header.hpp"
#include "io/system/mapped_bytes.hpp"
#include "io/system/posix_file.hpp"
#include "io/torch/checkpoint.hpp"

namespace clp_transfer::io {

/// The formats of weight file the program reads.
enum class weight_format {
  safetensors,  ///< model.safetensors and its shards
  torch,        ///< pytorch_model.bin and its shards: torch.save's zip archive
};

/// A weight file opened for reading: its checked tensors, and their bytes on demand.
class weight_file {
 public:
  /// Opens `path` and reads its tensors as `format`; throws io_error (cannot open) or
  /// malformed_file (a file that lies, or is not of the format) naming the file.
  /// @param[in] path    the file
  /// @param[in] format  its format
  weight_file(std::filesystem::path path, weight_format format);

  const std::filesystem::path& path() const noexcept { return path_; }
  weight_format format() const noexcept { return format_; }
  std::uint64_t file_size() const noexcept { return file_size_; }
  /// Tensors in file order, i.e. by offset (tensors of one range, tied weights of a torch
  /// checkpoint, in the order it names them).
  const std::vector<tensor_entry>& tensors() const noexcept { return tensors_; }
  /// A safetensors file's "__metadata__" object (empty when it has none); a torch checkpoint's
  /// is {"format": "pt"}, which a safetensors file written from it carries.
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
  /// The open descriptor, valid while this object lives; pass it to copy_range().
  int descriptor() const noexcept { return fd_.get(); }

  /// The tensor called `name`, or nullptr.
  const tensor_entry* find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
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
  void read(const tensor_entry& tensor, void* buffer, std::size_t buffer_size) const;

  /// Reads the bytes of `tensor` into a new vector (for small tensors; large ones should go
  /// through map() or copy_range()).
  std::vector<std::byte> read(const tensor_entry& tensor) const;

  /// Maps the bytes of `tensor` read-only, with the pages populated up front (one system call
  /// instead of a page fault per 4 KiB, and no copy out of the page cache). The tensors were
  /// checked against the file's size, but like any mapping this one assumes that nobody
  /// truncates the file while it is mapped.
  /// @param[in] tensor  an entry of this file's tensors(), with byte_size > 0
  mapped_bytes map(const tensor_entry& tensor) const;

 protected:
  /// A safetensors file's data section starts here: 8 + its header's length (0 for a torch
  /// checkpoint, whose tensors lie among its archive's records).
  std::uint64_t data_start_ = 0;

 private:
  std::filesystem::path path_;
  weight_format format_;
  file_descriptor fd_;
  std::uint64_t file_size_ = 0;
  std::vector<tensor_entry> tensors_;
  std::map<std::string, std::string> metadata_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace clp_transfer::io
