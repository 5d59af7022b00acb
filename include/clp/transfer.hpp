// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The common case in one call: the whole target embedding (and optionally an untied output
/// head) from the source model, the helper model and the vocabulary overlap. The arguments come
/// in the one order every entry point uses: (source, helper, overlap, output, [untied_head],
/// policy, options); see synthesize.hpp for why.

#include <clp/matrix_view.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary.hpp>
#include <clp/weights.hpp>

#include <type_traits>
#include <utility>

namespace clp {

/// CLP-Transfer of the input embedding: overlapping rows copied (eq. 2), missing rows
/// synthesised (eq. 3-4). Equivalent to synthesize_rows over all rows (its errors name
/// clp::synthesize_rows).
///
/// @param[in]  source   #source_rows by d_source: large source model's input embeddings
/// @param[in]  helper   #target_rows by d_helper: small helper model's input embeddings
/// @param[in]  overlap  from intersect_vocabularies(source vocabulary, helper vocabulary,
///                      {source_rows, target_rows})
/// @param[out] output   #target_rows by d_source, caller-owned, written in place
/// @param[in]  policy   weighting policy, or a clp::weighting; paper_weights is eq. 4 as
///                      published
/// @param[in]  options  threads, tile budget (and a row range, if wanted)
template <class Policy = paper_weights, class Source, class Helper, class Output,
          class = std::enable_if_t<!detail::is_more_outputs<Policy>::value>>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  return synthesize_rows(source, helper, overlap, std::forward<Output>(output), policy, options);
}

/// As above, for a model with an untied output head, named after `output`:
/// `clp::transfer(source, helper, overlap, output, clp::untied_head{source_head, output_head})`.
/// The head gets the same treatment with the same weights (computed once) applied to the
/// source head's rows.
///
/// @param[in,out] head  source_head: #source_rows by d_head, the source model's output head;
///                      output_head: #target_rows by d_head, written like `output`
template <class Policy = paper_weights, class Source, class Helper, class Output, class SourceHead, class OutputHead>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const untied_head<SourceHead, OutputHead>& head, const Policy& policy = {},
                          const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, std::forward<Output>(output), head), helper, overlap, policy,
                               options, "clp::transfer");
}

/// As above, for any number of further matrices with a row per token, named after `output`:
/// `clp::transfer(source, helper, overlap, output, clp::matrix_pairs{{"lm_head", head, new_head},
/// {"lm_head bias", bias, new_bias}})`. Every pair gets the same weights (computed once) and may
/// have its own element type and width; see matrix_pair.
///
/// @param[in,out] more  per pair: source #source_rows by d_pair, output #target_rows by d_pair
template <class Policy = paper_weights, class Source, class Helper, class Output>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const matrix_pairs& more, const Policy& policy = {},
                          const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, std::forward<Output>(output), more), helper, overlap, policy,
                               options, "clp::transfer");
}

}  // namespace clp
