// Checks of option values that CLI11's conversions let through.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace clp_transfer {

/// For an unsigned option: refuses a value with a minus sign, which the conversion to an
/// unsigned type would wrap (--seed -1 as 2^64 - 1, --add -3 as all the tokens), saying what the
/// option takes (`range`: "0 or more", "at least 1").
inline CLI::Validator not_negative(std::string range = "0 or more") {
  return CLI::Validator(
      [range](const std::string& value) {
        const std::size_t first = value.find_first_not_of(" \t");
        return first != std::string::npos && value[first] == '-' ? "must be " + range + ", got " + value
                                                                 : std::string();
      },
      "", "not negative");
}

/// For a numeric option: refuses an empty or blank value, which the conversion would take as 0
/// (--threads "" as all cores, --lambda "" as no ridge at all).
inline CLI::Validator a_number() {
  return CLI::Validator(
      [](const std::string& value) {
        return value.find_first_not_of(" \t") == std::string::npos ? std::string("needs a number, got an empty value")
                                                                   : std::string();
      },
      "", "a number");
}

}  // namespace clp_transfer
