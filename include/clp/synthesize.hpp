// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Embedding synthesis (eq. 2-3): overlapping target rows copy their source row; every missing
/// target row t becomes e_t = sum_j w_tj a_j over the overlapping tokens j, with the weights of a
/// policy (<clp/weights.hpp>) from the similarity product, the cosines cos(h_t, h_j) of the
/// helper model's rows. Blocked and parallel: no |missing| x |overlap| matrix, no copy of an
/// input, and the output bit-identical for any thread count and tile budget. Finished rows form a
/// growing prefix of the target rows (synthesis_options::rows_finished streams them out).
///
/// Every entry point takes its arguments in one order: (source, helper, overlap, output,
/// [untied_head or matrix_pairs], policy, options): inputs before the output, the source first,
/// as intersect_vocabularies(source, target) puts it.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/policy.hpp>
#include <clp/similarity_product.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/vocabulary.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp {

/// An untied output head, named: the source model's output head and the output's, passed right
/// after `output`. The head gets the same treatment as the embedding, with the same weights
/// (computed once) applied to the source head's rows. It only refers to the two matrices:
/// build it in the call, `clp::untied_head{source_head, output_head}`.
/// @param source_head  #source_rows by d_head: the source model's output head
/// @param output_head  #target_rows by d_head, written like `output`
template <class SourceHead, class OutputHead>
struct untied_head {
  const SourceHead& source_head;
  OutputHead&& output_head;
};
template <class SourceHead, class OutputHead>
untied_head(const SourceHead&, OutputHead&&) -> untied_head<SourceHead, OutputHead>;

/// One more matrix with a row (or a value) per token, transferred with the synthesis' weights
/// (computed once for all pairs): an untied head, its tied copies, a per-token output bias
/// as a #vocab by 1 matrix. Every pair has its own element type and width. It only refers to
/// the two matrices, which must outlive the call.
///     clp::matrix_pair("lm_head", source_head, output_head)
/// @param name    for messages ("'lm_head output' has 5000 rows but 'helper' has 5120")
/// @param source  #source_rows by d_pair, anything make_view accepts
/// @param output  #target_rows by d_pair, written like `output` (overlapping rows copied,
///                missing rows synthesised with the same weights)
class matrix_pair {
 public:
  template <class Source, class Output>
  matrix_pair(std::string name, const Source& source, Output&& output)
      : name_(std::move(name)), source_(make_view(source)), output_(make_view(output)) {}

  const std::string& name() const { return name_; }
  const matrix_view<const void>& source() const { return source_; }
  const matrix_view<void>& output() const { return output_; }

 private:
  std::string name_;
  matrix_view<const void> source_;
  matrix_view<void> output_;
};

/// Any number of matrix pairs, passed where an untied_head would be: the list form of it.
///     clp::synthesize_rows(source, helper, overlap, output,
///                          clp::matrix_pairs{{"lm_head", head, new_head}, {"bias", bias, new_bias}}, policy);
using matrix_pairs = std::vector<matrix_pair>;

/// One synthesis of clp::synthesize_each: a weighting, the source it combines and the output it
/// writes, or no output: then the rows are made and measured for the report, and not stored (what
/// a weighting would do, at the memory of a block). It only refers to the matrices, which must
/// outlive the call.
///     clp::synthesis_job(clp::top_k_weights{}, source, output)
///     clp::synthesis_job(clp::paper_weights{}, source)          // the report alone
/// @param source  #source_rows by d_source, anything make_view accepts
/// @param output  #target_rows by d_source, written as synthesize_rows writes it
class synthesis_job {
 public:
  template <class Source, class Output>
  synthesis_job(weighting policy, const Source& source, Output&& output)
      : policy_(std::move(policy)), source_(make_view(source)), output_(make_view(output)) {}
  template <class Source>
  synthesis_job(weighting policy, const Source& source)
      : policy_(std::move(policy)), source_(make_view(source)), report_only_(true) {}

  const weighting& policy() const { return policy_; }
  const matrix_view<const void>& source() const { return source_; }
  const matrix_view<void>& output() const { return output_; }
  bool report_only() const { return report_only_; }

 private:
  weighting policy_;
  matrix_view<const void> source_;
  matrix_view<void> output_;
  bool report_only_ = false;
};

}  // namespace clp

// The entry points' one path to the engine, which reads the types above.
#include <clp/detail/synthesis/entry_points.hpp>

