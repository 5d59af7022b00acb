// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The screen for NaN and infinite elements that every kernel runs on the rows it reads,
/// public so that a caller screens the rest of a matrix (the rows no kernel reads) the same
/// way, and names the matrix in its own words: a checkpoint's file and tensor, say.

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace clp {

/// Where an element sits in a matrix.
struct matrix_position {
  Index row = 0, column = 0;
};

namespace detail {

/// The position of the first non-finite element of the contiguous data[0..n) (as float32: a
/// double past float's range counts), or -1. Screens with x * 0, which is 0 for every finite x
/// and NaN otherwise, added over independent lanes (vectorised, no early exit); the position
/// is looked for only when the screen fails.
template <class T>
Index first_non_finite_element(const T* data, Index n) {
  constexpr int lanes = 16;
  float screen[lanes] = {};
  Index i = 0;
  for (; i + lanes <= n; i += lanes)
    for (int l = 0; l < lanes; ++l) screen[l] += static_cast<float>(data[i + l]) * 0.0f;
  for (; i < n; ++i) screen[0] += static_cast<float>(data[i]) * 0.0f;
  float total = 0;
  for (float x : screen) total += x;
  if (total == 0) return -1;
  for (i = 0; i < n; ++i)
    if (!std::isfinite(static_cast<float>(data[i]))) return i;
  return -1;
}

/// The first non-finite column of row r of v (as float32), or -1.
inline Index first_non_finite_column(const matrix_view<const void>& v, Index r) {
  return visit_element_type(v.type(), [&](auto* tag) -> Index {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* row = static_cast<const T*>(v.data()) + r * v.row_stride();
    const Index stride = v.col_stride();
    if (stride == 1) return first_non_finite_element(row, v.cols());
    for (Index c = 0; c < v.cols(); ++c)
      if (!std::isfinite(static_cast<float>(row[c * stride]))) return c;
    return -1;
  });
}

}  // namespace detail

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
  constexpr Index chunk = 1024;
  const Index n = static_cast<Index>(rows.size());
  std::vector<Index> first_bad(static_cast<std::size_t>((n + chunk - 1) / chunk), -1);  // per chunk: position in rows
  parallel_for(Index(first_bad.size()), resolve_threads(threads), [&](Index k, int) {
    for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i)
      if (detail::first_non_finite_column(v, rows[static_cast<std::size_t>(i)]) >= 0) {
        first_bad[static_cast<std::size_t>(k)] = i;
        return;
      }
  });
  for (Index i : first_bad)
    if (i >= 0) {
      const Index r = rows[static_cast<std::size_t>(i)];
      return matrix_position{r, detail::first_non_finite_column(v, r)};
    }
  return std::nullopt;
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
