// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What the paper's baselines draw from: embedding rows from a normal distribution with the
/// source embeddings' per-dimension mean and standard deviation. The baselines themselves
/// ("transfer without a helper model", a fresh random start) are ready made in
/// <clp/baselines.hpp>. Every draw comes from SplitMix64 (<clp/splitmix64.hpp>).

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <cstdint>
#include <vector>

namespace clp {

/// Per-column mean and (population) standard deviation of a matrix, in double.
struct column_statistics {
  std::vector<double> mean;
  std::vector<double> stddev;
};

}  // namespace clp

// The statistics and the draws, which fill and read column_statistics.
#include <clp/detail/baselines/random_rows.hpp>

namespace clp {

/// The per-column statistics of `matrix`, in double.
/// @param[in] matrix  #rows by d, any type make_view accepts; at least one row
/// @return d means and d standard deviations
/// @throws clp::invalid_argument (argument "matrix") for a matrix without rows
template <class Matrix>
column_statistics column_statistics_of(const Matrix& matrix) {
  const matrix_view<const void> v = make_view(matrix);
  if (v.rows() < 1)
    throw invalid_argument(error_facts::in("clp::column_statistics_of").with_argument("matrix"), "has no rows");
  return detail::statistics_of_columns(v);
}

/// Fills rows `rows` of `output` with N(stats.mean[c], stats.stddev[c]) draws. The value at
/// (r, c) depends only on seed, r and c.
///
/// @param[in]  stats   per-column statistics, d columns (column_statistics_of(source))
/// @param[out] output  #target_rows by d
/// @param[in]  rows    target rows to fill, each < #target_rows
/// @param[in]  seed    any value; the same seed gives the same rows
/// @throws clp::invalid_argument for statistics of another width (argument "output") or a row
///         outside `output` (argument "rows", row the id)
template <class Output>
void random_rows(const column_statistics& stats, Output&& output, const std::vector<Index>& rows, std::uint64_t seed) {
  const matrix_view<void> out = make_view(output);
  detail::check_random_rows(stats, out, rows, "clp::random_rows");
  detail::draw_rows(stats, out, rows, seed);
}

}  // namespace clp
