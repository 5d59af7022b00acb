// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The screen for NaN and infinite elements that every kernel runs on the rows it reads,
/// public so that a caller screens the rest of a matrix (the rows no kernel reads) the same
/// way, and names the matrix in its own words: a checkpoint's file and tensor, say.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/matrices/non_finite_scan.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>

#include <optional>
#include <vector>

namespace clp {

/// Where an element sits in a matrix.
struct matrix_position {
  Index row = 0, column = 0;
};

/// The first NaN or infinite element of `m` (as float32: a double past float's range counts)
/// among rows `rows`, the row first in `rows` order, then its first such column; nullopt when
/// there is none. Rows are screened in parallel, in chunks; the answer does not depend on the
/// thread count.
/// @param[in] m        #rows by d, anything make_view accepts (a matrix_view<const void> too)
/// @param[in] rows     row ids to screen, each below #rows (not checked)
/// @param[in] threads  workers, 0: all hardware threads
template <class Matrix>
std::optional<matrix_position> find_non_finite(const Matrix& m, const std::vector<Index>& rows, int threads = 0) {
  const matrix_view<const void> v = make_view(m);
  const Index row = detail::first_non_finite_row(v, rows, threads);
  if (row < 0) return std::nullopt;
  return matrix_position{row, detail::first_non_finite_column(v, row)};
}

/// The same over every row of `m`.
/// @param[in] m        #rows by d, anything make_view accepts
/// @param[in] threads  workers, 0: all hardware threads
template <class Matrix>
std::optional<matrix_position> find_non_finite(const Matrix& m, int threads = 0) {
  const matrix_view<const void> view = make_view(m);
  std::vector<Index> rows(static_cast<std::size_t>(view.rows()));
  for (Index r = 0; r < view.rows(); ++r) rows[static_cast<std::size_t>(r)] = r;
  return find_non_finite(view, rows, threads);
}

}  // namespace clp
