// What the program throws for an option value it cannot use.
#pragma once

#include <clp/error.hpp>

#include <string>
#include <utility>

namespace clp::program {

/// An option's value out of range or unknown (--threads -1, --match fuzzy): one line naming
/// the option. A clp::error, like io::error for files, so that every error the program
/// reports shares one base.
class usage_error : public clp::invalid_argument {
 public:
  explicit usage_error(std::string message) : clp::invalid_argument({}, std::move(message)) {}
};

}  // namespace clp::program
