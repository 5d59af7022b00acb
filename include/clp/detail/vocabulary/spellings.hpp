// SPDX-License-Identifier: MIT
#pragma once

// Internal, vocabulary: the readers of each spelling behind clp::append_token_bytes
// (<clp/token_bytes.hpp>): GPT-2's byte-level alphabet built from its definition,
// SentencePiece's space mark and byte pieces, WordPiece's continuation mark.
#include <clp/detail/internal_header_check.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace clp::detail {

/// GPT-2's byte-level alphabet, built from its definition: true for the bytes written as the
/// character with their own code point.
constexpr bool byte_level_self(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/// The 68 bytes that are not byte_level_self, in increasing order: entry n is written U+0100 + n.
constexpr std::array<unsigned char, 68> byte_level_shifted() {
  std::array<unsigned char, 68> shifted{};
  std::size_t n = 0;
  for (unsigned b = 0; b < 256; ++b)
    if (!byte_level_self(b)) shifted[n++] = static_cast<unsigned char>(b);
  return shifted;
}

inline constexpr std::array<unsigned char, 68> byte_level_shifted_bytes = byte_level_shifted();
static_assert(byte_level_shifted_bytes[32] == 0x20, "U+0120 'G-dot' is a space");
static_assert(byte_level_shifted_bytes[67] == 0xAD, "U+0143 is the last byte, the soft hyphen");

/// Appends the bytes of a byte-level token; false (and `out` as it was) when a character is
/// outside the alphabet or the UTF-8 is malformed.
inline bool append_byte_level(std::string_view token, std::string& out) {
  const std::size_t start = out.size();
  for (std::size_t i = 0; i < token.size();) {
    const auto lead = static_cast<unsigned char>(token[i]);
    unsigned code_point = lead;
    if (lead < 0x80) {
      ++i;
    } else {
      // Every other character of the alphabet is below U+0144: two UTF-8 bytes, lead 0xC2-0xC5.
      const bool two_bytes = lead >= 0xC2 && lead <= 0xC5 && i + 1 < token.size() &&
                             (static_cast<unsigned char>(token[i + 1]) & 0xC0) == 0x80;
      if (!two_bytes) break;
      code_point = ((lead & 0x1Fu) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3Fu);
      i += 2;
    }
    if (code_point < 0x100 && byte_level_self(code_point)) {
      out += static_cast<char>(code_point);
    } else if (code_point >= 0x100 && code_point < 0x100 + byte_level_shifted_bytes.size()) {
      out += static_cast<char>(byte_level_shifted_bytes[code_point - 0x100]);
    } else {
      break;  // a raw space or control character, or a character past U+0143
    }
    if (i == token.size()) return true;
  }
  if (token.empty()) return true;
  out.resize(start);
  return false;
}

inline int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

inline void append_sentencepiece(std::string_view token, std::string& out) {
  if (token.size() == 6 && token.substr(0, 3) == "<0x" && token[5] == '>') {
    const int high = hex_digit(token[3]), low = hex_digit(token[4]);
    if (high >= 0 && low >= 0) {
      out += static_cast<char>(high * 16 + low);
      return;
    }
  }
  constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581
  for (std::size_t from = 0;;) {
    const std::size_t mark = token.find(space_mark, from);
    out.append(token.substr(from, mark == std::string_view::npos ? std::string_view::npos : mark - from));
    if (mark == std::string_view::npos) return;
    out += ' ';
    from = mark + space_mark.size();
  }
}

inline void append_wordpiece(std::string_view token, std::string& out) {
  if (token.substr(0, 2) == "##") {
    // A lone "##" continues nothing: it is the plain string.
    out.append(token.size() > 2 ? token.substr(2) : token);
    return;
  }
  if (!token.empty()) out += ' ';
  out.append(token);
}

}  // namespace clp::detail
