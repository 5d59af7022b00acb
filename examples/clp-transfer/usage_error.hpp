// What the program throws for an option value it cannot use.
#pragma once

#include <clp/error.hpp>

namespace clp::program {

/// An option's value out of range or unknown (--threads -1, --match fuzzy): one line naming
/// the option. A clp::error, like io::error for files, so that every error the program
/// reports shares one base.
class usage_error : public clp::error {
 public:
  using clp::error::error;
};

}  // namespace clp::program
