// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what every stage of a block sees (the inputs, the plan, what was
// prepared once about the overlap, the per-row outcomes) and a worker's buffers, reused from
// block to block: the block's similarities, shared by the jobs of a pass, and each job's own.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/overlap_scan.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/similarity_product.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
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
  /// A caller's similarity product, when it formed the block's cosines for a neighbour-list
  /// weighting (rescoring.hpp), else null.
  const prepared_similarity* product;
  /// Missing position i is written to output row i, not to row missing[i]: the held-out rows
  /// of an evaluation (<clp/evaluate.hpp>) go to a compact matrix of their own.
  bool compact_output = false;
};

/// A worker's buffers for a block's similarities, shared by every job of a pass
/// (synthesis_pass.hpp), reused from block to block.
struct similarity_scratch {
  scratch_buffer<float> queries, query_norm, cosines, panel, bound;
};

/// One block's view of them.
struct similarity_buffers {
  float* queries;     ///< block x d_helper: normalised helper rows, zero past the block's rows
  float* query_norm;  ///< block: ||h_t|| of each row (0: a zero row)
  float* cosines;     ///< block x n_overlap, when some job reads cosines
  float* panel;       ///< panel_rows x d_helper: the worker's own helper panel (panels not resident)
  float* bound;       ///< block: a caller's product's bound per row (synthesis_options::product)
};

/// What a pass's blocks share (its plan: the common block height and residency of a pass's
/// jobs, the first job's otherwise equal in every field the similarity stage reads).
inline similarity_buffers reserve_similarities(similarity_scratch& s, const synthesis_plan& plan, bool product) {
  const Index block = plan.blocks.rows;
  return {s.queries.reserve(std::size_t(block * plan.d_helper)), s.query_norm.reserve(std::size_t(block)),
          s.cosines.reserve(plan.cosines ? std::size_t(block * plan.n_overlap) : 0),
          s.panel.reserve(plan.cosines && !plan.resident ? std::size_t(panel_rows * plan.d_helper) : 0),
          s.bound.reserve(product ? std::size_t(block) : 0)};
}

/// A worker's scratch for one job, reused from block to block.
struct block_scratch {
  scratch_buffer<float> cosines, panel, accumulator, weight, source_row, scale, residual, correlation, neighbour_norm;
  scratch_buffer<Index> neighbour, count;
};

/// One block's view of the scratch of a job and of its pass.
struct block_buffers {
  float* queries;         ///< block x d_helper: normalised helper rows, zero past the block's rows (the pass's)
  float* cosines;         ///< block x n_overlap: the pass's, or the job's own copy when it rewrites them
  float* panel;           ///< panel_rows x panel_width: the worker's own overlap panel
  float* accumulator;     ///< block x d_source: output rows
  Index* neighbours;      ///< block x k_max
  float* weights;         ///< block x k_max
  Index* counts;          ///< block: neighbours per row
  float* source_row;      ///< d_source
  float* scale;           ///< block: each row's weights are scale times its cosines as left
  float* residuals;       ///< pursuit by products: block x d_helper, each row's residual
  float* correlations;    ///< Batch-OMP: n_overlap x (1 + k_max), the row's correlations, then its w_s
  float* query_norm;      ///< block, ||h_t|| of each row (the pass's)
  float* neighbour_norm;  ///< a map with neighbour norms: block, the norm each row takes
};

/// A job's buffers for a block: the pass's queries and cosines (or, with `own_cosines`, a copy of
/// the cosines the job may rewrite), and its own scratch.
inline block_buffers reserve_block(block_scratch& s, const synthesis_plan& plan, const similarity_buffers& shared,
                                   bool own_cosines) {
  const Index block = plan.blocks.rows;
  float* cosines = shared.cosines;
  if (own_cosines) {
    cosines = s.cosines.reserve(std::size_t(block * plan.n_overlap));
    std::copy(shared.cosines, shared.cosines + block * plan.n_overlap, cosines);
  }
  return {shared.queries,
          cosines,
          s.panel.reserve(std::size_t(panel_rows * plan.panel_width)),
          s.accumulator.reserve(std::size_t(block * plan.d_source)),
          s.neighbour.reserve(std::size_t(block * plan.k_max)),
          s.weight.reserve(std::size_t(block * plan.k_max)),
          s.count.reserve(std::size_t(block)),
          s.source_row.reserve(std::size_t(plan.d_source)),
          s.scale.reserve(std::size_t(block)),
          s.residual.reserve(plan.pursuit && !plan.gram ? std::size_t(block * plan.d_helper) : 0),
          s.correlation.reserve(plan.gram ? std::size_t(plan.n_overlap * (1 + plan.k_max)) : 0),
          shared.query_norm,
          s.neighbour_norm.reserve(plan.norm_neighbours ? std::size_t(block) : 0)};
}

/// Missing rows [row0, row0 + m) of the block.
struct block_rows {
  Index row0 = 0, m = 0;
};

}  // namespace clp::detail
