// How the extend modules refuse what they are given: a tokenizer that says something impossible
// is an io::malformed_file (the file layer's), one that is well formed but uses what extend does not support (or a
// choice of tokens that cannot be met) a clp::invalid_argument. Each names `origin`, the file or
// option the caller read the value from, so that the message is the one line "<origin>: ...".
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <clp/error.hpp>

#include "extend/characters.hpp"
#include "io/errors.hpp"

namespace clp_transfer::extend {

/// Throws io::malformed_file: `origin` says something impossible or inconsistent.
/// @param[in] origin   the file the caller read the value from ("en/tokenizer.json")
/// @param[in] problem  what is wrong, without the file's name
[[noreturn]] inline void malformed_tokenizer(const std::string& origin, std::string problem) {
  throw io::malformed_file(origin, std::move(problem));
}

/// Throws clp::invalid_argument: `origin` is well formed, but extend cannot do what it asks.
/// @param[in] origin   the file the value was read from, or an option ("--tokens")
/// @param[in] problem  what is not supported, without the origin's name
[[noreturn]] inline void unsupported(const std::string& origin, std::string problem) {
  clp::error_facts facts;
  if (!origin.empty() && origin.front() == '-')
    facts.argument = origin;
  else
    facts.file = origin;
  throw clp::invalid_argument(std::move(facts), std::move(problem));
}

/// A token or name as a JSON string literal, for a one-line message: quoted, with control
/// characters escaped and each byte that is not UTF-8 written \xNN.
/// @param[in] text  any bytes
inline std::string quoted_token(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const text_character& c : decode_characters(text)) {
    if (c.code_point == not_a_character) {
      const auto byte = static_cast<unsigned char>(text[c.offset]);
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 15];
    } else {
      const std::string one = clp::error::quoted(text.substr(c.offset, c.size));
      out.append(one, 1, one.size() - 2);
    }
  }
  return out + "\"";
}

}  // namespace clp_transfer::extend
