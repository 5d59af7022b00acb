// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: one block of missing rows through the stages, in the order they run:
// queries, cosines, weights, per source the combination and the finished rows, and last the
// copies (eq. 2) of the overlapping rows that lie between this block's rows and the next's. Which
// weigher and combiner a policy gets is the engine's table (synthesis_plan.hpp), read here and
// nowhere else.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/block_context.hpp>
#include <clp/detail/combination.hpp>
#include <clp/detail/cosines.hpp>
#include <clp/detail/linear_map.hpp>
#include <clp/detail/pursuit.hpp>
#include <clp/detail/rescoring.hpp>
#include <clp/detail/synthesis_plan.hpp>
#include <clp/detail/weighing.hpp>
#include <clp/element_type.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace clp::detail {

/// The target rows block b owns, [first, second): from its first missing row to the next
/// block's (the range's ends for the first and the last block). The block writes every one of
/// them, its missing rows and the copies between them, so that each row below the stretches of
/// a finished prefix of blocks is final (synthesis_options::rows_finished).
inline std::pair<Index, Index> block_stretch(const block_context& context, Index b) {
  const std::vector<Index>& missing = context.rows.missing;
  const Index block = context.plan.blocks.rows, next = (b + 1) * block;
  return {b == 0 ? context.rows.first : missing[std::size_t(b * block)],
          next >= Index(missing.size()) ? context.rows.last : missing[std::size_t(next)]};
}

/// The block's weights, by the stage the policy's input calls for. A caller's product serves the
/// neighbour lists: a neighbour-list policy's own, or top-k's for a map with neighbour norms.
template <class Policy>
void weigh_block(const block_context& context, const Policy& policy, block_rows rows, const block_buffers& buffers,
                 rescoring_scratch& rescoring) {
  constexpr stages stage = stages_of<Policy>;
  const auto weigh_neighbours = [&](const auto& lists) {
    if (context.product) {  // the caller's product, and the rows' candidates rescored
      weigh_by_product(context, lists, rows, buffers, rescoring);
    } else {
      form_cosines(context, buffers.queries, buffers);
      weigh_rows(context, lists, rows, buffers);
    }
  };
  if constexpr (stage.weigh == weigher::neighbour_lists) {
    weigh_neighbours(policy);
  } else if constexpr (stage.weigh == weigher::query_norms) {
    if (context.plan.norm_neighbours) weigh_neighbours(top_k_weights{context.plan.norm_neighbours});
    weigh_by_query_norms(context, rows, buffers);
  } else {
    form_cosines(context, buffers.queries, buffers);
    if constexpr (stage.weigh == weigher::pursuit)
      pursue(context, double(policy.tolerance), rows, buffers);
    else
      weigh_rows(context, policy, rows, buffers);
  }
}

/// Block b (missing rows [b * block, ...), at most block of them, and the copies of its
/// stretch) on a worker's scratch; returns its missing row count. `before_writing()` is called
/// once, after the weights and before the block writes its first output row: the block's
/// product and weighing, most of its time, write none.
template <class Policy, class BeforeWriting>
Index run_block(const block_context& context, const Policy& policy, Index b, block_scratch& scratch,
                rescoring_scratch& rescoring, const BeforeWriting& before_writing) {
  constexpr stages stage = stages_of<Policy>;
  const synthesis_plan& plan = context.plan;
  const block_buffers buffers = reserve_block(scratch, plan);
  const block_rows rows{b * plan.blocks.rows, std::min(plan.blocks.rows, plan.n_missing - b * plan.blocks.rows)};
  normalise_queries(context, rows, buffers);
  weigh_block(context, policy, rows, buffers, rescoring);
  before_writing();
  // Padding rows carry no weight (their cosines are 0, as their query rows are). The products
  // below still run over the rows that fall back; their results are replaced.
  for (std::size_t p = 0; p < context.pairs.size(); ++p) {
    if (plan.norm_neighbours) measure_neighbour_norms(context, p, rows.m, buffers);
    combine(context, stage.combine, p, rows.m, buffers);
    if (plan.norm_neighbours) scale_to_neighbour_norms(context, p, rows.m, buffers);
    finish_rows(context, p, rows, buffers);
  }
  const auto [from, to] = block_stretch(context, b);
  copy_overlap_rows(context.pairs, context.overlap, copies_between(context.overlap, context.rows, from, to),
                    buffers.source_row);
  return rows.m;
}

}  // namespace clp::detail
