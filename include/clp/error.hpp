// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>

/// Internal invariants (never caused by a caller) go through CLP_ASSERT; an includer may
/// define it first, for example to route it into their own assertion handler.
#ifndef CLP_ASSERT
#include <cassert>
#define CLP_ASSERT(condition) assert(condition)
#endif

namespace clp {

/// Every error a caller can cause (mismatched sizes, ids past a matrix, NaN input, an empty
/// vocabulary, a layout that cannot be viewed without a copy) throws clp::error, whose message
/// is one line naming the argument and the sizes involved.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {
[[noreturn]] inline void fail(const std::string& message) { throw error(message); }
}  // namespace detail

}  // namespace clp
