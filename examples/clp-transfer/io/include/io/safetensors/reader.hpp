// Reading a safetensors file without holding tensor data in memory: a weight_file
// (io/weight_file.hpp) whose header is read and checked by io/safetensors/header.hpp; tensor
// bytes are read on demand with pread, or mapped read-only (the embeddings the program
// computes from).
#pragma once

#include <cstdint>
#include <filesystem>
#include <utility>

#include "io/library_names.hpp"
#include "io/system/mapped_bytes.hpp"
#include "io/weight_file.hpp"

namespace clp_transfer::io {

/// A safetensors file opened for reading: its checked header, and the bytes on demand.
class safetensors_file : public weight_file {
 public:
  /// Opens `path` and checks its header; throws io_error (cannot open) or
  /// malformed_file (a header that lies) naming the file.
  /// @param[in] path  safetensors file
  explicit safetensors_file(std::filesystem::path path) : weight_file(std::move(path), weight_format::safetensors) {}

  /// Offset of the data section: 8 + header length.
  std::uint64_t data_start() const noexcept { return data_start_; }
};

}  // namespace clp_transfer::io
