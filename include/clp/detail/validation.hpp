// SPDX-License-Identifier: MIT
#pragma once

// Internal: the input checks shared by the kernels. Each throws clp::error with one line that
// names the function, the argument and the offending row or id.

#include <clp/detail/erased_view.hpp>
#include <clp/detail/parallel.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace clp::detail {

/// Throws naming the first (lowest listed) row of v among `rows` with a NaN or infinite
/// element. The rows are screened in parallel, in chunks.
inline void require_finite_rows(const input_view& v, const char* name, const std::vector<Index>& rows, int threads,
                                const char* context) {
  constexpr Index chunk = 1024;
  const Index n = static_cast<Index>(rows.size());
  std::vector<Index> first_bad((n + chunk - 1) / chunk, -1);  // per chunk: position in rows
  parallel_for(Index(first_bad.size()), threads, [&](Index k, int) {
    for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i)
      if (first_non_finite(v, rows[i]) >= 0) {
        first_bad[k] = i;
        return;
      }
  });
  for (Index i : first_bad)
    if (i >= 0) {
      const Index r = rows[i];
      fail(std::string(context) + ": '" + name + "' row " + std::to_string(r) + " column " +
           std::to_string(first_non_finite(v, r)) + " is NaN or infinite");
    }
}

/// Throws unless every id is in [0, rows) and the ids ascend strictly.
inline void check_sorted_ids(const std::vector<Index>& ids, Index rows, const char* what, const char* matrix,
                             const char* context) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows)
      fail(std::string(context) + ": " + what + " id " + std::to_string(ids[i]) + " is outside the " +
           std::to_string(rows) + " rows of '" + matrix + "'");
    if (i > 0 && ids[i] <= ids[i - 1])
      fail(std::string(context) + ": " + what + " ids are not strictly ascending at position " + std::to_string(i));
  }
}

/// Throws unless every id is in [0, rows) of `matrix`.
inline void check_ids(const std::vector<Index>& ids, Index rows, const char* what, const char* matrix,
                      const char* context) {
  for (Index id : ids)
    if (id < 0 || id >= rows)
      fail(std::string(context) + ": " + what + " id " + std::to_string(id) + " is outside the " +
           std::to_string(rows) + " rows of '" + matrix + "'");
}

}  // namespace clp::detail
