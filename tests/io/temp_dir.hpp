// Test helpers shared by the I/O tests: a private temporary directory per test, and checks
// for the one-line "<file>: <problem>" errors the I/O layer promises.
#pragma once

#include "../support/error_of.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <doctest/doctest.h>
#include <clp/error.hpp>

#include "../support/temp_dir.hpp"

using clp_test::temp_dir;

/// Writes `bytes` to `file`, replacing it.
/// @param[in] file   file to write
/// @param[in] bytes  contents
inline void write_file(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The file's contents.
/// @param[in] file  file to read
inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The what() of the clp::error (io::error included) an action throws: the suites' one helper.
using clp_test::error_of;

/// Checks that `message` is one line starting with "<file>: " and holding every key word.
/// @param[in] message    an error message
/// @param[in] file       the file it must name first
/// @param[in] key_words  phrases it must contain
inline void check_error(const std::string& message, const std::filesystem::path& file,
                        std::initializer_list<std::string_view> key_words) {
  INFO("message: ", message);
  CHECK(message.rfind(file.string() + ": ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  for (std::string_view word : key_words) {
    INFO("key word: ", word);
    CHECK(message.find(word) != std::string::npos);
  }
}
