// The errors of the file layer, its own small hierarchy under io::file_error (a
// std::runtime_error): io_error when a system call on a file failed, malformed_file when a file
// was read but says something impossible, truncated_file when it ends before its own contents
// say it should. Each carries its facts as fields (the file, the tensor in it, the byte offset
// where known) and a one-line message for people built from them in one place, in the form the
// library's errors use: "<file>: tensor "T" <problem>". And the formatters those problems share.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <clp/error.hpp>
#include <nlohmann/json.hpp>

#include "io/library_names.hpp"

namespace clp_transfer::io {

/// The base of every error of the file layer: something is wrong with one file.
class file_error : public std::runtime_error {
 public:
  /// @param[in] file     the file at fault
  /// @param[in] problem  what is wrong, without the file's name: "cannot open: No such file"
  /// @param[in] tensor   the tensor at fault inside `file`, or empty
  /// @param[in] offset   the byte of `file` at fault, or -1 where unknown
  file_error(std::filesystem::path file, std::string problem, std::string tensor = {}, std::int64_t offset = -1);

  const std::filesystem::path& file() const noexcept { return file_; }
  /// The tensor at fault inside file(), or empty.
  const std::string& tensor() const noexcept { return tensor_; }
  /// The byte of file() at fault, or -1 where the reader does not know it.
  std::int64_t offset() const noexcept { return offset_; }
  /// What is wrong, without where.
  const std::string& problem() const noexcept { return problem_; }
  /// The file and tensor as the library's errors name them, for a program that reports an error
  /// of the library about data read from this file.
  clp::error_facts facts() const;

 private:
  std::filesystem::path file_;
  std::string tensor_;
  std::int64_t offset_;
  std::string problem_;
};

/// A file that cannot be opened, listed, read or written: a failed system call, whose reason the
/// problem ends with (strerror).
class io_error : public file_error {
 public:
  using file_error::file_error;
};

/// A file that was read but is wrong: not JSON, a header that lies about its sizes, a tensor of
/// the wrong shape, an id a vocabulary uses twice, an archive that is no torch checkpoint.
class malformed_file : public file_error {
 public:
  using file_error::file_error;
};

/// A file that ends before its own contents say it should (a download cut short): the size it
/// has and the size its header or directory needs.
class truncated_file : public malformed_file {
 public:
  /// @param[in] file           the file at fault
  /// @param[in] expected_size  the bytes its contents say it holds
  /// @param[in] actual_size    the bytes it holds
  /// @param[in] needs          what runs to byte expected_size: "the header", "tensor \"x\""
  truncated_file(std::filesystem::path file, std::uint64_t expected_size, std::uint64_t actual_size,
                 const std::string& needs);

  std::uint64_t expected_size() const noexcept { return expected_size_; }
  std::uint64_t actual_size() const noexcept { return actual_size_; }

 private:
  std::uint64_t expected_size_, actual_size_;
};

/// The facts of an error of the library about `file`, and about `tensor` in it when one is
/// named (a clp::invalid_argument the layer throws, an origin the program maps).
/// @param[in] file    the file at fault
/// @param[in] tensor  a tensor inside it, or empty
clp::error_facts about(const std::filesystem::path& file, std::string tensor = {});

/// Throws malformed_file: `file` was read, and says something impossible or inconsistent.
/// @param[in] file     the file at fault
/// @param[in] problem  what is wrong, without the file's name
/// @param[in] tensor   the tensor at fault inside `file`, or empty
[[noreturn]] void malformed(const std::filesystem::path& file, std::string problem, std::string tensor = {});

/// Throws io_error: `attempt` on `file` failed; the problem ends in the text of errno
/// ("cannot open: No such file or directory"). Call it right after the failed call.
/// @param[in] file     the file the call was about
/// @param[in] attempt  what was attempted: "cannot open", "reading the header"
[[noreturn]] void failed(const std::filesystem::path& file, const std::string& attempt);

/// Throws io_error for a path the user named that does not exist: "no such file or folder", the
/// one wording of every command.
/// @param[in] path  the missing file or folder
[[noreturn]] void missing_path(const std::filesystem::path& path);

/// Throws io_error for a model folder that is not one: as missing_path when nothing is at
/// `path`, "not a folder" when something else is.
/// @param[in] path  what should be a model folder
[[noreturn]] void missing_folder(const std::filesystem::path& path);

/// Throws malformed_file for a JSON library exception, as "line L column C: <what>: <the
/// parser's reason>" when the parser gives a position, else "<what>: <reason>"; never the
/// library's own error codes. nlohmann reports a number too large for a double ("9e999") as
/// out_of_range, not parse_error, so every nlohmann::json::exception comes through here.
/// @param[in] file   the file being read
/// @param[in] what   what is wrong with it: "not valid JSON", "header is not valid JSON"
/// @param[in] cause  the exception nlohmann threw
[[noreturn]] void malformed_json(const std::filesystem::path& file, const std::string& what,
                                 const nlohmann::json::exception& cause);

/// The reason in a message of nlohmann::json, without its "[json.exception.parse_error.101]"
/// code and, as "line L column C: " in front, its "parse error at line L, column C: " position.
/// @param[in] message  what() of a nlohmann::json::exception
std::string json_reason(std::string_view message);

/// A name or token as a JSON string literal: quoted, with control characters escaped and bytes
/// that are not UTF-8 replaced, so that any name stays unambiguous and printable in one line.
/// A name past 80 bytes is cut to its first 60 and marked, `"abc..." (1000000 bytes)`, so that
/// a huge token in a file cannot make a message of the file's size.
/// @param[in] text  any bytes
std::string quoted_name(std::string_view text);

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
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace clp_transfer::io
