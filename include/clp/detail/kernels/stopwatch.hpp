// SPDX-License-Identifier: MIT
#pragma once

// Internal: wall seconds since construction, for the reports' step timings.
#include <clp/detail/internal_header_check.hpp>

#include <chrono>

namespace clp::detail {

class stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(clock::now() - started_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point started_ = clock::now();
};

}  // namespace clp::detail
