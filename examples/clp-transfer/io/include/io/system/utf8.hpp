// UTF-8 validity, checked where text enters the program from a binary format (a SentencePiece
// model's pieces, vocab.txt's lines, a pickle's tensor names): every token and tensor name the
// program holds is UTF-8, as those it reads from JSON are, so that any of them can be written
// into a JSON report or a safetensors header.
#pragma once

#include <cstddef>
#include <string_view>
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// Whether `text` is well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates
/// (U+D800-U+DFFF, which Python's "surrogatepass" writes), nothing past U+10FFFF.
/// @param[in] text  any bytes
inline bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    unsigned min = 0, max = 0;  // the range of the second byte, which rules out the bad forms
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, min = 0x80, max = 0xBF;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, min = lead == 0xE0 ? 0xA0 : 0x80, max = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, min = lead == 0xF0 ? 0x90 : 0x80, max = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < min || second > max) return false;
    for (std::size_t k = 2; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    i += length;
  }
  return true;
}

}  // namespace clp_transfer::io
