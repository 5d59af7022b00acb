// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What a synthesis did, row by row summed up: what every synthesis entry point returns
/// (<clp/synthesize.hpp>), one per weighting from clp::synthesize_each.

#include <clp/element_type.hpp>
#include <clp/weights.hpp>

#include <string>
#include <vector>

namespace clp {

/// Wall seconds of a synthesis' steps, in the order they run; 0 for a step that did not run.
/// `similarities` and `rows` split `blocks` by the workers' own time in each (their sums over
/// the workers, divided by the number of workers), so they add up to about `blocks`.
struct synthesis_seconds {
  double moments = 0;       ///< least_squares_map: the overlap's sums G, B (0 when given or cached)
  double fit = 0;           ///< least_squares_map: G's eigendecomposition, lambda, the maps
  double prepare = 0;       ///< the overlap's scan, the overlap panels, the caller's product made ready
  double blocks = 0;        ///< the blocks of missing rows, all of it
  double similarities = 0;  ///< ... of which the blocks' similarity products (cosines, candidates)
  double rows = 0;          ///< ... of which weighing, rescoring and writing the rows
};

/// What a synthesis did. Row counts refer to the rows written (the row range).
struct synthesis_report {
  Index overlap = 0;           ///< |Vs ∩ Vt|
  Index copied_rows = 0;       ///< overlapping rows copied (eq. 2)
  Index synthesized_rows = 0;  ///< missing rows synthesised (eq. 3)
  /// Synthesised rows no token names (vocabulary_overlap::unnamed_ids: embedding padding).
  /// They are written like every missing row, but none of the counts and statistics below
  /// include them: a zero padding row is not a weighting failure.
  Index padding_rows = 0;
  /// Rows set to the mean of the overlapping source rows because their helper row has zero
  /// norm or the policy could not weight them (see each policy). Their sum is degenerate_rows.
  Index zero_norm_rows = 0;
  Index fallback_rows = 0;
  Index degenerate_rows() const { return zero_norm_rows + fallback_rows; }
  /// Rows whose largest cosine is not positive: the helper sees no overlapping token as similar.
  Index no_positive_rows = 0;
  /// Rows whose cosine sum is negative, whatever the policy: paper_weights divides by that
  /// sum, as published, so their weights flip sign; guarded_paper_weights falls back on them.
  Index negative_sum_rows = 0;
  /// Rows whose weights' absolute values add up to more than 2: a small cosine sum that
  /// inflates the output row (paper_weights, or guarded_paper_weights with a loose guard).
  Index inflated_rows = 0;
  /// The effective number of neighbours 1 / sum_j w_tj^2 over the synthesised rows (not
  /// padding; a row set to the mean counts as |overlap|).
  double effective_neighbours_min = 0, effective_neighbours_median = 0, effective_neighbours_max = 0;
  /// Largest and median norm of the synthesised rows (not padding) of the first output, and the median norm
  /// of the overlapping rows of the first source, to spot inflated rows at a glance.
  double max_output_row_norm = 0, median_output_row_norm = 0, median_source_row_norm = 0;
  /// The product that formed the cosines: "float32" (the library's), or the name of
  /// synthesis_options::product where a neighbour-list weighting used it.
  std::string similarity_product = "float32";
  /// With a caller's product: rows whose candidates were rescored (bound > 0), and the
  /// candidates rescored over them, padding rows included.
  Index rescored_rows = 0, rescored_candidates = 0;
  /// least_squares_map only: one fit per (source, output) pair, in the order of the pairs (the
  /// embedding first), each with its own lambda; empty for the other policies, and when no row
  /// was synthesised. For a map, inflated_rows counts rows whose norm is more than 4 times
  /// median_source_row_norm (a map has no weights to sum), and every row's effective
  /// neighbours are |overlap|.
  std::vector<least_squares_fit> maps;
  /// How long each step took (wall seconds). The one field that differs between runs: compare
  /// reports without it.
  synthesis_seconds seconds;
};

}  // namespace clp
