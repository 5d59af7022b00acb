// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: a block's output rows from its weights and the overlapping source rows
// (eq. 3), per source, in the way the weighting's input allows (synthesis_plan.hpp's combiner),
// then scaled, or replaced by the mean where a row fell back, and stored.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/linear_map.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <vector>

namespace clp::detail {

/// sum_k w_k a_{neighbour k}, reading only the chosen source rows; each is added while the next
/// one (of this output row or the next) is asked for.
inline void combine_neighbours(const block_context& context, std::size_t p, Index m, const block_buffers& buffers) {
  const matrix_view<const void>& source = context.pairs[p].source;
  const Index d = source.cols();
  const Index k_max = context.plan.k_max;
  const std::vector<Index>& source_ids = context.overlap.source_ids;
  // The chosen source rows in the order they are read: row i's neighbours, then row i + 1's.
  Index next_i = 0, next_k = 0;
  const auto next_chosen = [&]() -> Index {
    while (next_i < m && next_k >= buffers.counts[next_i]) ++next_i, next_k = 0;
    return next_i < m ? source_ids[std::size_t(buffers.neighbours[next_i * k_max + next_k++])] : -1;
  };
  Index chosen = next_chosen();
  if (chosen >= 0) prefetch_row(source, chosen);
  for (Index i = 0; i < m; ++i) {
    float* out = buffers.accumulator + i * d;
    std::fill(out, out + d, 0.0f);
    const float* weight = buffers.weights + i * k_max;
    for (Index k = 0; k < buffers.counts[i]; ++k) {
      CLP_ASSERT(chosen == source_ids[std::size_t(buffers.neighbours[i * k_max + k])]);
      const Index next = next_chosen();
      add_scaled_row(source, chosen, weight[k], out, next);
      chosen = next;
    }
  }
}

/// The normalised queries times P.
CLP_DECL void combine_projected(const block_context& context, std::size_t p, const block_buffers& buffers);

/// The weights times the overlapping source rows, panel by panel.
CLP_DECL void combine_dense(const block_context& context, std::size_t p, const block_buffers& buffers);

/// The block's output rows for source p, unscaled, into the accumulator.
inline void combine(const block_context& context, combiner how, std::size_t p, Index m, const block_buffers& buffers) {
  switch (how) {
    case combiner::neighbours:
      combine_neighbours(context, p, m, buffers);
      return;
    case combiner::projected:
      combine_projected(context, p, buffers);
      return;
    case combiner::dense:
      break;
  }
  combine_dense(context, p, buffers);
}

/// A map with neighbour norms: from each row's neighbour list, already weighed as top-k weighs
/// it, the norm of its top-k row or the neighbours' norms averaged (plan.norm_mean, which reads
/// no source row), into neighbour_norm.
inline void measure_neighbour_norms(const block_context& context, std::size_t p, Index m,
                                    const block_buffers& buffers) {
  if (context.plan.norm_mean) {
    const std::vector<double>& norms = context.scan.source_norms[p];
    const Index k_max = context.plan.k_max;
    for (Index i = 0; i < m; ++i) {
      double norm = 0;
      for (Index k = 0; k < buffers.counts[i]; ++k)
        norm += double(buffers.weights[i * k_max + k]) * norms[std::size_t(buffers.neighbours[i * k_max + k])];
      buffers.neighbour_norm[i] = static_cast<float>(norm);
    }
    return;
  }
  combine_neighbours(context, p, m, buffers);
  const Index d = context.pairs[p].source.cols();
  for (Index i = 0; i < m; ++i)
    buffers.neighbour_norm[i] = static_cast<float>(row_norm(buffers.accumulator + i * d, d));
}

/// A map with neighbour norms: each mapped row of source p (the accumulator) is given the norm
/// measured by measure_neighbour_norms, through its scale. A mapped row of norm 0 stays 0.
inline void scale_to_neighbour_norms(const block_context& context, std::size_t p, Index m,
                                     const block_buffers& buffers) {
  const Index d = context.pairs[p].source.cols();
  for (Index i = 0; i < m; ++i) {
    const double mapped = row_norm(buffers.accumulator + i * d, d);
    buffers.scale[i] = mapped > 0 ? static_cast<float>(buffers.neighbour_norm[i] / mapped) : 1.0f;
  }
}

/// Scales each output row of source p (or replaces it with the mean where the row fell back)
/// and stores it.
inline void finish_rows(const block_context& context, std::size_t p, block_rows rows, const block_buffers& buffers) {
  const source_output& pair = context.pairs[p];
  const Index d = pair.source.cols();
  const std::vector<float>& mean = context.scan.means[p];
  for (Index i = 0; i < rows.m; ++i) {
    const std::size_t row = std::size_t(rows.row0 + i);
    float* out = buffers.accumulator + i * d;
    const float scale = buffers.scale[i];
    if (context.outcomes.flags[row] & (zero_norm | fallback))
      std::copy(mean.begin(), mean.end(), out);
    else if (scale != 1.0f)
      for (Index c = 0; c < d; ++c) out[c] *= scale;
    if (!pair.report_only) store_row(pair.output, context.compact_output ? Index(row) : context.rows.missing[row], out);
    if (p == 0) context.outcomes.output_norm[row] = row_norm(out, d);
    // A map has no weights whose sizes could flag a row: its output does.
    if (p == 0 && context.plan.linear_map &&
        context.outcomes.output_norm[row] > map_inflated_norm_ratio * context.scan.median_source_row_norm)
      context.outcomes.flags[row] |= inflated;
  }
}

}  // namespace clp::detail

// The bodies; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/synthesis/combination-inl.hpp>
#endif
