// --undertrained: what a command does with the source rows its training barely saw
// (docs/undertrained.md), as `transfer` and `evaluate` read it, and the program's default.
#pragma once

#include <string>

#include "errors.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// What becomes of a shared token whose source row is flagged as under-trained.
enum class undertrained_mode {
  synthesise,  ///< screened, listed, and synthesised like a missing token; flagged rows leave every fit
  keep,        ///< not screened: the row is copied, as eq. 2 says
  report,      ///< screened and listed, but copied and fitted as with keep
};

/// The mode the program uses unless told otherwise (docs/undertrained.md says why, and gives the
/// rule and the measurement that decide it).
inline constexpr undertrained_mode default_undertrained = undertrained_mode::synthesise;

/// The mode's command-line name.
inline const char* undertrained_name(undertrained_mode mode) {
  switch (mode) {
    case undertrained_mode::synthesise:
      return "synthesise";
    case undertrained_mode::keep:
      return "keep";
    case undertrained_mode::report:
      break;
  }
  return "report";
}

/// --undertrained as given; throws naming the option for any other value.
inline undertrained_mode parse_undertrained(const std::string& name) {
  if (name == "synthesise") return undertrained_mode::synthesise;
  if (name == "keep") return undertrained_mode::keep;
  if (name == "report") return undertrained_mode::report;
  throw clp::invalid_argument(option_facts("--undertrained"), "must be synthesise, keep or report, not '" + name + "'");
}

/// --undertrained's help, the same in every command that takes it.
inline constexpr const char* undertrained_help =
    "synthesise | keep | report: shared tokens whose source rows look under-trained (tiny norms, or gathered in "
    "one direction) are synthesised like missing ones and left out of every fit, copied unscreened, or listed "
    "but copied";

}  // namespace clp_transfer
