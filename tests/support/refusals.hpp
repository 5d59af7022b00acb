// What the suites check about a refusal: the clp::error an action throws, its kind and its facts
// (the file, tensor, row and argument at fault), and its one-line message. Shared by the core,
// I/O and program suites.
#pragma once

#include <clp/error.hpp>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "error_of.hpp"

namespace clp_test {

/// A clp::error as caught, with what a test asserts about it.
struct refusal {
  clp::error_kind kind;
  clp::error_facts facts;
  std::string problem;
  std::string message;  ///< what()
};

/// The clp::error `action` throws, or nullopt when it throws none. Any other exception passes
/// through (and fails the test that ran it).
/// @param[in] action  callable taking no arguments, expected to throw
template <class Action>
std::optional<refusal> refusal_of(Action&& action) {
  try {
    action();
  } catch (const clp::error& e) {
    return refusal{e.kind(), e.facts(), e.problem(), e.what()};
  }
  return std::nullopt;
}

/// "malformed file", "I/O error": a kind as a test reports it.
inline std::string kind_name(clp::error_kind kind) { return std::string(clp::error_kind_name(kind)); }

/// Checks that `message` is one line starting with "<file>: " and holding every key word.
/// @param[in] message    an error message
/// @param[in] file       the file it must name first
/// @param[in] key_words  phrases it must contain
inline void check_message(const std::string& message, const std::filesystem::path& file,
                          std::initializer_list<std::string_view> key_words) {
  INFO("message: ", message);
  CHECK(message.rfind(file.string() + ": ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  for (std::string_view word : key_words) {
    INFO("key word: ", word);
    CHECK(message.find(word) != std::string::npos);
  }
}

/// Checks a refusal about a file: its kind, facts().file, and its message (one line, naming the
/// file first, holding every key word).
/// @param[in] caught     refusal_of's result; there must be one
/// @param[in] kind       the kind it must have
/// @param[in] file       the file its facts must name
/// @param[in] key_words  phrases its message must contain
inline void check_refusal(const std::optional<refusal>& caught, clp::error_kind kind, const std::filesystem::path& file,
                          std::initializer_list<std::string_view> key_words) {
  REQUIRE_MESSAGE(caught.has_value(), "nothing was refused");
  INFO("message: ", caught->message);
  CHECK(kind_name(caught->kind) == kind_name(kind));
  CHECK(caught->facts.file == file.string());
  check_message(caught->message, file, key_words);
}

}  // namespace clp_test
