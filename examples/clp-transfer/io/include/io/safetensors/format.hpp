// The safetensors format as the reader and the writer share it: an 8-byte little-endian length N,
// N bytes of UTF-8 JSON header, then the data section. The header maps each tensor name to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// with offsets relative to the first byte of the data section, plus an optional "__metadata__"
// object of string -> string. Here: the element types, the limits that tell a corrupt header
// from a large checkpoint, and what a header says about one tensor.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// The element types of safetensors that this layer reads and writes, by the names the header
/// uses (dtype_name). Sub-byte types (F4, F6_*) are left out: their sizes are not whole bytes.
enum class dtype { boolean, u8, i8, f8_e4m3, f8_e5m2, u16, i16, f16, bf16, u32, i32, f32, u64, i64, f64 };

namespace detail {

struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;
};

inline constexpr dtype_info dtype_table[] = {
    {dtype::boolean, "BOOL", 1},    {dtype::u8, "U8", 1},   {dtype::i8, "I8", 1},   {dtype::f8_e4m3, "F8_E4M3", 1},
    {dtype::f8_e5m2, "F8_E5M2", 1}, {dtype::u16, "U16", 2}, {dtype::i16, "I16", 2}, {dtype::f16, "F16", 2},
    {dtype::bf16, "BF16", 2},       {dtype::u32, "U32", 4}, {dtype::i32, "I32", 4}, {dtype::f32, "F32", 4},
    {dtype::u64, "U64", 8},         {dtype::i64, "I64", 8}, {dtype::f64, "F64", 8}};

/// The table row of `type`, or nullptr for a value outside the enumeration.
const dtype_info* find_dtype(dtype type);

}  // namespace detail

/// The dtype a header names, e.g. "BF16"; nullopt for a name this layer does not know.
/// @param[in] name  dtype as written in a safetensors header (case matters, as in the format)
std::optional<dtype> parse_dtype(std::string_view name);

/// The name a header uses for `type`, e.g. "BF16" ("?" for a value outside the enumeration).
/// @param[in] type  element type
inline std::string_view dtype_name(dtype type) {
  const detail::dtype_info* info = detail::find_dtype(type);
  return info ? info->name : std::string_view("?");
}

/// Bytes per element of `type` (0 for a value outside the enumeration).
/// @param[in] type  element type
inline std::size_t dtype_size(dtype type) {
  const detail::dtype_info* info = detail::find_dtype(type);
  return info ? info->size : 0;
}

/// Limits that separate a corrupt header from a large checkpoint.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
inline constexpr std::uint64_t max_tensor_bytes = std::uint64_t{1} << 62;

/// Element count of `shape`, or nullopt when a dimension is negative or the tensor would exceed
/// max_tensor_bytes; a zero dimension gives 0 whatever the others are.
/// @param[in] shape         dimensions
/// @param[in] element_size  bytes per element (> 0)
std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& shape, std::size_t element_size);

/// The 8 little-endian bytes of a header length, as the format starts a file.
/// @param[in] length  header length in bytes
std::string length_prefix(std::uint64_t length);

/// One tensor as the header describes it, with offsets resolved to the file.
struct tensor_entry {
  std::string name;
  io::dtype dtype = io::dtype::u8;
  std::size_t element_size = 0;  ///< bytes per element of `dtype`: dtype_size(dtype)
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;     ///< byte offset in the file (not in the data section)
  std::uint64_t byte_size = 0;  ///< product(shape) * element_size

  /// Number of elements: product(shape), 1 for a 0-d scalar.
  std::uint64_t element_count() const { return byte_size / element_size; }
};

/// A tensor to be written: what the header will say about it.
struct tensor_spec {
  std::string name;
  io::dtype dtype = io::dtype::u8;
  std::vector<std::int64_t> shape;
  std::uint64_t byte_size = 0;  ///< must equal product(shape) * dtype_size(dtype)
};

}  // namespace clp_transfer::io
