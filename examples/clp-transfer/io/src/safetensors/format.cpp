#include "io/safetensors/format.hpp"

namespace clp_transfer::io {

namespace detail {

const dtype_info* find_dtype(dtype type) {
  for (const dtype_info& info : dtype_table)
    if (info.type == type) return &info;
  return nullptr;
}

}  // namespace detail

std::optional<dtype> parse_dtype(std::string_view name) {
  for (const detail::dtype_info& info : detail::dtype_table)
    if (info.name == name) return info.type;
  return std::nullopt;
}

std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& shape, std::size_t element_size) {
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) return std::nullopt;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::uint64_t count = 1;
  for (std::int64_t d : shape) {
    if (count > max_tensor_bytes / element_size / static_cast<std::uint64_t>(d)) return std::nullopt;
    count *= static_cast<std::uint64_t>(d);
  }
  return count;
}

std::string length_prefix(std::uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(length >> (8 * i));
  return bytes;
}

}  // namespace clp_transfer::io
