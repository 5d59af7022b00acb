// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What the paper's baselines draw from: embedding rows from a normal distribution with the
/// source embeddings' per-dimension mean and standard deviation. The baselines themselves
/// ("transfer without a helper model", a fresh random start) are ready made in
/// <clp/baselines.hpp>.
#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/matrices/rows.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace clp {

/// Per-column mean and (population) standard deviation of a matrix, in double.
struct column_statistics {
  std::vector<double> mean;
  std::vector<double> stddev;
};

/// @param[in] matrix  #rows by d, any type make_view accepts; at least one row
/// @throws clp::invalid_argument (argument "matrix") for a matrix without rows
template <class Matrix>
column_statistics column_statistics_of(const Matrix& matrix) {
  const matrix_view<const void> v = make_view(matrix);
  if (v.rows() < 1)
    throw invalid_argument(error_facts::in("clp::column_statistics_of").with_argument("matrix"), "has no rows");
  const std::size_t cols = std::size_t(v.cols());
  column_statistics stats{std::vector<double>(cols, 0.0), std::vector<double>(cols, 0.0)};
  std::vector<float> row(cols);
  // Two passes (mean, then squared deviations): no cancellation for large means.
  for (Index r = 0; r < v.rows(); ++r) {
    detail::load_row(v, r, row.data());
    for (std::size_t c = 0; c < cols; ++c) stats.mean[c] += row[c];
  }
  for (double& x : stats.mean) x /= double(v.rows());
  for (Index r = 0; r < v.rows(); ++r) {
    detail::load_row(v, r, row.data());
    for (std::size_t c = 0; c < cols; ++c) stats.stddev[c] += (row[c] - stats.mean[c]) * (row[c] - stats.mean[c]);
  }
  for (double& x : stats.stddev) x = std::sqrt(x / double(v.rows()));
  return stats;
}

namespace detail {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A standard normal draw that depends only on (seed, row, column): Box-Muller on two
/// counter-based uniforms, so results do not depend on threads, row order or platform RNGs.
inline double normal_draw(std::uint64_t seed, Index row, Index column) {
  const std::uint64_t key =
      splitmix64(seed ^ splitmix64(std::uint64_t(row) * 0x100000001B3ull + std::uint64_t(column)));
  const double u1 = (double((key >> 11) | 1u)) * 0x1.0p-53;  // (0, 1): never log(0)
  const double u2 = double(splitmix64(key) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// The refusals of random_rows, under the caller's name (`context`).
inline void check_random_rows(const column_statistics& stats, const matrix_view<void>& out,
                              const std::vector<Index>& rows, const char* context) {
  if (Index(stats.mean.size()) != out.cols() || stats.stddev.size() != stats.mean.size())
    throw invalid_argument(
        error_facts::in(context).with_argument("output"),
        "has " + std::to_string(out.cols()) + " columns but the statistics have " + std::to_string(stats.mean.size()));
  for (Index r : rows) {
    const std::string rows_of_output = " the " + std::to_string(out.rows()) + " rows of 'output'";
    if (r < 0)
      throw invalid_argument(error_facts::in(context).with_argument("rows"),
                             "id " + std::to_string(r) + " is not one of" + rows_of_output);
    if (r >= out.rows())
      throw invalid_argument(error_facts::in(context).with_argument("rows").at_row(r), "is outside" + rows_of_output);
  }
}

/// The draws of random_rows, unchecked.
inline void draw_rows(const column_statistics& stats, const matrix_view<void>& out, const std::vector<Index>& rows,
                      std::uint64_t seed) {
  std::vector<float> row(std::size_t(out.cols()));
  for (Index r : rows) {
    for (Index c = 0; c < out.cols(); ++c)
      row[std::size_t(c)] =
          static_cast<float>(stats.mean[std::size_t(c)] + stats.stddev[std::size_t(c)] * normal_draw(seed, r, c));
    store_row(out, r, row.data());
  }
}

}  // namespace detail

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
