// SPDX-License-Identifier: MIT
#pragma once

// Internal: the bodies of combination.hpp that use Eigen's products or solvers, whose contracts
// are there. Included by it in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/combination.hpp>

namespace clp::detail {

CLP_DECL void combine_projected(const block_context& context, std::size_t p, const block_buffers& buffers) {
  const synthesis_plan& plan = context.plan;
  const Index d = context.pairs[p].source.cols();
  matrix_map(buffers.accumulator, plan.blocks.rows, d).noalias() =
      matrix_map(buffers.queries, plan.blocks.rows, plan.d_helper) *
      const_matrix_map(context.panels.projected[p], plan.d_helper, d);
}

CLP_DECL void combine_dense(const block_context& context, std::size_t p, const block_buffers& buffers) {
  const synthesis_plan& plan = context.plan;
  const matrix_view<const void>& source = context.pairs[p].source;
  const Index d = source.cols();
  const Index n_overlap = plan.n_overlap;
  matrix_map result(buffers.accumulator, plan.blocks.rows, d);
  for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
    const Index pn = std::min(panel_rows, n_overlap - p0);
    const float* a = plan.sources_resident ? context.panels.source[p].data() + p0 * d : nullptr;
    if (!plan.sources_resident) {
      gather_rows(source, context.overlap.source_ids.data() + p0, pn, buffers.panel);
      a = buffers.panel;
    }
    const auto weights = strided_map(buffers.cosines + p0, plan.blocks.rows, pn, Eigen::OuterStride<>(n_overlap));
    const auto values = const_matrix_map(a, pn, d);
    if (p0 == 0)
      result.noalias() = weights * values;
    else
      result.noalias() += weights * values;
  }
}

}  // namespace clp::detail
