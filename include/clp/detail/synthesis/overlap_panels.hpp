// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what the blocks share about the overlap, prepared once before they run.
// The overlap's normalised helper rows gathered as float32 panels when they fit the budget (once
// per pass, shared by its jobs: synthesis_pass.hpp); per job, a dense combine's source rows
// likewise, P = sum_j n_j a_j^T per source for scaled cosines, and the Gram matrix of the
// normalised helper rows for Batch-OMP. Each is summed panel by panel in a fixed order, so its
// bits do not depend on the thread count.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <vector>

namespace clp::detail {

struct overlap_panels {
  explicit overlap_panels(std::size_t sources) : source(sources), projection(sources) {}
  /// Resident: n_overlap x d_helper, normalised; the pass's rows (every job reads the same ones).
  const float* helper = nullptr;
  /// n_overlap x d_helper, normalised, whenever the caller's product serves the pass (resident
  /// or not): the rows its candidates are rescored from.
  const float* rescoring_rows = nullptr;
  std::vector<scratch_buffer<float>> source;      ///< sources_resident, dense combine: per source
  std::vector<scratch_buffer<float>> projection;  ///< projected combine: P (or the map W) per source
  /// What the blocks read for each source: the projections above, or those of another job of the
  /// pass with the same sources (P depends on nothing else).
  std::vector<const float*> projected;
  /// Batch-OMP's Gram matrix: entry (i, j) of the overlap at gram[position(i) * gram_stride +
  /// position(j)], position(i) = gram_positions ? gram_positions[i] : i. Its own (gram_storage,
  /// n_overlap x n_overlap), or a larger overlap's that a pass was given (overlap_givens).
  const float* gram = nullptr;
  Index gram_stride = 0;
  const Index* gram_positions = nullptr;
  scratch_buffer<float> gram_storage;
};

/// Overlap entries [p0, p0 + pn): the helper's rows, normalised, into the row-major `into`.
inline void gather_helper_panel(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                const std::vector<float>& inverse_norm, Index p0, Index pn, float* into) {
  gather_rows(helper, overlap.target_ids.data() + p0, pn, into);
  const Index d = helper.cols();
  for (Index j = 0; j < pn; ++j) {
    float* h = into + j * d;
    for (Index c = 0; c < d; ++c) h[c] *= inverse_norm[p0 + j];
  }
}

/// The overlap's normalised helper rows, n_overlap x d_helper, gathered in parallel, panel by
/// panel, into `into`.
inline void gather_helper_rows(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                               const std::vector<float>& inverse_norm, float* into, int threads) {
  const Index n_overlap = overlap.size();
  parallel_for(ceil_div(n_overlap, panel_rows), threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    gather_helper_panel(helper, overlap, inverse_norm, p0, std::min(panel_rows, n_overlap - p0),
                        into + p0 * helper.cols());
  });
}

/// A dense combine's resident source panels, gathered in parallel, panel by panel.
inline void gather_source_panels(overlap_panels& panels, const std::vector<source_output>& pairs,
                                 const vocabulary_overlap& overlap, int threads) {
  const Index n_overlap = overlap.size();
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panels.source[p].reserve(std::size_t(n_overlap * pairs[p].source.cols()));
  parallel_for(ceil_div(n_overlap, panel_rows), threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    for (std::size_t p = 0; p < pairs.size(); ++p)
      gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn,
                  panels.source[p].data() + p0 * pairs[p].source.cols());
  });
}

