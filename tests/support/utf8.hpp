// SPDX-License-Identifier: MIT
#pragma once

// The UTF-8 encoding of one code point, written from the definition (RFC 3629) for the tests'
// own spellings of tokens; shares no code with the library.

#include <cstdint>
#include <string>

namespace clp_test {

/// Appends the UTF-8 bytes of code point cp (at most U+10FFFF) to out.
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

/// The UTF-8 bytes of code point cp.
inline std::string utf8(std::uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

}  // namespace clp_test
