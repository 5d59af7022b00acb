// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what each synthesised row came to, written by the block that owns the
// row and summed afterwards, in row order, into the report (so the report does not depend on
// the blocking or the threads).
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <cstdint>
#include <vector>

namespace clp::detail {

/// Per-row outcome flags.
enum row_flag : std::uint8_t {
  zero_norm = 1,
  fallback = 2,
  no_positive = 4,
  inflated = 8,
  padding = 16,
  negative_sum = 32
};

/// What each synthesised row came to, indexed by position in the missing rows written.
struct row_outcomes {
  std::vector<std::uint8_t> flags;
  std::vector<double> effective_neighbours;
  std::vector<double> output_norm;  ///< of the first output

  /// For n rows, `padding` saying which no token names.
  explicit row_outcomes(const std::vector<bool>& padding)
      : flags(padding.size(), 0), effective_neighbours(padding.size(), 0.0), output_norm(padding.size(), 0.0) {
    for (std::size_t i = 0; i < flags.size(); ++i)
      if (padding[i]) flags[i] = row_flag::padding;
  }
};

/// The sums of a row's final weights (for the report).
struct weight_sums {
  double sum_abs = 0, sum_squares = 0;
};

/// Row `row`'s effective neighbours and inflation, from the sums of its final weights; a row
/// set to the mean counts as all n_overlap.
inline void record_weights(row_outcomes& outcomes, Index row, Index n_overlap, const weight_sums& sums) {
  std::uint8_t& flag = outcomes.flags[std::size_t(row)];
  if (flag & (zero_norm | fallback))
    outcomes.effective_neighbours[std::size_t(row)] = double(n_overlap);
  else
    outcomes.effective_neighbours[std::size_t(row)] = sums.sum_squares > 0 ? 1.0 / sums.sum_squares : 0.0;
  if (sums.sum_abs > 2) flag |= inflated;
}

}  // namespace clp::detail
