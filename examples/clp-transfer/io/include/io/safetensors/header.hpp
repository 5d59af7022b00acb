// The one check of a safetensors header, as strict as the format's reference validate(): the
// tensors must tile the data section exactly (contiguous from offset 0, in offset order, no gap
// and nothing after the last one), names are unique, dtypes known, sizes fit their shapes, and
// the header is at most 100 MB. Every problem is a malformed_file naming the file (and the
// tensor, where one is at fault).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/safetensors/format.hpp"
#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

/// What a valid header says.
struct safetensors_header {
  std::uint64_t data_start = 0;                 ///< 8 + header length
  std::vector<tensor_entry> tensors;            ///< in file order (by offset)
  std::map<std::string, std::string> metadata;  ///< "__metadata__"; empty when absent
};

namespace detail {

/// The header text as JSON. A key repeated within one object is refused: nlohmann would keep
/// the last silently, and two entries for one tensor name leave its bytes ambiguous.
nlohmann::json parse_header_json(const std::filesystem::path& path, const std::string& text);

std::map<std::string, std::string> parse_metadata(const std::filesystem::path& path, const nlohmann::json& value);

/// The dtype and shape of one entry, checked.
tensor_entry parse_entry_type(const std::filesystem::path& path, const std::string& name, const nlohmann::json& value);

/// One tensor's entry: its type and shape, and where its bytes lie in a file whose data section
/// starts at `data_start` (whether the file holds them is checked on all entries together).
tensor_entry parse_entry(const std::filesystem::path& path, const std::string& name, const nlohmann::json& value,
                         std::uint64_t data_start);

/// On tensors sorted by offset: a range overlaps an earlier one exactly when it starts before
/// the furthest end seen so far. Empty tensors occupy no bytes and never overlap.
void check_overlaps(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors);

/// After check_overlaps, on tensors sorted by offset: each tensor must begin where the previous
/// one ended, from 0 to the end of the data section, as the reference validate() requires.
/// Bytes no tensor owns could only be hidden data or the trace of a broken writer. Positions
/// are those of data_offsets (relative to the data section). Empty tensors own no bytes; they
/// may sit at any offset inside the data section.
void check_coverage(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors,
                    std::uint64_t data_start, std::uint64_t file_size);

/// The header length from the first 8 bytes of a file of `file_size` bytes, checked against
/// the file's size and the format's limit.
std::uint64_t read_header_length(const std::filesystem::path& path, int fd, std::uint64_t file_size);

}  // namespace detail

/// Reads and validates the header of the safetensors file open on `fd`; throws
/// malformed_file (or io_error for a failed read) naming `path`.
/// @param[in] path       the file, for messages
/// @param[in] fd         open descriptor of it
/// @param[in] file_size  its size in bytes
safetensors_header read_safetensors_header(const std::filesystem::path& path, int fd, std::uint64_t file_size);

}  // namespace clp_transfer::io
