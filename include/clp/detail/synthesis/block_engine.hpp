// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: one block of missing rows through the stages, in the order they run:
// queries and cosines (once per block for every job of a pass, synthesis_pass.hpp), then per
// job its weights, per source the combination and the finished rows, and last the copies
// (eq. 2) of the overlapping rows that lie between this block's rows and the next's. Which
// weigher and combiner a policy gets is the engine's table (synthesis_plan.hpp), read here and
// nowhere else.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/combination.hpp>
#include <clp/detail/synthesis/linear_map.hpp>
#include <clp/detail/synthesis/pursuit.hpp>
#include <clp/detail/synthesis/rescoring.hpp>
#include <clp/detail/synthesis/similarity_product.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/detail/synthesis/weighing.hpp>
#include <clp/element_type.hpp>
#include <clp/similarity_product.hpp>
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

/// The block's similarity product, once for every job of a pass: its normalised queries and,
/// when a job reads them, their cosines with the overlap, by the caller's product (with each
/// row's bound) or the library's float32 product. `context` is any job's: the fields this reads (the
/// helper, the overlap, the plan's block height, residency and widths, the helper panels and
/// norms) are the pass's.
inline void form_similarities(const block_context& context, block_rows rows, const similarity_buffers& buffers,
                              const prepared_similarity* product, int worker) {
  const synthesis_plan& plan = context.plan;
  normalise_queries(context, rows, buffers);
  if (!plan.cosines) return;
  if (product) {
    std::fill(buffers.bound, buffers.bound + plan.blocks.rows, 0.0f);
    product->multiply(buffers.queries, plan.blocks.rows, buffers.cosines, buffers.bound, worker);
  } else {
    form_cosines(context, buffers.queries, buffers.cosines, buffers.panel);
  }
}

/// One job's weights for the block from the pass's similarities, by the stage the policy's
/// input calls for. A caller's product serves the neighbour lists: a neighbour-list policy's
/// own, or top-k's for a map with neighbour norms; `bound` is its bound per row.
template <class Policy>
void weigh_block(const block_context& context, const Policy& policy, block_rows rows, const block_buffers& buffers,
                 const float* bound, rescoring_scratch& rescoring) {
  constexpr stages stage = stages_of<Policy>;
  flag_zero_norms(context, rows, buffers.query_norm);
  const auto weigh_neighbours = [&](const auto& lists) {
    if (context.product)  // the caller's product, and the rows' candidates rescored
      weigh_by_product(context, lists, rows, buffers, bound, rescoring);
    else
      weigh_rows(context, lists, rows, buffers);
  };
  if constexpr (stage.weigh == weigher::neighbour_lists) {
    weigh_neighbours(policy);
  } else if constexpr (stage.weigh == weigher::query_norms) {
    if (context.plan.norm_neighbours) weigh_neighbours(top_k_weights{context.plan.norm_neighbours});
    weigh_by_query_norms(context, rows, buffers);
  } else if constexpr (stage.weigh == weigher::pursuit) {
    pursue(context, double(policy.tolerance), rows, buffers);
  } else {
    weigh_rows(context, policy, rows, buffers);
  }
}

/// One job's output rows of block b from its weights (per source: the combination, the scale
/// or the fallback, the store), then the copies (eq. 2) of the block's stretch. A job that
/// reports only stores nothing and copies nothing.
template <class Policy>
void write_block(const block_context& context, const Policy& /*policy*/, Index b, block_rows rows,
                 const block_buffers& buffers) {
  constexpr stages stage = stages_of<Policy>;
  const synthesis_plan& plan = context.plan;
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
}

}  // namespace clp::detail
