// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the similarity product (<clp/similarity_product.hpp>), the library's own:
// a block's queries (its normalised helper rows) and their cosines with the overlap's helper
// rows, most of a weighting's cost, in float32. The product is cut into the fixed panels
// of the overlap (tiling.hpp), which is what keeps every cosine's bits independent of the
// block it was computed in.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>

namespace clp::detail {

/// Normalised helper rows of the block and their norms; rows past m are zero (padding to the
/// block height). Done once per block for every job of a pass: each job flags its zero rows
/// (flag_zero_norms).
inline void normalise_queries(const block_context& context, block_rows rows, const similarity_buffers& buffers) {
  const synthesis_plan& plan = context.plan;
  float* const queries = buffers.queries;
  const Index d_helper = plan.d_helper;
  matrix_map(queries, plan.blocks.rows, d_helper).bottomRows(plan.blocks.rows - rows.m).setZero();
  for (Index i = 0; i < rows.m; ++i) {
    float* q = queries + i * d_helper;
    load_row(context.helper, context.rows.missing[std::size_t(rows.row0 + i)], q);
    const double norm = row_norm(q, d_helper);
    buffers.query_norm[i] = static_cast<float>(norm);
    if (buffers.query_norm[i] > 0) {
      const float inverse = static_cast<float>(1.0 / norm);
      for (Index c = 0; c < d_helper; ++c) q[c] *= inverse;
    }
  }
}

/// A zero helper row is flagged zero_norm, in one job's outcomes.
inline void flag_zero_norms(const block_context& context, block_rows rows, const float* query_norm) {
  for (Index i = 0; i < rows.m; ++i)
    if (!(query_norm[i] > 0)) context.outcomes.flags[std::size_t(rows.row0 + i)] |= zero_norm;
}

/// The block's rows `left` (block x d_helper) times the normalised overlapping helper rows,
/// panel by panel of the overlap, into `cosines` (block x n_overlap): the cosines for the
/// normalised queries, a pursuit's correlations for its residuals. `panel` (panel_rows x
/// d_helper at least) holds a gathered panel when the panels are not resident.
inline void form_cosines(const block_context& context, const float* left, float* cosines, float* panel) {
  const synthesis_plan& plan = context.plan;
  const Index n_overlap = plan.n_overlap;
  const Index d_helper = plan.d_helper;
  const const_matrix_map queries(left, plan.blocks.rows, d_helper);
  for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
    const Index pn = std::min(panel_rows, n_overlap - p0);
    const float* h = panel;
    if (plan.resident)
      h = context.panels.helper + p0 * d_helper;
    else
      gather_helper_panel(context.helper, context.overlap, context.scan.inverse_norm, p0, pn, panel);
    strided_map(cosines + p0, plan.blocks.rows, pn, Eigen::OuterStride<>(n_overlap)).noalias() =
        queries * const_matrix_map(h, pn, d_helper).transpose();
  }
}

/// Flags of a row from its cosines, whatever the weighting: no positive cosine, a negative sum.
inline void flag_cosines(double max, double sum, std::uint8_t& flag) {
  if (max <= 0) flag |= no_positive;
  if (sum < 0) flag |= negative_sum;
}

}  // namespace clp::detail
