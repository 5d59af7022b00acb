// Checks of option values that CLI11's conversions let through.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace clp_transfer {

/// For an unsigned option: refuses a value with a minus sign, which the conversion to an
/// unsigned type would wrap (--seed -1 as 2^64 - 1, --add -3 as all the tokens).
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](const std::string& value) {
        const std::size_t first = value.find_first_not_of(" \t");
        return first != std::string::npos && value[first] == '-' ? "must be 0 or more, got " + value : std::string();
      },
      "", "not negative");
}

}  // namespace clp_transfer
