// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The common case in one call: the whole target embedding (and optionally an untied output
/// head) from the source model, the helper model and the vocabulary overlap.

#include <clp/matrix_view.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary.hpp>
#include <clp/weights.hpp>

#include <utility>
#include <variant>
#include <vector>

namespace clp {

/// CLP-Transfer of the input embedding: overlapping rows copied (eq. 2), missing rows
/// synthesised (eq. 3-4). Equivalent to synthesize_rows over all rows.
///
/// @param[in]  source   #source_rows by d_source: large source model's input embeddings
/// @param[in]  helper   #target_rows by d_helper: small helper model's input embeddings
/// @param[in]  overlap  from intersect_vocabularies(source vocabulary, helper vocabulary,
///                      {source_rows, target_rows})
/// @param[out] output   #target_rows by d_source, caller-owned, written in place
/// @param[in]  policy   weighting policy; paper_weights is eq. 4 as published
/// @param[in]  options  threads, tile budget (and a row range, if wanted)
template <class Policy = paper_weights, class Source, class Helper, class Output>
synthesis_report transfer(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                          Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  if constexpr (std::is_same_v<Policy, weighting>) {
    return std::visit([&](const auto& p) { return transfer(source, helper, overlap, output, p, options); }, policy);
  } else {
    return synthesize_rows(helper, overlap, source, std::forward<Output>(output), policy, options);
  }
}

/// As above, for a model with an untied output head: the head gets the same treatment with the
/// same weights (computed once) applied to the source head's rows.
///
/// @param[in]  source_head  #source_rows by d_head: the source model's output head
/// @param[out] output_head  #target_rows by d_head
template <class Policy = paper_weights, class Source, class SourceHead, class Helper, class Output, class OutputHead>
synthesis_report transfer(const Source& source, const SourceHead& source_head, const Helper& helper,
                          const vocabulary_overlap& overlap, Output&& output, OutputHead&& output_head,
                          const Policy& policy = {}, const synthesis_options& options = {}) {
  if constexpr (std::is_same_v<Policy, weighting>) {
    return std::visit(
        [&](const auto& p) { return transfer(source, source_head, helper, overlap, output, output_head, p, options); },
        policy);
  } else {
    const std::vector<detail::source_output> pairs{
        {detail::input_view::from(make_view(source)), detail::output_view::from(make_view(output))},
        {detail::input_view::from(make_view(source_head)), detail::output_view::from(make_view(output_head)),
         "source_head", "output_head"}};
    return detail::synthesize(detail::input_view::from(make_view(helper)), overlap, pairs, policy, options,
                              "clp::transfer");
  }
}

}  // namespace clp
