// The one error_of and thrown of the test suites (core, diagnostics, I/O, program): what a call
// throws.
#pragma once

#include <clp/error.hpp>

#include <optional>
#include <string>

namespace clp_test {

/// The what() of the Exception `action` throws, or "" when it throws none. Any other exception
/// passes through (and fails the test that ran it), so a check of the message also checks the
/// type. Exception is clp::error, every error a caller of the library can cause; name another,
/// error_of<std::runtime_error>(...), for code that throws one.
/// @param[in] action  callable taking no arguments, expected to throw
template <class Exception = clp::error, class Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Exception& e) {
    return e.what();
  }
  return "";
}

/// A copy of the Error `action` throws, or nullopt when it throws none, for checks of its kind
/// and facts. Any other exception passes through (and fails the test that ran it).
template <class Error = clp::error, class Action>
std::optional<Error> thrown(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace clp_test
