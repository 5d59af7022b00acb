// What the I/O and program suites check about a refusal that may come from the file layer: the
// error an action throws, an io::file_error (io_error, malformed_file, truncated_file) or a
// clp::error, with its kind, the file and tensor it names, and its one-line message.
#pragma once

#include <clp/error.hpp>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "io/errors.hpp"
#include "support/refusals.hpp"

namespace clp_test {

/// The kinds of io::file_error, by class.
enum class file_kind { io, malformed, truncated };

/// "I/O error", "malformed file", "truncated file": a kind of the file layer as a test reports it.
inline std::string kind_name(file_kind kind) {
  switch (kind) {
    case file_kind::io:
      return "I/O error";
    case file_kind::malformed:
      return "malformed file";
    case file_kind::truncated:
      break;
  }
  return "truncated file";
}

/// An error of the file layer or of the library, as caught.
struct file_refusal {
  std::string kind;          ///< kind_name of its kind
  clp::error_facts facts;    ///< file and tensor (and, for a clp::error, the rest)
  std::int64_t offset = -1;  ///< io::file_error::offset()
  std::string problem;
  std::string message;  ///< what()
};

/// The io::file_error or clp::error `action` throws, or nullopt when it throws none. Any other
/// exception passes through (and fails the test that ran it).
/// @param[in] action  callable taking no arguments, expected to throw
template <class Action>
std::optional<file_refusal> file_refusal_of(Action&& action) {
  namespace io = clp_transfer::io;
  const auto of = [](const io::file_error& e, file_kind kind) {
    return file_refusal{kind_name(kind), e.facts(), e.offset(), e.problem(), e.what()};
  };
  try {
    action();
  } catch (const io::truncated_file& e) {
    return of(e, file_kind::truncated);
  } catch (const io::malformed_file& e) {
    return of(e, file_kind::malformed);
  } catch (const io::io_error& e) {
    return of(e, file_kind::io);
  } catch (const clp::error& e) {
    return file_refusal{std::string(clp::error_kind_name(e.kind())), e.facts(), -1, e.problem(), e.what()};
  }
  return std::nullopt;
}

/// Checks a refusal about a file: its kind, the file it names, and its message (one line,
/// naming the file first, holding every key word).
/// @param[in] caught     file_refusal_of's result; there must be one
/// @param[in] kind       the kind it must have (file_kind, or clp::error_kind)
/// @param[in] file       the file it must name
/// @param[in] key_words  phrases its message must contain
template <class Kind>
void check_refusal(const std::optional<file_refusal>& caught, Kind kind, const std::filesystem::path& file,
                   std::initializer_list<std::string_view> key_words) {
  REQUIRE_MESSAGE(caught.has_value(), "nothing was refused");
  INFO("message: ", caught->message);
  CHECK(caught->kind == kind_name(kind));
  CHECK(caught->facts.file == file.string());
  check_message(caught->message, file, key_words);
}

}  // namespace clp_test
