// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Embedding synthesis (eq. 2-3): overlapping target rows copy their source row; every
/// missing target row t becomes e_t = sum_j w_tj a_j over the overlapping tokens j, with
/// weights from a policy (<clp/weights.hpp>) applied to the cosines cos(h_t, h_j) of the
/// helper model's embeddings.
///
/// How it runs: missing rows are processed in blocks of m rows. A block's normalised helper
/// rows are multiplied by the normalised overlapping helper rows, panel by panel, giving the
/// m x |overlap| cosine block; the policy turns each row into weights; the weights times the
/// overlapping source rows (panel by panel again, or only the chosen rows for a policy that
/// returns neighbours) give the block's output rows. A policy whose weights are its cosines times a row scale
/// (paper_weights) skips that second product: the block's normalised helper rows times
/// P = sum_j n_j a_j^T (d_helper x d_source, computed once) give the same rows up to the scale.
/// The |missing| x |overlap| matrix never exists, and no input is ever copied whole: panels of at most panel_rows rows
/// are gathered (and converted to float32) from the caller's matrices as needed. Blocks run in parallel; each output
/// row is computed by one thread in a fixed order whatever the thread count and tile budget, so the output is
/// bit-identical for any of them.
///
/// The engine lives in rooms of its own under clp/detail/, one per stage, and
/// detail::synthesize below runs them in order: validate (synthesis_inputs.hpp: shapes, ids,
/// row range, then the NaN screen), scan the overlap (overlap_scan.hpp: helper norms, source
/// means), plan the blocks (synthesis_plan.hpp, with the table of what
/// each kind of weighting input needs), prepare what the blocks share (overlap_panels.hpp: the
/// overlap's panels, P, the Gram matrix), then per block (block_engine.hpp): the queries and
/// their cosines (cosines.hpp), the weights (weighing.hpp, or pursuit.hpp for a pursuit, or
/// rescoring.hpp for a caller's similarity product, <clp/similarity_product.hpp>), the
/// combination with the source rows (combination.hpp), and the copies of eq. 2 between the
/// block's missing rows and the next block's; and finally the report, summed from the per-row
/// outcomes (row_outcomes.hpp). Blocks are handed out in order, so the finished ones form a
/// growing prefix of the target rows: a caller can stream the output out as it is made
/// (synthesis_options::rows_finished).
///
/// Argument order, the same for every entry point (synthesize_rows, transfer):
/// (source, helper, overlap, output, [untied_head or matrix_pairs], policy, options). Inputs come before the
/// output; the source comes first because the output is "the source with a new vocabulary"
/// (it has the source's width), and intersect_vocabularies(source, target) already puts the
/// source first.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_pass.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
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
///     clp::transfer(source, helper, overlap, output,
///                   clp::matrix_pairs{{"lm_head", head, new_head}, {"bias", bias, new_bias}}, policy);
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

namespace detail {

/// One synthesis, for validated and screened rows: a pass of one job (synthesis_pass.hpp).
/// `compact_output`: see block_context.
template <class Policy>
synthesis_report synthesize_checked(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                    const vocabulary_overlap& overlap, const rows_to_write& rows, const Policy& policy,
                                    int threads, const synthesis_options& options, bool compact_output,
                                    const char* context) {
  const std::vector<pass_job<Policy>> jobs{{policy, pairs}};
  return std::move(run_pass(jobs, helper, overlap, rows, threads, options, compact_output, context).front());
}

template <class Policy>
synthesis_report synthesize(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                            const vocabulary_overlap& overlap, const Policy& policy, const synthesis_options& options,
                            const char* context) {
  validate_shapes(pairs, helper, overlap, context);
  const rows_to_write rows = select_rows(overlap, options.first_row, options.last_row, helper.rows(), context);
  const int threads = resolve_threads(options.threads);
  screen_inputs(pairs, helper, overlap, rows.missing, threads, context);
  return synthesize_checked(pairs, helper, overlap, rows, policy, threads, options, false, context);
}

/// What may stand after `output` besides a policy: an untied head or matrix_pairs.
template <class T>
struct is_more_outputs : std::false_type {};
template <class S, class O>
struct is_more_outputs<untied_head<S, O>> : std::true_type {};
template <>
struct is_more_outputs<matrix_pairs> : std::true_type {};

/// The pairs of a synthesis: (source, output), then those of the further outputs.
template <class Source, class Output>
std::vector<source_output> pairs_of(const Source& source, Output& output) {
  return {{make_view(source), make_view(output)}};
}
template <class Source, class Output, class SourceHead, class OutputHead>
std::vector<source_output> pairs_of(const Source& source, Output& output,
                                    const untied_head<SourceHead, OutputHead>& head) {
  std::vector<source_output> pairs = pairs_of(source, output);
  pairs.push_back({make_view(head.source_head), make_view(head.output_head), "source_head", "output_head"});
  return pairs;
}
template <class Source, class Output>
std::vector<source_output> pairs_of(const Source& source, Output& output, const matrix_pairs& more) {
  std::vector<source_output> pairs = pairs_of(source, output);
  for (const matrix_pair& pair : more)
    pairs.push_back({pair.source(), pair.output(), pair.name() + " source", pair.name() + " output"});
  return pairs;
}

/// The entry points' one path: views made once, the policy (or the one a `weighting` holds)
/// checked and dispatched by visit_weighting.
template <class Helper, class Policy>
synthesis_report run_synthesis(const std::vector<source_output>& pairs, const Helper& helper,
                               const vocabulary_overlap& overlap, const Policy& policy,
                               const synthesis_options& options, const char* context) {
  const matrix_view<const void> helper_view = make_view(helper);
  return visit_weighting(policy,
                         [&](const auto& p) { return synthesize(pairs, helper_view, overlap, p, options, context); });
}

}  // namespace detail

/// Writes target rows of `output`: overlapping rows copied from `source` (eq. 2), missing rows
/// synthesised from it with `policy` (eq. 3-4).
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

/// Runs several syntheses of the same missing rows, one per job, in one pass: each block of
/// missing rows' cosines with the overlap, the one large product of most weightings, is formed
/// once and read by every job's weighting, so scoring or comparing k weightings costs about one
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
  constexpr const char* context = "clp::synthesize_each";
  if (jobs.empty()) throw invalid_argument(error_facts::in(context).with_argument("jobs"), "is empty");
  const matrix_view<const void> helper_view = make_view(helper);
  std::vector<detail::pass_job<weighting>> pass;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const std::string name = "jobs[" + std::to_string(j) + "] ";
    pass.push_back({jobs[j].policy(),
                    {{jobs[j].source(), jobs[j].output(), name + "source", name + "output", jobs[j].report_only()}}});
    detail::validate_shapes(pass.back().pairs, helper_view, overlap, context);
  }
  const detail::rows_to_write rows =
      detail::select_rows(overlap, options.first_row, options.last_row, helper_view.rows(), context);
  const int threads = resolve_threads(options.threads);
  for (std::size_t j = 0; j < pass.size(); ++j) {
    bool screened = false;  // a source screened for an earlier job needs no second screen
    for (std::size_t i = 0; i < j && !screened; ++i) screened = detail::same_sources(pass[i].pairs, pass[j].pairs);
    if (!screened) detail::screen_inputs(pass[j].pairs, helper_view, overlap, rows.missing, threads, context);
  }
  return detail::run_pass(pass, helper_view, overlap, rows, threads, options, false, context);
}

}  // namespace clp
