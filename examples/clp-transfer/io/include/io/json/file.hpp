// JSON files as the I/O layer reads them: whole, with a depth limit checked on the raw text
// before parsing, and every error of the JSON library turned into a malformed_file naming
// the file, so that no library message reaches the user without it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// Deeper nesting than any Hugging Face file has (theirs stay under 10 levels).
/// nlohmann::ordered_json copies values recursively when its vector of members grows, so a
/// config.json nested 200,000 deep (400 KB) overflowed the stack inside the parser itself.
inline constexpr std::size_t max_json_depth = 1000;

/// How deeply arrays and objects nest in JSON `text` (1 for a flat object), counted on the raw
/// text so that it can be checked before parsing. It agrees with the parser up to the first
/// syntax error, so the parser never nests deeper than this.
/// @param[in] text  JSON text (need not be valid)
std::size_t json_text_depth(std::string_view text);

/// The whole of `file`; throws io_error naming it when it cannot be opened. An empty file
/// (or a folder) reads as "": the JSON parser then says what is wrong.
/// @param[in] file  file to read
std::string read_text_file(const std::filesystem::path& file);

/// Throws malformed_file naming `file` when JSON `text` nests deeper than max_json_depth.
/// @param[in] file  the file `text` came from
/// @param[in] text  JSON text (need not be valid)
void check_json_depth(const std::filesystem::path& file, std::string_view text);

/// Parses a JSON file; throws naming the file when it cannot be read (io_error) or is not
/// JSON (malformed_file: a syntax error, a number too large for a double such as 9e999,
/// or nesting deeper than max_json_depth).
/// @tparam    Json  nlohmann::json (fast, sorted keys) or nlohmann::ordered_json (keeps the
///                  file's key order, but inserts in linear time: small files only)
/// @param[in] file  JSON file
template <class Json>
Json read_json_file(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  check_json_depth(file, text);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    malformed_json(file, "not valid JSON", error);
  }
}

/// The JSON file `file` when it exists, else nullopt; see read_json_file.
/// @param[in] file  JSON file that may be absent
template <class Json>
std::optional<Json> read_json_file_if_present(const std::filesystem::path& file) {
  std::error_code ignored;
  if (!std::filesystem::exists(file, ignored)) return std::nullopt;
  return read_json_file<Json>(file);
}

/// Runs `read`, which interprets JSON read from `file`, turning any nlohmann exception that
/// escapes it (a type or range error the checks did not foresee) into a malformed_file
/// naming `file`.
/// @param[in] file  the file `read` interprets
/// @param[in] read  callable; its result is returned
template <class Read>
auto naming_file(const std::filesystem::path& file, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& error) {
    malformed_json(file, "unexpected JSON content", error);
  }
}

/// The JSON value as an int64, or nullopt when it is not an integer in int64's range.
/// @param[in] value  any JSON value
template <class Json>
std::optional<std::int64_t> as_int64(const Json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.template get<std::uint64_t>() > std::uint64_t{INT64_MAX}) return std::nullopt;
  return value.template get<std::int64_t>();
}

}  // namespace clp_transfer::io
