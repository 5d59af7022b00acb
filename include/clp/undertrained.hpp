// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Under-trained rows of an embedding matrix: tokens the model's training barely saw, whose
/// rows a transfer should synthesise rather than copy (docs/undertrained.md). Two indicators of
/// Land & Bartolo (2024, "Fishing for Magikarp"), each with a threshold from the matrix's own
/// distribution:
///
/// - the row norm: an untied input embedding row that training never reached keeps shrinking
///   under weight decay. Flagged when below norm_threshold.
/// - the cosine of the row to a reference of unused rows, both with the first principal
///   component of the mean-centred matrix projected out: x' = x - (x . p) p. Under-trained rows
///   of tied and untied models gather in one direction. The reference is the mean x' of the
///   rows the caller knows are unused (reserved, never-assigned ids); without them, of the
///   largest group of near-identical rows (see undertrained_options::cluster_radius). Flagged
///   when above cosine_threshold.
///
///     clp::undertrained_rows found = clp::find_undertrained_rows(source_embeddings);
///     overlap = clp::without_source_rows(overlap, found.flagged);  // synthesise them instead

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/config.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <optional>
#include <vector>

namespace clp {

/// Where the cosine indicator's reference came from.
enum class undertrained_reference {
  none,        ///< no unused ids and no group of near-identical rows: the cosine indicator is off
  unused_ids,  ///< the rows of undertrained_options::unused_ids
  cluster,     ///< the largest group of near-identical rows the search found
};

/// What find_undertrained_rows looks at, and its thresholds. Every default threshold comes from
/// the matrix's own distribution (over all its rows), robustly: the median m and sigma = 1.4826
/// times the median absolute deviation of the indicator.
struct undertrained_options {
  /// Rows known to be unused (reserved special tokens, ids no token was ever assigned); any
  /// order, repeats ignored. Empty: the reference is searched for.
  std::vector<Index> unused_ids;
  /// The rows to flag (the source rows the target shares, say), any order, repeats ignored;
  /// nullopt: every row. The thresholds still come from the whole matrix.
  std::optional<std::vector<Index>> rows;
  /// The norm threshold is exp(m - max(norm_spread * sigma, ln(1 / max_norm_ratio))) over the
  /// natural logarithms of the row norms: norm_spread robust deviations below the median norm,
  /// and at most max_norm_ratio times it. norm_spread >= 0, max_norm_ratio in (0, 1].
  double norm_spread = 5;
  double max_norm_ratio = 0.5;
  /// The cosine threshold is m + cosine_spread * sigma over the cosines of all rows, kept within
  /// [min_cosine_threshold, max_cosine_threshold]: cosine_spread >= 0, -1 <= min <= max <= 1.
  /// The upper bound keeps a wide spread (a small or very anisotropic matrix, where cosines to
  /// any direction scatter widely) from hiding rows that point almost exactly the reference's way.
  double cosine_spread = 5;
  double min_cosine_threshold = 0.5;
  double max_cosine_threshold = 0.9;
  /// Overrides of either threshold; 0 turns the norm indicator off, a cosine threshold of 1
  /// or more the cosine one.
  std::optional<double> norm_threshold;
  std::optional<double> cosine_threshold;
  /// The reference search, without unused_ids: near-identical rows lie within cluster_radius
  /// times the median distance of a row from the mean row of their own mean (> 0), and at
  /// least min_cluster_rows of them (>= 2) make a group. The default keeps two members closer
  /// than trained rows' nearest neighbours usually are. Rows below the norm threshold of the
  /// distribution never join one: a group of near-zero rows has no direction to compare with.
  double cluster_radius = 0.15;
  Index min_cluster_rows = 8;
  /// Worker threads, 0: all hardware threads. No result depends on it.
  int threads = 0;
};

/// What find_undertrained_rows found.
struct undertrained_rows {
  /// The flagged rows among undertrained_options::rows, ascending: norm below norm_threshold or
  /// cosine above cosine_threshold.
  std::vector<Index> flagged;
  /// #rows: every row's Euclidean norm (the untied-model indicator).
  std::vector<double> norms;
  /// #rows: every row's cosine to the reference, first principal component removed from both
  /// (0 for a row with nothing left); empty when reference is none.
  std::vector<double> cosines;
  /// #cols: the unit direction removed from the rows and the reference before their cosines,
  /// the first principal component of the mean-centred rows as the screen's fixed passes find
  /// it: the top eigenvector to about 1e-6 radians where one direction dominates, and where the
  /// top variances are close, a unit vector of their span (see find_undertrained_rows). Empty
  /// when reference is none.
  std::vector<double> component;
  /// A row is flagged when its norm is below this (0: never).
  double norm_threshold = 0;
  /// A row is flagged when its cosine is above this; nullopt when reference is none.
  std::optional<double> cosine_threshold;
  undertrained_reference reference = undertrained_reference::none;
  /// The rows whose mean is the reference, ascending: the unused ids, or the group found.
  std::vector<Index> reference_ids;
  /// Flagged rows below the norm threshold, and above the cosine threshold (a row may be both).
  Index flagged_by_norm = 0;
  Index flagged_by_cosine = 0;
};

/// Flags the under-trained rows of an embedding matrix (an input embedding, or the tied
/// input-output one). Elements are read as float32, as everywhere in the library; sums are
/// double. Reads the rows a fixed number of times, whatever the matrix: once for the norms, the
/// mean and random projections; twice more to search for the reference without unused ids; and
/// where there is a reference, five more (the principal component's sketch and three passes of
/// subspace iteration, and the cosines; the sketch rides on the first read when the unused ids
/// are known). So three reads with no reference, five with unused ids, eight with a group found.
/// No copy of the matrix: working memory is a chunk of rows per thread (at most 1 MiB of float32
/// each, none for contiguous float32 rows), about 200 bytes a row of results and scratch (about
/// 50 with unused ids), and 200 bytes a column per thread of partial sums.
/// The result is the same for any thread count.
/// @param[in] embeddings  #rows by d, anything make_view accepts (a matrix_view<const void> of
///                        float32, float64, float16 or bfloat16 too)
/// @param[in] options     ids, thresholds and threads
/// @throws clp::invalid_argument for an id that is not a row of `embeddings`, an option out of
///         range, or d = 0 with rows; clp::non_finite_input for a NaN or infinite element
template <class Matrix>
undertrained_rows find_undertrained_rows(const Matrix& embeddings, const undertrained_options& options = {});

namespace detail::undertrained {
/// find_undertrained_rows on a view: the screen, in the body below.
CLP_DECL undertrained_rows screen(const matrix_view<const void>& m, const undertrained_options& o);
}  // namespace detail::undertrained

template <class Matrix>
undertrained_rows find_undertrained_rows(const Matrix& embeddings, const undertrained_options& options) {
  return detail::undertrained::screen(make_view(embeddings), options);
}

/// The overlap without the pairs whose source row is in `source_rows` (flagged rows, say): their
/// target rows join missing_ids, so a transfer synthesises them like any missing row, and every
/// weighting's support, least-squares fit, row-norm statistics and held-out split, all drawn from
/// the pairs, leave them out. matched_by and the counts by match reason follow when matched_by is
/// parallel to the pairs (else both are left as they are); shared_strings, the vocabulary sizes
/// and unnamed_ids are unchanged. An id in no pair is ignored.
/// @param[in] overlap      any vocabulary_overlap
/// @param[in] source_rows  source row ids, any order, each >= 0
/// @throws clp::invalid_argument for a negative id
CLP_DECL vocabulary_overlap without_source_rows(const vocabulary_overlap& overlap,
                                                const std::vector<Index>& source_rows);

}  // namespace clp

// The body; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/diagnostics/undertrained.hpp>
#endif
