// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what the blocks share about the overlap, prepared once before they run.
// The overlap's normalised helper rows gathered as float32 panels when they fit the budget (once
// per pass, shared by its jobs: synthesis_pass.hpp); per job, a dense combine's source rows
// likewise, P = sum_j n_j a_j^T per source for scaled cosines, and the Gram matrix of the
// normalised helper rows for Batch-OMP. Each is summed panel by panel in a fixed order, so its
// bits do not depend on the thread count.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
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
CLP_DECL void gather_helper_panel(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                  const std::vector<float>& inverse_norm, Index p0, Index pn, float* into);

/// The overlap's normalised helper rows, n_overlap x d_helper, gathered in parallel, panel by
/// panel, into `into`.
CLP_DECL void gather_helper_rows(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                 const std::vector<float>& inverse_norm, float* into, int threads);

/// A dense combine's resident source panels, gathered in parallel, panel by panel.
CLP_DECL void gather_source_panels(overlap_panels& panels, const std::vector<source_output>& pairs,
                                   const vocabulary_overlap& overlap, int threads);

/// A policy whose weights are its cosines times a row scale never needs the weights times
/// the overlapping source rows: with q_t and n_j the normalised helper rows,
///     sum_j cos(h_t, h_j) a_j = sum_j (q_t . n_j) a_j = q_t^T P,   P = sum_j n_j a_j^T,
/// and P (d_helper x d_source, per source) is computed once. The second product shrinks from
/// |overlap| to d_helper terms per output element; the cosines are still formed, for the
/// policy's guard and the report. Each panel's product is split into column chunks of fixed
/// width, one task each.
CLP_DECL void compute_projections(overlap_panels& panels, const std::vector<source_output>& pairs,
                                  const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                  const std::vector<float>& inverse_norm, bool resident, int threads);

/// Batch-OMP's Gram matrix G = N N^T of the normalised overlapping helper rows N
/// (n_overlap x n_overlap, float32) into `storage`, one task per panel of its rows. N is read
/// from the resident rows, or (null) gathered whole for it (it is d_helper / n_overlap of G's
/// size).
CLP_DECL void compute_gram(scratch_buffer<float>& storage, const float* resident_rows,
                           const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                           const std::vector<float>& inverse_norm, int threads);

/// Everything the plan says one job's blocks share, prepared (the helper rows are the pass's,
/// in panels.helper when resident; a Gram matrix the pass was given is in panels.gram already).
/// `same_projections`: an earlier job's panels whose P serves this job too.
CLP_DECL void prepare_job_panels(overlap_panels& panels, const synthesis_plan& plan, combiner combine,
                                 const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                 const vocabulary_overlap& overlap, const std::vector<float>& inverse_norm, int threads,
                                 const overlap_panels* same_projections = nullptr);

}  // namespace clp::detail

// The bodies; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/synthesis/overlap_panels-inl.hpp>
#endif
