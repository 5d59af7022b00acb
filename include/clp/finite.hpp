// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The screen for NaN and infinite elements that every kernel runs on the rows it reads,
/// public so that a caller screens the rest of a matrix (the rows no kernel reads) the same
/// way, and names the matrix in its own words: a checkpoint's file and tensor, say.

#include <clp/detail/erased_view.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <algorithm>
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
/// @param[in] m        #rows by d, anything make_view accepts
/// @param[in] rows     row ids to screen, each below #rows (not checked)
/// @param[in] threads  workers, 0: all hardware threads
template <class Matrix>
std::optional<matrix_position> find_non_finite(const Matrix& m, const std::vector<Index>& rows, int threads = 0) {
  const detail::input_view v = detail::input_view::from(make_view(m));
  constexpr Index chunk = 1024;
  const Index n = static_cast<Index>(rows.size());
  std::vector<Index> first_bad(static_cast<std::size_t>((n + chunk - 1) / chunk), -1);  // per chunk: position in rows
  parallel_for(Index(first_bad.size()), resolve_threads(threads), [&](Index k, int) {
    for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i)
      if (detail::first_non_finite(v, rows[static_cast<std::size_t>(i)]) >= 0) {
        first_bad[static_cast<std::size_t>(k)] = i;
        return;
      }
  });
  for (Index i : first_bad)
    if (i >= 0) {
      const Index r = rows[static_cast<std::size_t>(i)];
      return matrix_position{r, detail::first_non_finite(v, r)};
    }
  return std::nullopt;
}

/// The same over every row of `m`.
template <class Matrix>
std::optional<matrix_position> find_non_finite(const Matrix& m, int threads = 0) {
  const auto view = make_view(m);
  std::vector<Index> rows(static_cast<std::size_t>(view.rows()));
  for (Index r = 0; r < view.rows(); ++r) rows[static_cast<std::size_t>(r)] = r;
  return find_non_finite(view, rows, threads);
}

}  // namespace clp
