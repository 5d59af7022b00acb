// Safetensors files as bytes, written from the format's definition for tests that build or break
// them by hand: an 8-byte little-endian header length, the JSON header, the data section. Shares
// no code with the reader it tests.
#pragma once

#include <cstdint>
#include <string>

namespace clp_test {

/// The 8 little-endian bytes of a header length.
inline std::string length_prefix(std::uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(length >> (8 * i) & 0xff);
  return bytes;
}

/// The header length a file's first 8 bytes give.
inline std::uint64_t header_length(const std::string& bytes) {
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return length;
}

/// A safetensors file's two parts: its header text and its data section.
struct safetensors_parts {
  std::string header, data;
};

/// The parts of the bytes of a safetensors file.
inline safetensors_parts split_safetensors(const std::string& bytes) {
  const std::uint64_t length = header_length(bytes);
  return {bytes.substr(8, length), bytes.substr(8 + length)};
}

/// The bytes of a safetensors file with header text `header` (its length prefix computed) and
/// data section `data`.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return length_prefix(header.size()) + header + data;
}

}  // namespace clp_test
