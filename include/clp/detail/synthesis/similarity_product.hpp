// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the similarity product (<clp/similarity_product.hpp>), the library's own:
// a block's queries (its normalised helper rows) and their cosines with the overlap's helper
// rows, most of a weighting's cost, in float32. The product is cut into the fixed panels
// of the overlap (tiling.hpp), which is what keeps every cosine's bits independent of the
// block it was computed in.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>

namespace clp::detail {

/// Normalised helper rows of the block and their norms; rows past m are zero (padding to the
/// block height). Done once per block for every job of a pass: each job flags its zero rows
/// (flag_zero_norms).
CLP_DECL void normalise_queries(const block_context& context, block_rows rows, const similarity_buffers& buffers);

/// A zero helper row is flagged zero_norm, in one job's outcomes.
inline void flag_zero_norms(const block_context& context, block_rows rows, const float* query_norm) {
  for (Index i = 0; i < rows.m; ++i)
    if (!(query_norm[i] > 0)) context.outcomes.flags[std::size_t(rows.row0 + i)] |= zero_norm;
}

/// The block's rows `left` (block x d_helper) times the normalised overlapping helper rows,
/// panel by panel of the overlap, into `cosines` (block x n_overlap): the cosines for the
/// normalised queries, a pursuit's correlations for its residuals. `panel` (panel_rows x
/// d_helper at least) holds a gathered panel when the panels are not resident.
CLP_DECL void form_cosines(const block_context& context, const float* left, float* cosines, float* panel);

/// Flags of a row from its cosines, whatever the weighting: no positive cosine, a negative sum.
inline void flag_cosines(double max, double sum, std::uint8_t& flag) {
  if (max <= 0) flag |= no_positive;
  if (sum < 0) flag |= negative_sum;
}

}  // namespace clp::detail

// The bodies; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/synthesis/similarity_product-inl.hpp>
#endif
