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
inline nlohmann::json parse_header_json(const std::filesystem::path& path, const std::string& text) {
  using json = nlohmann::json;
  std::vector<std::unordered_set<std::string>> keys;  // one set per object being parsed
  std::string repeated;
  int repeated_depth = 0;
  const json::parser_callback_t check_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && repeated.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second) {
      repeated = parsed.get<std::string>();
      repeated_depth = depth;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, check_keys);
  } catch (const json::exception& error) {
    malformed_json(path, "header is not valid JSON", error);
  }
  if (!repeated.empty())
    malformed(path, (repeated_depth <= 1 && repeated != "__metadata__" ? "tensor name " : "key ") +
                        quoted_name(repeated) + " appears twice in the header");
  if (!header.is_object()) malformed(path, "header is not a JSON object");
  return header;
}

inline std::map<std::string, std::string> parse_metadata(const std::filesystem::path& path,
                                                         const nlohmann::json& value) {
  if (!value.is_object()) malformed(path, "__metadata__ is not a JSON object of string -> string");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) malformed(path, "__metadata__ value of " + quoted_name(key) + " is not a string");
    metadata.emplace(key, text.get<std::string>());
  }
  return metadata;
}

/// The dtype and shape of one entry, checked.
inline tensor_entry parse_entry_type(const std::filesystem::path& path, const std::string& name,
                                     const nlohmann::json& value) {
  const auto bad = [&](const std::string& problem) { malformed(path, problem, name); };
  if (!value.is_object()) bad("entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) bad(std::string("missing \"") + key + "\"");
  tensor_entry tensor;
  tensor.name = name;
  const nlohmann::json& dtype_value = value["dtype"];
  if (!dtype_value.is_string()) bad("\"dtype\" is not a string");
  const auto type = parse_dtype(dtype_value.get<std::string>());
  if (!type) bad("unknown dtype " + quoted_name(dtype_value.get<std::string>()));
  tensor.dtype = *type;
  tensor.element_size = dtype_size(*type);
  const nlohmann::json& shape = value["shape"];
  if (!shape.is_array()) bad("\"shape\" is not an array");
  for (const nlohmann::json& dimension : shape) {
    // Integers beyond int64 parse as unsigned; no real dimension comes near that.
    if (!dimension.is_number_integer() ||
        (dimension.is_number_unsigned() && dimension.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      bad("\"shape\" holds " + json_excerpt(dimension) + ", not a dimension");
    tensor.shape.push_back(dimension.get<std::int64_t>());
  }
  if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](auto d) { return d < 0; }))
    bad("negative dimension in shape " + format_shape(tensor.shape));
  return tensor;
}

/// One tensor's entry: its type and shape, and where its bytes lie in a file whose data section
/// starts at `data_start` (whether the file holds them is checked on all entries together).
inline tensor_entry parse_entry(const std::filesystem::path& path, const std::string& name, const nlohmann::json& value,
                                std::uint64_t data_start) {
  tensor_entry tensor = parse_entry_type(path, name, value);
  const auto bad = [&](const std::string& problem) { malformed(path, problem, name); };
  const auto count = element_count(tensor.shape, tensor.element_size);
  if (!count) bad("shape " + format_shape(tensor.shape) + " has too many elements (overflow)");
  const nlohmann::json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    bad("\"data_offsets\" is not a pair of non-negative integers");
  const auto begin = offsets[0].get<std::uint64_t>();
  const auto end = offsets[1].get<std::uint64_t>();
  if (end < begin) bad("data_offsets end " + std::to_string(end) + " is before begin " + std::to_string(begin));
  if (end > std::numeric_limits<std::uint64_t>::max() - data_start)
    bad("data_offsets end " + std::to_string(end) + " lies past the end of any file");
  tensor.offset = data_start + begin;
  tensor.byte_size = end - begin;
  if (tensor.byte_size != *count * tensor.element_size)
    bad("holds " + std::to_string(tensor.byte_size) + " bytes but shape " + format_shape(tensor.shape) + " of " +
        std::string(dtype_name(tensor.dtype)) + " needs " + std::to_string(*count * tensor.element_size));
  return tensor;
}

