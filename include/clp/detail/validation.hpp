// SPDX-License-Identifier: MIT
#pragma once

// Internal: the input checks shared by the kernels. Each throws clp::error with one line that
// names the function, the argument and the offending row or id.

#include <clp/detail/erased_view.hpp>
#include <clp/error.hpp>
#include <clp/finite.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace clp::detail {

/// Throws clp::non_finite_input naming `name`, the row and the column of the first (in `rows`
/// order) row of v with a NaN or infinite element. The rows are screened in parallel.
inline void require_finite_rows(const input_view& v, const char* name, const std::vector<Index>& rows, int threads,
                                const char* context) {
  const matrix_view<const void> view(
      v.data, static_cast<element_type>(v.kind), v.rows, v.cols,
      v.row_stride == 1 && v.rows > 1 ? v.col_stride : v.row_stride,
      v.row_stride == 1 && v.rows > 1 ? storage_order::column_major : storage_order::row_major);
  if (const auto at = find_non_finite(view, rows, threads))
    throw non_finite_input({context, "", "", name, at->row, at->column});
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
