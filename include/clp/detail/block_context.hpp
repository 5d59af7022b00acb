// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what every stage of a block sees (the inputs, the plan, what was
// prepared once about the overlap, the per-row outcomes) and a worker's buffers, reused from
// block to block.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/overlap_panels.hpp>
#include <clp/detail/overlap_scan.hpp>
#include <clp/detail/row_outcomes.hpp>
#include <clp/detail/scratch_buffer.hpp>
#include <clp/detail/synthesis_inputs.hpp>
#include <clp/detail/synthesis_plan.hpp>
#include <clp/detail/tiling.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/similarity_product.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <cstddef>
#include <vector>

namespace clp::detail {

/// The synthesis as one block sees it; built once, shared by every block.
struct block_context {
  const std::vector<source_output>& pairs;
  const matrix_view<const void>& helper;
  const vocabulary_overlap& overlap;
  const rows_to_write& rows;  ///< the range: the rows copied and the missing rows written, in order
  const synthesis_plan& plan;
  const overlap_scan& scan;
  const overlap_panels& panels;
  row_outcomes& outcomes;  // each block writes only its own rows
  /// A caller's similarity product for a neighbour-list weighting (rescoring.hpp), else null.
  const prepared_similarity* product;
  /// Missing position i is written to output row i, not to row missing[i]: the held-out rows
  /// of an evaluation (<clp/evaluate.hpp>) go to a compact matrix of their own.
  bool compact_output = false;
};

/// A worker's scratch, reused from block to block.
struct block_scratch {
  scratch_buffer<float> queries, cosines, panel, accumulator, weight, source_row, scale, residual, correlation,
      query_norm, neighbour_norm;
  scratch_buffer<Index> neighbour, count;
};

/// One block's view of its worker's scratch.
struct block_buffers {
  float* queries;       ///< block x d_helper: normalised helper rows, zero past the block's rows
  float* cosines;       ///< block x n_overlap
  float* panel;         ///< panel_rows x panel_width: the worker's own overlap panel
  float* accumulator;   ///< block x d_source: output rows
  Index* neighbours;    ///< block x k_max
  float* weights;       ///< block x k_max
  Index* counts;        ///< block: neighbours per row
  float* source_row;    ///< d_source
  float* scale;         ///< block: each row's weights are scale times its cosines as left
  float* residuals;     ///< pursuit by products: block x d_helper, each row's residual
  float* correlations;  ///< Batch-OMP: n_overlap, the correlations of the row being pursued
  float* query_norm;    ///< pursuit: block, ||h_t|| of each row
  float* neighbour_norm;  ///< a map with neighbour norms: block, the norm of each row's top-k row
};

inline block_buffers reserve_block(block_scratch& s, const synthesis_plan& plan) {
  const Index block = plan.blocks.rows;
  return {s.queries.reserve(std::size_t(block * plan.d_helper)),
          s.cosines.reserve(plan.cosines ? std::size_t(block * plan.n_overlap) : 0),
          s.panel.reserve(std::size_t(panel_rows * plan.panel_width)),
          s.accumulator.reserve(std::size_t(block * plan.d_source)),
          s.neighbour.reserve(std::size_t(block * plan.k_max)),
          s.weight.reserve(std::size_t(block * plan.k_max)),
          s.count.reserve(std::size_t(block)),
          s.source_row.reserve(std::size_t(plan.d_source)),
          s.scale.reserve(std::size_t(block)),
          s.residual.reserve(plan.pursuit && !plan.gram ? std::size_t(block * plan.d_helper) : 0),
          s.correlation.reserve(plan.gram ? std::size_t(plan.n_overlap) : 0),
          s.query_norm.reserve(plan.pursuit ? std::size_t(block) : 0),
          s.neighbour_norm.reserve(plan.norm_neighbours ? std::size_t(block) : 0)};
}

/// Missing rows [row0, row0 + m) of the block.
struct block_rows {
  Index row0 = 0, m = 0;
};

}  // namespace clp::detail
