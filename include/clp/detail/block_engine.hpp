// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: one block of missing rows through the stages, in the order they run:
// queries, cosines, weights, and per source the combination and the finished rows. Which
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

#include <algorithm>

namespace clp::detail {

/// Block b (missing rows [b * block, ...), at most block of them) on a worker's scratch;
/// returns its row count.
template <class Policy>
Index run_block(const block_context& context, const Policy& policy, Index b, block_scratch& scratch,
                rescoring_scratch& rescoring) {
  constexpr stages stage = stages_of<Policy>;
  const synthesis_plan& plan = context.plan;
  const block_buffers buffers = reserve_block(scratch, plan);
  const block_rows rows{b * plan.blocks.rows, std::min(plan.blocks.rows, plan.n_missing - b * plan.blocks.rows)};
  normalise_queries(context, rows, buffers);
  if constexpr (stage.weigh == weigher::neighbour_lists) {
    if (context.product) {  // the caller's product, and the rows' candidates rescored
      weigh_by_product(context, policy, rows, buffers, rescoring);
    } else {
      form_cosines(context, buffers.queries, buffers);
      weigh_rows(context, policy, rows, buffers);
    }
  } else {
    if constexpr (stage.cosines) form_cosines(context, buffers.queries, buffers);
    if constexpr (stage.weigh == weigher::pursuit)
      pursue(context, double(policy.tolerance), rows, buffers);
    else if constexpr (stage.weigh == weigher::query_norms)
      weigh_by_query_norms(context, rows, buffers);
    else
      weigh_rows(context, policy, rows, buffers);
  }
  // Padding rows carry no weight (their cosines are 0, as their query rows are). The products
  // below still run over the rows that fall back; their results are replaced.
  for (std::size_t p = 0; p < context.pairs.size(); ++p) {
    combine(context, stage.combine, p, rows.m, buffers);
    finish_rows(context, p, rows, buffers);
  }
  return rows.m;
}

}  // namespace clp::detail