/// On tensors sorted by offset: a range overlaps an earlier one exactly when it starts before
/// the furthest end seen so far. Empty tensors occupy no bytes and never overlap.
inline void check_overlaps(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors) {
  const tensor_entry* furthest = nullptr;
  for (const tensor_entry& tensor : tensors) {
    if (tensor.byte_size == 0) continue;
    if (furthest && tensor.offset < furthest->offset + furthest->byte_size)
      malformed(path, "tensors " + quoted_name(furthest->name) + " and " + quoted_name(tensor.name) +
                          " overlap in the data section");
    if (!furthest || tensor.offset + tensor.byte_size > furthest->offset + furthest->byte_size) furthest = &tensor;
  }
}

/// After check_overlaps, on tensors sorted by offset: each tensor must begin where the previous
/// one ended, from 0 to the end of the data section, as the reference validate() requires.
/// Bytes no tensor owns could only be hidden data or the trace of a broken writer. Positions
/// are those of data_offsets (relative to the data section). Empty tensors own no bytes; they
/// may sit at any offset inside the data section.
inline void check_coverage(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors,
                           std::uint64_t data_start, std::uint64_t file_size) {
  const std::uint64_t data_size = file_size - data_start;
  std::uint64_t covered = 0;  // data bytes [0, covered) belong to the tensors seen so far
  const tensor_entry* previous = nullptr;
  for (const tensor_entry& tensor : tensors) {
    if (tensor.byte_size == 0) continue;
    const std::uint64_t begin = tensor.offset - data_start;
    if (begin != covered)
      malformed(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(begin) +
                          ") belong to no tensor (a gap " +
                          (previous ? "between tensors " + quoted_name(previous->name) + " and "
                                    : std::string("before the first tensor ")) +
                          quoted_name(tensor.name) + ")");
    covered = begin + tensor.byte_size;
    previous = &tensor;
  }
  if (covered != data_size)
    malformed(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                        ") belong to no tensor (" + std::to_string(data_size - covered) + " bytes after " +
                        (previous ? "the last tensor " + quoted_name(previous->name) : "the header") + ")");
}

/// The header length from the first 8 bytes of a file of `file_size` bytes, checked against
/// the file's size and the format's limit.
inline std::uint64_t read_header_length(const std::filesystem::path& path, int fd, std::uint64_t file_size) {
  if (file_size < 8)
    malformed(path, "file is " + std::to_string(file_size) +
                        " bytes, too short for a safetensors header (truncated or empty)");
  unsigned char length_bytes[8];
  read_exactly(path, fd, length_bytes, 8, 0, "the header length");
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  if (length > max_header_bytes)
    malformed(path, "header length " + std::to_string(length) + " exceeds the " +
                        std::to_string(max_header_bytes / 1'000'000) + " MB limit (corrupt file?)");
  if (length > file_size - 8) throw truncated_file(path, 8 + length, file_size, "the header");
  return length;
}

}  // namespace detail

/// Reads and validates the header of the safetensors file open on `fd`; throws
/// malformed_file (or io_error for a failed read) naming `path`.
/// @param[in] path       the file, for messages
/// @param[in] fd         open descriptor of it
/// @param[in] file_size  its size in bytes
inline safetensors_header read_safetensors_header(const std::filesystem::path& path, int fd, std::uint64_t file_size) {
  const std::uint64_t length = detail::read_header_length(path, fd, file_size);
  safetensors_header header;
  header.data_start = 8 + length;
  std::string text(length, '\0');
  read_exactly(path, fd, text.data(), text.size(), 8, "the header");
  const nlohmann::json json = detail::parse_header_json(path, text);
  for (const auto& [name, value] : json.items()) {
    if (name == "__metadata__")
      header.metadata = detail::parse_metadata(path, value);
    else
      header.tensors.push_back(detail::parse_entry(path, name, value, header.data_start));
  }
  std::uint64_t data_end = header.data_start;
  for (const tensor_entry& tensor : header.tensors) data_end = std::max(data_end, tensor.offset + tensor.byte_size);
  if (data_end > file_size) throw truncated_file(path, data_end, file_size, "the tensor data its header lists");
  // nlohmann::json sorts keys, and the header's key order carries no meaning anyway: data order
  // does, for sequential copies. Sorting by (begin, end) puts an empty tensor before the one
  // starting where it sits; several empties at one offset stay in name order.
  std::stable_sort(header.tensors.begin(), header.tensors.end(), [](const tensor_entry& a, const tensor_entry& b) {
    return std::pair(a.offset, a.byte_size) < std::pair(b.offset, b.byte_size);
  });
  detail::check_overlaps(path, header.tensors);
  detail::check_coverage(path, header.tensors, header.data_start, file_size);
  return header;
}

}  // namespace clp_transfer::io
