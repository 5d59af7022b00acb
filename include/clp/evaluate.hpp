// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// How well a weighting does on the caller's own models, without training: every overlapping
/// token has a known answer (its source row), so hold some of them out, synthesise them from
/// the rest as if they were missing, and score each synthesised row against the source row it
/// should have been. The held-out rows are written to a compact matrix of their own; the kept
/// overlap is only a list of rows the synthesis reads, so no input is copied.
///
/// What the score cannot see: held-out tokens are overlapping ones, which are more frequent and
/// shorter than the missing tokens a transfer synthesises, and a weighting that fails on a few
/// missing rows (paper_weights' negative cosine sums) may score well here. Read the score with
/// the transfer's own diagnostics of the real missing rows (negative sums, inflated rows).

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/similarity_product.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp {

/// Threads and tile budget (execution_options), plus the split.
struct evaluation_options : execution_options {
  /// The share of the overlap held out, in (0, 1); at least one token is held out and one kept.
  double held_out_share = 0.1;
  /// Which tokens are held out: the same seed gives the same split on every machine and thread
  /// count (a hash of the seed and each token's target id, not a library's random engine).
  std::uint64_t seed = 0;
  /// evaluate_each: the splits, with seeds seed, seed + 1, ...; evaluate scores one.
  int splits = 1;
  /// Optional: called as the held-out rows' blocks finish with (rows synthesised so far, rows to
  /// synthesise, over all the splits), from the worker threads, one at a time (see
  /// synthesis_options::progress).
  std::function<void(Index done, Index total)> progress;
  /// Optional: what calls over the same helper and overlap share (<clp/overlap_cache.hpp>): an
  /// evaluation's Gram matrix and maps' moments over the whole overlap, then a synthesis' of the
  /// missing rows over it. Null: its own. Results are the same either way, bit for bit.
  std::shared_ptr<overlap_cache> cache;
  /// Optional: the held-out rows' similarity product with the kept ones, as
  /// synthesis_options::product (a neighbour-list weighting's candidates, rescored in float32:
  /// the scores agree with the float32 product's to float32's rounding). Null: the library's
  /// float32 product.
  std::shared_ptr<const similarity_product> product;
};

/// The scores of one synthesised matrix (the embedding, or one more source matrix) on the
/// held-out rows, each row against the source row it should have been.
struct held_out_scores {
  std::string name;  ///< "source", then the names of the further matrices
  /// Per held-out row, in the order of evaluation::held_out.
  std::vector<double> cosine;          ///< cos(synthesised, true); 0 where either is zero
  std::vector<double> relative_error;  ///< ||synthesised - true|| / ||true|| (absolute where true is zero)
  std::vector<double> norm_ratio;      ///< ||synthesised|| / ||true|| (0 where true is zero)
  double mean_cosine = 0, cosine_p10 = 0, median_cosine = 0, cosine_p90 = 0;
  double mean_relative_error = 0, median_norm_ratio = 0;
};

/// What evaluate found.
struct evaluation {
  /// Overlap positions (indices into overlap.target_ids) held out, ascending.
  std::vector<Index> held_out;
  Index kept = 0;  ///< overlapping tokens the held-out rows were synthesised from
  /// One per synthesised matrix: the embedding first, then the further matrices in order.
  std::vector<held_out_scores> scores;
  /// The held-out synthesis' report: its counts (negative cosine sums, inflated rows, fallbacks)
  /// are those of the held-out rows; for a least_squares_map, the maps fitted on the kept rows.
  synthesis_report report;
};

/// One more source matrix with a row (or value) per source token, scored like the embedding
/// with the same weights (an untied output head): `clp::scored_matrix{"lm_head", head}`.
struct scored_matrix {
  std::string name;
  matrix_view<const void> source;
  template <class Source>
  scored_matrix(std::string name_, const Source& source_) : name(std::move(name_)), source(make_view(source_)) {}
};
using scored_matrices = std::vector<scored_matrix>;

}  // namespace clp

// The scores and the splits' passes, which read and fill the types above.
#include <clp/detail/evaluate/row_scores.hpp>
#include <clp/detail/evaluate/split_pass.hpp>

