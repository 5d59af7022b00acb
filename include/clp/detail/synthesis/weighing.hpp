// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: a block's weights from its cosines, row by row, by the policy itself:
// dense weights (cosine_row, scaled_cosines) or a neighbour list (nearest_cosines). The
// pursuit (helper_rows) weighs its blocks in pursuit.hpp.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/similarity_product.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/policy.hpp>

#include <cmath>
#include <cstdint>

namespace clp::detail {

/// Row i of the block (missing position `row`) by a policy that returns dense weights. The
/// row of weights is left up to a factor, scale[i], applied to the (shorter) output row when
/// the rows are finished.
template <class Policy>
void weigh_dense_row(const block_context& context, const Policy& policy, Index row, Index i,
                     const block_buffers& buffers) {
  const Index n_overlap = context.plan.n_overlap;
  float* const cosines = buffers.cosines + i * n_overlap;
  std::uint8_t& flag = context.outcomes.flags[std::size_t(row)];
  const cosine_statistics statistics = statistics_of(cosines, n_overlap);
  flag_cosines(statistics.max, statistics.sum, flag);
  dense_weights weights;
  if (!(flag & zero_norm)) weights = policy(cosines, n_overlap, statistics);
  if (!(weights.scale != 0 && std::isfinite(weights.scale)) && !(flag & zero_norm)) flag |= fallback;
  buffers.scale[i] = static_cast<float>(weights.scale);
  record_weights(context.outcomes, row, n_overlap, {weights.sum_abs, weights.sum_squares});
}

/// Row i of the block (missing position `row`) by a policy that returns a neighbour list.
template <class Policy>
void weigh_neighbour_row(const block_context& context, const Policy& policy, Index row, Index i,
                         const block_buffers& buffers) {
  const Index n_overlap = context.plan.n_overlap;
  const Index k_max = context.plan.k_max;
  const float* const cosines = buffers.cosines + i * n_overlap;
  std::uint8_t& flag = context.outcomes.flags[std::size_t(row)];
  float max = 0;
  double sum = 0;
  max_and_sum(cosines, n_overlap, max, sum);
  flag_cosines(max, sum, flag);
  Index& count = buffers.counts[i];
  count =
      (flag & zero_norm) ? 0 : policy(cosines, n_overlap, buffers.neighbours + i * k_max, buffers.weights + i * k_max);
  if (count == 0 && !(flag & zero_norm)) flag |= fallback;
  const cosine_statistics chosen = statistics_of(buffers.weights + i * k_max, count);
  buffers.scale[i] = 1.0f;
  record_weights(context.outcomes, row, n_overlap, {chosen.sum_abs, chosen.sum_squares});
}

/// Every row of the block, by the policy.
template <class Policy>
void weigh_rows(const block_context& context, const Policy& policy, block_rows rows, const block_buffers& buffers) {
  for (Index i = 0; i < rows.m; ++i) {
    if constexpr (stages_of<Policy>.weigh == weigher::dense_rows)
      weigh_dense_row(context, policy, rows.row0 + i, i, buffers);
    else
      weigh_neighbour_row(context, policy, rows.row0 + i, i, buffers);
  }
}

}  // namespace clp::detail
