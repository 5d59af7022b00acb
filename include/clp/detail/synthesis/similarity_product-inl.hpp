// SPDX-License-Identifier: MIT
#pragma once

// Internal: the bodies of similarity_product.hpp that use Eigen's products or solvers, whose contracts
// are there. Included by it in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/similarity_product.hpp>

namespace clp::detail {

CLP_DECL void normalise_queries(const block_context& context, block_rows rows, const similarity_buffers& buffers) {
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

CLP_DECL void form_cosines(const block_context& context, const float* left, float* cosines, float* panel) {
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

}  // namespace clp::detail