namespace clp {

/// CLP-Transfer: writes the target rows of `output`, overlapping rows copied from `source`
/// (eq. 2), missing rows synthesised from it with `policy` (eq. 3-4).
///     clp::synthesize_rows(source, helper, overlap, output)   // with default_weighting
///
/// @param[in]  source   #source_rows by d_source: the large source model's embeddings (or
///                      output head)
/// @param[in]  helper   #target_rows by d_helper: the helper (small target-language) model's
///                      input embeddings
/// @param[in]  overlap  from intersect_vocabularies, with target ids < #target_rows and
///                      source ids < #source_rows
/// @param[out] output   #target_rows by d_source, caller-owned; rows outside the overlap and
///                      missing lists, or outside the row range, are not touched
/// @param[in]  policy   weighting policy (<clp/weights.hpp>), or a clp::weighting chosen at run
///                      time; default_weighting when not given; paper_weights is eq. 4 as
///                      published (negative cosine sums included)
/// @param[in]  options  threads, tile budget, row range, progress
/// Matrices may be of any type make_view accepts (matrix_view<const void> and
/// matrix_view<void> too), with elements float, double, Eigen::half or Eigen::bfloat16;
/// computation is float32.
/// @throws clp::invalid_argument on mismatched shapes or ids outside a matrix (facts: the
///         argument, "output", "overlap source", ..., and the row), clp::non_finite_input on a
///         NaN or infinite element of a row the synthesis reads (argument, row, column); the
///         context is "clp::synthesize_rows". Nothing is written then.
template <class Policy = default_weighting, class Source, class Helper, class Output,
          class = std::enable_if_t<!detail::is_more_outputs<Policy>::value>>
synthesis_report synthesize_rows(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                                 Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, output), helper, overlap, policy, options,
                               "clp::synthesize_rows");
}

/// As above, with further outputs after `output` that get the same weights (computed once)
/// applied to their own source rows: an untied head, `clp::untied_head{source_head,
/// output_head}`, or any number of matrix pairs, `clp::matrix_pairs{{"lm_head", head,
/// new_head}, ...}`. The report describes `output`.
/// @param[in,out] more  untied_head: source_head #source_rows by d_head, output_head
///                      #target_rows by d_head; matrix_pairs: per pair, source #source_rows by
///                      d_pair, output #target_rows by d_pair (see matrix_pair)
template <class More, class Policy = default_weighting, class Source, class Helper, class Output,
          class = std::enable_if_t<detail::is_more_outputs<More>::value>>
synthesis_report synthesize_rows(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                                 Output&& output, const More& more, const Policy& policy = {},
                                 const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, output, more), helper, overlap, policy, options,
                               "clp::synthesize_rows");
}

/// Runs several syntheses of the same missing rows, one per job, in one pass: each block's
/// similarity product (its cosines with the overlap, most of a weighting's cost) is formed once
/// and read by every job's weighting, so scoring or comparing k weightings costs about one
/// product instead of k. Each job's output and report are bit for bit those of its own
/// synthesize_rows call with the same options, with one exception: options.product (a caller's
/// similarity product) forms the pass's cosines only when every job that reads cosines reads
/// only neighbour lists (top-k, softmax, least_squares_map's neighbour norms); otherwise the
/// float32 product serves every job, and the reports say "float32".
///
/// @param[in]     helper   #target_rows by d_helper, as for synthesize_rows
/// @param[in]     overlap  as for synthesize_rows
/// @param[in,out] jobs     the syntheses: per job a weighting, a source (#source_rows by
///                         d_source) and an output (#target_rows by d_source) or none
/// @param[in]     options  threads, tile budget (each job's plan gets the whole budget), row
///                         range, progress (once per block, for all jobs), product
/// @returns one report per job, in order
/// @throws clp::invalid_argument for no jobs, and as synthesize_rows for each job (the facts'
///         argument names the job: "jobs[1] source"); clp::non_finite_input as synthesize_rows;
///         the context is "clp::synthesize_each". Nothing is written then.
template <class Helper>
std::vector<synthesis_report> synthesize_each(const Helper& helper, const vocabulary_overlap& overlap,
                                              const std::vector<synthesis_job>& jobs,
                                              const synthesis_options& options = {}) {
  return detail::synthesize_jobs(make_view(helper), overlap, jobs, options);
}

}  // namespace clp
