// How the I/O layer (and the program on it) refuses a file: a clp::io_error when a system call
// on it failed, a clp::malformed_file when it was read but says something impossible, each
// naming the file (and the tensor in it) as facts, so that clp::error::message writes the one
// line "<file>: tensor "T" <problem>". And the formatters those problems share.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <clp/error.hpp>
#include <nlohmann/json.hpp>
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// The facts of an error about `file`, and about `tensor` in it when one is named.
/// @param[in] file    the file at fault
/// @param[in] tensor  a tensor inside it, or empty
inline clp::error_facts about(const std::filesystem::path& file, std::string tensor = {}) {
  clp::error_facts facts;
  facts.file = file.string();
  facts.tensor = std::move(tensor);
  return facts;
}

/// Throws clp::malformed_file: `file` was read, and says something impossible or inconsistent.
/// @param[in] file     the file at fault
/// @param[in] problem  what is wrong, without the file's name
/// @param[in] tensor   the tensor at fault inside `file`, or empty
[[noreturn]] inline void malformed(const std::filesystem::path& file, std::string problem, std::string tensor = {}) {
  throw clp::malformed_file(about(file, std::move(tensor)), std::move(problem));
}

/// Throws clp::io_error: `attempt` on `file` failed; the problem ends in the text of errno
/// ("cannot open: No such file or directory"). Call it right after the failed call.
/// @param[in] file     the file the call was about
/// @param[in] attempt  what was attempted: "cannot open", "reading the header"
[[noreturn]] inline void failed(const std::filesystem::path& file, const std::string& attempt) {
  const int code = errno;  // before anything below can change it
  throw clp::io_error(about(file), attempt + ": " + std::strerror(code));
}

/// A name or token as a JSON string literal: quoted, with control characters escaped and bytes
/// that are not UTF-8 replaced, so that any name stays unambiguous and printable in one line.
/// @param[in] text  any bytes
inline std::string quoted_name(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Throws clp::malformed_file for a JSON library exception: `what` ("not valid JSON") and the
/// parser's own text, which gives the byte position. nlohmann reports a number too large for a
/// double ("9e999") as out_of_range, not parse_error, so every nlohmann::json::exception comes
/// through here.
/// @param[in] file   the file being read
/// @param[in] what   what is wrong with it
/// @param[in] cause  the exception nlohmann threw
[[noreturn]] inline void malformed_json(const std::filesystem::path& file, const std::string& what,
                                        const nlohmann::json::exception& cause) {
  malformed(file, what + " (" + cause.what() + ")");
}

/// A JSON value as compact text for a message, cut to about 60 characters so that a huge value
/// cannot flood the line. Arrays and objects are only named: dump() recurses, and a value
/// nested a million deep would overflow the stack.
/// @param[in] value  any JSON value (nlohmann::json or ordered_json)
template <class Json>
std::string json_excerpt(const Json& value) {
  if (value.is_array()) return value.empty() ? "[]" : "an array";
  if (value.is_object()) return value.empty() ? "{}" : "an object";
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

/// "[2, 3]" for a shape, as messages show it.
/// @param[in] shape  dimensions
inline std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace clp_transfer::io