namespace clp {

/// Scores `policy` on the overlap, on the embedding and on further source matrices with the
/// same weights (an untied head); see the overload below, whose arguments it shares:
///     clp::evaluate(source, helper, overlap, clp::scored_matrices{{"lm_head", head}}, policy)
/// @param[in] more  per matrix: #source_rows by d_matrix
template <class Policy = default_weighting, class Source, class Helper>
evaluation evaluate(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                    const scored_matrices& more, const Policy& policy = {}, const evaluation_options& options = {}) {
  const matrix_view<const void> source_view = make_view(source), helper_view = make_view(helper);
  if (options.splits != 1)
    throw invalid_argument(
        error_facts::in("clp::evaluate").with_argument("splits"),
        "must be 1: evaluate scores one split (evaluate_each scores several), got " + std::to_string(options.splits));
  return detail::visit_weighting(policy, [&](const auto& p) {
    return std::move(
        detail::score_every_split(source_view, helper_view, overlap, more, std::vector{p}, options, "clp::evaluate")
            .front()
            .front());
  });
}

/// Scores `policy` on the overlap of the embedding: holds out a share of the overlapping
/// tokens (options.seed decides which), synthesises their rows from the rest exactly as a
/// transfer would synthesise a missing row, and compares each with its true source row.
/// @param[in] source   #source_rows by d_source: the large source model's embeddings
/// @param[in] helper   #target_rows by d_helper: the helper's embeddings
/// @param[in] overlap  as for synthesize_rows (its missing ids are not read)
/// @param[in] policy   a weighting policy, or a clp::weighting
/// @param[in] options  threads, tile budget, held-out share and seed
/// @throws clp::invalid_argument for an overlap of fewer than 2 tokens, a share outside (0, 1),
///         ids outside the matrices (context "clp::evaluate"); clp::non_finite_input on a NaN
///         in a row it reads; what the policy refuses (a least_squares_map with lambda = 0 on
///         a singular Gram matrix of the kept rows).
template <class Policy = default_weighting, class Source, class Helper,
          class = std::enable_if_t<!std::is_same_v<Policy, scored_matrices>>>
evaluation evaluate(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                    const Policy& policy = {}, const evaluation_options& options = {}) {
  return evaluate(source, helper, overlap, scored_matrices{}, policy, options);
}

/// Scores every weighting of `policies` on options.splits splits (seeds options.seed, seed + 1,
/// ...), as evaluate scores one weighting on one, in one pass per split: the held-out rows'
/// similarity product with the kept ones (most of a weighting's cost) is formed once for every
/// weighting, and what the splits share is prepared once over the whole overlap (for omp the
/// overlap's Gram matrix, for least-squares maps the overlap's moments, of which each split
/// takes its part). Each result is bit for bit what evaluate gives for that weighting and
/// seed alone.
///     clp::evaluate_each(source, helper, overlap, {clp::top_k_weights{}, clp::least_squares_map{}})
/// @param[in] policies  the weightings, in the order of the results (at least one)
/// @returns per weighting, one evaluation per split
/// Other parameters, and what is thrown (context "clp::evaluate_each"): as evaluate, and
/// options.splits below 1 is a clp::invalid_argument.
template <class Source, class Helper>
std::vector<std::vector<evaluation>> evaluate_each(const Source& source, const Helper& helper,
                                                   const vocabulary_overlap& overlap, const scored_matrices& more,
                                                   const std::vector<weighting>& policies,
                                                   const evaluation_options& options = {}) {
  return detail::score_every_split(make_view(source), make_view(helper), overlap, more, policies, options,
                                   "clp::evaluate_each");
}

/// As above, on the embedding alone.
template <class Source, class Helper>
std::vector<std::vector<evaluation>> evaluate_each(const Source& source, const Helper& helper,
                                                   const vocabulary_overlap& overlap,
                                                   const std::vector<weighting>& policies,
                                                   const evaluation_options& options = {}) {
  return evaluate_each(source, helper, overlap, scored_matrices{}, policies, options);
}

}  // namespace clp
