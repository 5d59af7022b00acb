// SPDX-License-Identifier: MIT
#pragma once

// Internal, baselines: the per-column statistics of a matrix and the normal draws of
// clp::random_rows, clp::overlap_random and clp::random_init. A draw depends only on (seed, row,
// column): Box-Muller on two counter-based SplitMix64 uniforms, so no thread count, row order or
// platform's random engine changes it. Included by <clp/random_init.hpp> after
// column_statistics, which it fills and reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/matrices/rows.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/splitmix64.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace clp::detail {

/// Per-column mean and population standard deviation of v, in two passes (the mean, then the
/// squared deviations: no cancellation for large means). v has at least one row.
inline column_statistics statistics_of_columns(const matrix_view<const void>& v) {
  const std::size_t cols = std::size_t(v.cols());
  column_statistics stats{std::vector<double>(cols, 0.0), std::vector<double>(cols, 0.0)};
  std::vector<float> row(cols);
  for (Index r = 0; r < v.rows(); ++r) {
    load_row(v, r, row.data());
    for (std::size_t c = 0; c < cols; ++c) stats.mean[c] += row[c];
  }
  for (double& x : stats.mean) x /= double(v.rows());
  for (Index r = 0; r < v.rows(); ++r) {
    load_row(v, r, row.data());
    for (std::size_t c = 0; c < cols; ++c) stats.stddev[c] += (row[c] - stats.mean[c]) * (row[c] - stats.mean[c]);
  }
  for (double& x : stats.stddev) x = std::sqrt(x / double(v.rows()));
  return stats;
}

/// A standard normal draw that depends only on (seed, row, column).
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

/// Rows `rows` of `out` drawn from N(stats.mean[c], stats.stddev[c]), unchecked.
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

}  // namespace clp::detail
