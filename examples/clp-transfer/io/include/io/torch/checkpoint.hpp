// A pytorch_model.bin as torch.save has written it since torch 1.6, read without running it: a
// zip archive of stored entries (io/torch/zip.hpp) under one folder, PREFIX/data.pkl (the
// state dict's pickle, read by io/torch/pickle.hpp), PREFIX/data/KEY (each storage's bytes),
// PREFIX/byteorder (absent before torch 2.0: little-endian) and PREFIX/version. Each tensor is
// resolved to a range of the file, with the checks the safetensors reader applies: its
// storage exists and holds exactly the elements its persistent id says, the tensor lies inside
// it, its element type is one of the table's, and no two tensors share bytes unless they are
// the same range (a tied weight, saved twice). A tensor must be contiguous (row-major strides)
// to be one range: others are refused. The format torch.save wrote before 1.6 (a bare pickle,
// or a tar archive) is refused by name. Every refusal is a malformed_file naming the file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/safetensors/format.hpp"
#include "io/system/posix_file.hpp"
#include "io/torch/pickle.hpp"
#include "io/torch/zip.hpp"

namespace clp_transfer::io {

namespace detail {

/// Refuses a file that is not a zip archive, naming torch's legacy formats.
void require_zip(const std::filesystem::path& path, int fd, std::uint64_t size);

/// The folder of the archive's records: the one PREFIX with PREFIX/data.pkl.
std::string archive_prefix(const std::filesystem::path& path, const std::vector<zip_entry>& entries);

/// The bytes of a small record, whole.
std::string read_record(const std::filesystem::path& path, int fd, const zip_entry& entry);

/// `record`'s tensor as a range of the file, checked against its storage's record `storage`.
tensor_entry resolve_tensor(const std::filesystem::path& path, const torch_tensor_record& record,
                            const zip_entry& storage);

/// On tensors sorted by offset: two tensors share bytes only when they are the same range (a
/// tied weight saved under two names), never in part (a view of another tensor).
void check_torch_overlaps(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors);

}  // namespace detail

/// The tensors of the torch checkpoint open on `fd`, each a checked range of the file, in file
/// order (by offset; tensors of one range in the state dict's order). Throws
/// malformed_file (io_error for a failed read) naming `path`.
/// @param[in] path  pytorch_model.bin or one of its shards, for messages
/// @param[in] fd    open descriptor of it
/// @param[in] size  its size in bytes
std::vector<tensor_entry> read_torch_checkpoint(const std::filesystem::path& path, int fd, std::uint64_t size);

}  // namespace clp_transfer::io
