// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The common case in one call: the whole target embedding (and optionally an untied output
/// head, or any matrices with a row per token) from the source model, the helper model and the
/// vocabulary overlap. The arguments come in the one order every entry point uses: (source,
/// helper, overlap, output, [untied_head or matrix_pairs], policy, options); see
/// synthesize.hpp for why.

#include <clp/matrix_view.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary.hpp>
#include <clp/weights.hpp>

#include <type_traits>
#include <utility>

namespace clp {

/// CLP-Transfer of the input embedding: overlapping rows copied (eq. 2), missing rows
/// synthesised (eq. 3-4). synthesize_rows under the name a caller of the whole transfer
/// knows: its errors name clp::transfer.
///
/// @param[in]  source   #source_rows by d_source: large source model's input embeddings
/// @param[in]  helper   #target_rows by d_helper: small helper model's input embeddings
/// @param[in]  overlap  from intersect_vocabularies(source vocabulary, helper vocabulary,
///                      {source_rows, target_rows})
/// @param[out] output   #target_rows by d_source, caller-owned, written in place
/// @param[in]  policy   weighting policy, or a clp::weighting; default_weighting when not
///                      given; paper_weights is eq. 4 as published
/// @param[in]  options  threads, tile budget (and a row range, if wanted)
/// @throws clp::error as synthesize_rows
template <class Policy = default_weighting, class Source, class Helper, class Output,
          class = std::enable_if_t<!detail::is_more_outputs<Policy>::value>>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, output), helper, overlap, policy, options, "clp::transfer");
}

/// As above, with further outputs named after `output`, each given the same weights (computed
/// once) applied to its own source rows:
///     clp::transfer(source, helper, overlap, output, clp::untied_head{source_head, output_head})
///     clp::transfer(source, helper, overlap, output,
///                   clp::matrix_pairs{{"lm_head", head, new_head}, {"lm_head bias", bias, new_bias}})
/// Every matrix pair may have its own element type and width; see matrix_pair.
///
/// @param[in,out] more  untied_head: source_head #source_rows by d_head, output_head
///                      #target_rows by d_head, written like `output`; matrix_pairs: per pair,
///                      source #source_rows by d_pair, output #target_rows by d_pair
template <class More, class Policy = default_weighting, class Source, class Helper, class Output,
          class = std::enable_if_t<detail::is_more_outputs<More>::value>>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const More& more, const Policy& policy = {},
                          const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, output, more), helper, overlap, policy, options,
                               "clp::transfer");
}

}  // namespace clp
