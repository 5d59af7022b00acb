// The characters of a text as a byte-level BPE pre-tokenizer's regular expression sees them:
// UTF-8 decoded into code points, each a letter (\p{L}), a number (\p{N}), whitespace (\s) or
// something else. Bytes that are not UTF-8 stay one "character" each, so that any byte string
// can be split (a byte-level token may hold part of a character).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extend/unicode_classes.hpp"

namespace clp_transfer::extend {

/// One character of a text: its code point and where its bytes are.
struct text_character {
  /// The code point, or not_a_character for a byte that is not part of valid UTF-8.
  char32_t code_point;
  std::size_t offset, size;  ///< its bytes in the text
};

/// The code point of a byte that is not valid UTF-8 (past U+10FFFF, so no class claims it).
inline constexpr char32_t not_a_character = 0x110000;

/// The length of the UTF-8 sequence that `lead` starts, or 0 for a byte that starts none.
constexpr std::size_t utf8_sequence_size(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

/// The characters of `text`, in order; an invalid, overlong or truncated sequence gives one
/// not_a_character per byte.
/// @param[in] text  any bytes
inline std::vector<text_character> decode_characters(std::string_view text) {
  std::vector<text_character> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t size = utf8_sequence_size(lead);
    char32_t code = size == 1 ? lead : size == 2 ? lead & 0x1Fu : size == 3 ? lead & 0x0Fu : lead & 0x07u;
    bool valid = size != 0 && i + size <= text.size();
    for (std::size_t k = 1; valid && k < size; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      code = (code << 6) | (next & 0x3Fu);
    }
    // Overlong three- and four-byte forms, surrogates and code points past U+10FFFF.
    if (valid && size == 3) valid = code >= 0x800 && !(code >= 0xD800 && code <= 0xDFFF);
    if (valid && size == 4) valid = code >= 0x10000 && code <= 0x10FFFF;
    if (valid) {
      out.push_back({code, i, size});
      i += size;
    } else {
      out.push_back({not_a_character, i, 1});
      ++i;
    }
  }
  return out;
}

/// Whether `text` is valid UTF-8 throughout.
inline bool is_utf8(std::string_view text) {
  const auto characters = decode_characters(text);
  return std::none_of(characters.begin(), characters.end(),
                      [](const text_character& c) { return c.code_point == not_a_character; });
}

/// The UTF-8 bytes of `code_point` (below U+110000).
inline std::string utf8_of(char32_t code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
  return out;
}

/// \s of the regular expressions (Unicode's White_Space property).
constexpr bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/// Whether `c` is a letter, a number or neither (whitespace included), by the generated table.
/// A byte that is not UTF-8 counts as a letter: inside a token it is a piece of a character,
/// and most such pieces in a vocabulary are pieces of letters.
inline character_class class_of(char32_t c) {
  if (c == not_a_character) return character_class::letter;
  const auto& table = detail::unicode_ranges;
  const auto it = std::upper_bound(table.begin(), table.end(), c,
                                   [](char32_t value, const character_range& range) { return value < range.first; });
  if (it == table.begin()) return character_class::other;
  const character_range& range = *(it - 1);
  return c <= range.last ? range.kind : character_class::other;
}

inline bool is_letter(char32_t c) { return class_of(c) == character_class::letter; }
inline bool is_number(char32_t c) { return class_of(c) == character_class::number; }
/// [^\s\p{L}\p{N}]: neither whitespace, a letter nor a number.
inline bool is_other(char32_t c) { return !is_whitespace(c) && class_of(c) == character_class::other; }

}  // namespace clp_transfer::extend