/// A policy whose weights are its cosines times a row scale never needs the weights times
/// the overlapping source rows: with q_t and n_j the normalised helper rows,
///     sum_j cos(h_t, h_j) a_j = sum_j (q_t . n_j) a_j = q_t^T P,   P = sum_j n_j a_j^T,
/// and P (d_helper x d_source, per source) is computed once. The second product shrinks from
/// |overlap| to d_helper terms per output element; the cosines are still formed, for the
/// policy's guard and the report. Each panel's product is split into column chunks of fixed
/// width, one task each.
inline void compute_projections(overlap_panels& panels, const std::vector<source_output>& pairs,
                                const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                const std::vector<float>& inverse_norm, bool resident, int threads) {
  constexpr Index chunk_cols = 256;
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols();
  scratch_buffer<float> helper_panel, source_panel;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const Index d = pairs[p].source.cols();
    float* const into = panels.projection[p].reserve(std::size_t(d_helper * d));
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* h =
          resident ? panels.helper + p0 * d_helper : helper_panel.reserve(std::size_t(panel_rows * d_helper));
      if (!resident) gather_helper_panel(helper, overlap, inverse_norm, p0, pn, helper_panel.data());
      float* const a = source_panel.reserve(std::size_t(panel_rows * d));
      gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn, a);
      parallel_for(ceil_div(d, chunk_cols), threads, [&](Index chunk, int) {
        const Index c0 = chunk * chunk_cols;
        const Index cn = std::min(chunk_cols, d - c0);
        strided_map part(into + c0, d_helper, cn, Eigen::OuterStride<>(d));
        const const_matrix_map normalised(h, pn, d_helper);
        const const_strided_map values(a + c0, pn, cn, Eigen::OuterStride<>(d));
        if (p0 == 0)
          part.noalias() = normalised.transpose() * values;
        else
          part.noalias() += normalised.transpose() * values;
      });
    }
  }
}

/// Batch-OMP's Gram matrix G = N N^T of the normalised overlapping helper rows N
/// (n_overlap x n_overlap, float32) into `storage`, one task per panel of its rows. N is read
/// from the resident rows, or (null) gathered whole for it (it is d_helper / n_overlap of G's
/// size).
inline void compute_gram(scratch_buffer<float>& storage, const float* resident_rows,
                         const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                         const std::vector<float>& inverse_norm, int threads) {
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols();
  const Index n_panels = ceil_div(n_overlap, panel_rows);
  scratch_buffer<float> gathered;
  const float* rows = resident_rows;
  if (rows == nullptr) {
    float* const into = gathered.reserve(std::size_t(n_overlap * d_helper));
    parallel_for(n_panels, threads, [&](Index panel, int) {
      const Index p0 = panel * panel_rows;
      gather_helper_panel(helper, overlap, inverse_norm, p0, std::min(panel_rows, n_overlap - p0),
                          into + p0 * d_helper);
    });
    rows = into;
  }
  float* const gram = storage.reserve(std::size_t(n_overlap * n_overlap));
  const const_matrix_map atoms(rows, n_overlap, d_helper);
  matrix_map all(gram, n_overlap, n_overlap);
  // G is symmetric: each panel of rows is multiplied up to its diagonal block only (half the
  // flops), the costliest panels first; the blocks above the diagonal are then copied across.
  parallel_for(n_panels, threads, [&](Index task, int) {
    const Index p0 = (n_panels - 1 - task) * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    all.block(p0, 0, pn, p0 + pn).noalias() = atoms.middleRows(p0, pn) * atoms.topRows(p0 + pn).transpose();
  });
  parallel_for(n_panels, threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    for (Index q0 = p0 + pn; q0 < n_overlap; q0 += panel_rows) {
      const Index qn = std::min(panel_rows, n_overlap - q0);
      all.block(p0, q0, pn, qn) = all.block(q0, p0, qn, pn).transpose();
    }
  });
}

/// Everything the plan says one job's blocks share, prepared (the helper rows are the pass's,
/// in panels.helper when resident; a Gram matrix the pass was given is in panels.gram already).
/// `same_projections`: an earlier job's panels whose P serves this job too.
inline void prepare_job_panels(overlap_panels& panels, const synthesis_plan& plan, combiner combine,
                               const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                               const vocabulary_overlap& overlap, const std::vector<float>& inverse_norm, int threads,
                               const overlap_panels* same_projections = nullptr) {
  if (plan.sources_resident && combine == combiner::dense) gather_source_panels(panels, pairs, overlap, threads);
  // A least-squares map's W is fitted before the plan (linear_map.hpp).
  if (combine == combiner::projected && !plan.linear_map && same_projections == nullptr)
    compute_projections(panels, pairs, helper, overlap, inverse_norm, plan.resident, threads);
  panels.projected.clear();
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panels.projected.push_back(same_projections ? same_projections->projected[p] : panels.projection[p].data());
  if (plan.gram && panels.gram == nullptr) {
    compute_gram(panels.gram_storage, plan.resident ? panels.helper : nullptr, helper, overlap, inverse_norm, threads);
    panels.gram = panels.gram_storage.data();
    panels.gram_stride = overlap.size();
    panels.gram_positions = nullptr;
  }
}

}  // namespace clp::detail
