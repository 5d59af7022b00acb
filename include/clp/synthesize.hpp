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
#include <clp/detail/block_context.hpp>
#include <clp/detail/block_engine.hpp>
#include <clp/detail/linear_map.hpp>
#include <clp/detail/overlap_panels.hpp>
#include <clp/detail/overlap_scan.hpp>
#include <clp/detail/reductions.hpp>
#include <clp/detail/row_outcomes.hpp>
#include <clp/detail/synthesis_inputs.hpp>
#include <clp/detail/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/policy.hpp>
#include <clp/similarity_product.hpp>
#include <clp/vocabulary.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp {

/// Threads and tile budget (execution_options), plus the rows to write and a progress callback.
/// How synthesis spends the tile budget: a policy that scales cosines (paper_weights) first
/// takes 4 * d_helper * d_source bytes per source for P from it. When the overlap panels,
/// 4 * |overlap| * (d_helper + d_source) bytes (d_helper alone for a policy that returns
/// neighbours or one that scales cosines), fit in half of the rest they are gathered once and
/// shared; the rest is split between the threads, each needing about
/// 4 * m * (|overlap| + d_helper + d_source) bytes for a block of m rows (plus one panel of
/// panel_rows rows when the panels are not shared); m is a multiple of 48, 48 at least, and at
/// most 480 when the panels are shared. The default budget is default_tile_bytes
/// (<clp/execution.hpp>).
struct synthesis_options : execution_options {
  /// Only target rows in [first_row, last_row) are written (copied or synthesised); -1 means
  /// up to the last row. Lets callers split one transfer across processes or machines.
  Index first_row = 0;
  Index last_row = -1;
  /// Optional: called as blocks finish with (rows synthesised so far, rows to synthesise).
  /// Calls come from the worker threads, one at a time.
  std::function<void(Index done, Index total)> progress;
  /// Optional, for a caller that streams the output out as it is made instead of holding it
  /// all (clp-transfer writes it to disk and hands the memory back): called with a target row
  /// `end` once every row in [first_row, end) that the call writes is final, with `end`
  /// increasing from call to call and last_row (resolved) in the last call. The synthesis
  /// neither reads nor writes those rows again. Calls come from the worker threads, one at a
  /// time, and hold up the worker that makes them: hand the rows to a thread of your own.
  std::function<void(Index end)> rows_finished;
  /// Optional, the other edge of the same stretch, for a caller that moves the memory of
  /// finished rows to rows not yet made: called with a target row `end`, increasing, before the
  /// synthesis writes any row at or above the previous call's `end` (the first call: before any
  /// row), last_row (resolved) in the last. Each call comes when a block is about to write (its
  /// product and weights done), from the worker threads, one at a time, and holds up every
  /// worker about to write until it returns.
  std::function<void(Index end)> rows_started;
  /// Optional: the similarity product of a weighting that returns neighbour lists (top-k,
  /// softmax, and the top-k rows of a least_squares_map's neighbour norms), possibly of lower
  /// precision with a stated bound; its candidates are rescored in float32
  /// (<clp/similarity_product.hpp>). Null: the library's float32 product. Other weightings
  /// ignore it.
  std::shared_ptr<const similarity_product> product;
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
};

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

namespace detail {

/// The counts and statistics of the rows a token names; padding rows are only counted.
inline void summarise_rows(const row_outcomes& outcomes, synthesis_report& report) {
  std::vector<double> effective, output_norm;
  effective.reserve(outcomes.flags.size());
  output_norm.reserve(outcomes.flags.size());
  for (std::size_t i = 0; i < outcomes.flags.size(); ++i) {
    const std::uint8_t flag = outcomes.flags[i];
    if (flag & padding) {
      ++report.padding_rows;
      continue;
    }
    report.zero_norm_rows += (flag & zero_norm) != 0;
    report.fallback_rows += (flag & fallback) != 0;
    report.no_positive_rows += (flag & no_positive) != 0;
    report.inflated_rows += (flag & inflated) != 0;
    report.negative_sum_rows += (flag & negative_sum) != 0;
    effective.push_back(outcomes.effective_neighbours[i]);
    output_norm.push_back(outcomes.output_norm[i]);
  }
  if (effective.empty()) return;  // padding only
  report.effective_neighbours_min = *std::min_element(effective.begin(), effective.end());
  report.effective_neighbours_max = *std::max_element(effective.begin(), effective.end());
  report.effective_neighbours_median = median(effective);
  report.max_output_row_norm = *std::max_element(output_norm.begin(), output_norm.end());
  report.median_output_row_norm = median(std::move(output_norm));
}

/// The blocks, in parallel, each on its worker's scratch; progress reported as they finish,
/// and the rows below the finished prefix of blocks (blocks are handed out in order).
template <class Policy>
rescoring_counts run_blocks(const block_context& context, const Policy& policy, int threads,
                            const synthesis_options& options) {
  // The blocks' scratch, most of the tile budget, is freed on return, before the summary's
  // vectors are made.
  std::vector<block_scratch> workers(static_cast<std::size_t>(threads));
  std::vector<rescoring_scratch> rescoring(static_cast<std::size_t>(threads));
  std::mutex report_mutex;
  Index rows_done = 0, prefix = 0;  // blocks [0, prefix) have finished
  Index started = context.rows.first;  // no row at or above it has been written
  std::vector<bool> finished(static_cast<std::size_t>(context.plan.blocks.count));
  parallel_for(context.plan.blocks.count, threads, [&](Index b, int worker) {
    rescoring_scratch& own = rescoring[static_cast<std::size_t>(worker)];
    own.worker = worker;
    // Reported as late as it can be, when the block is about to write: until then the caller
    // may still put memory into the block's rows. Blocks are taken in order, but may reach this
    // lock out of it.
    const auto before_writing = [&] {
      if (!options.rows_started) return;
      std::lock_guard<std::mutex> lock(report_mutex);
      const Index end = block_stretch(context, b).second;
      if (end > started) options.rows_started(started = end);
    };
    const Index m = run_block(context, policy, b, workers[static_cast<std::size_t>(worker)], own, before_writing);
    std::lock_guard<std::mutex> lock(report_mutex);
    rows_done += m;
    if (options.progress) options.progress(rows_done, context.plan.n_missing);
    finished[static_cast<std::size_t>(b)] = true;
    const Index before = prefix;
    while (prefix < context.plan.blocks.count && finished[static_cast<std::size_t>(prefix)]) ++prefix;
    if (options.rows_finished && prefix > before) options.rows_finished(block_stretch(context, prefix - 1).second);
  });
  rescoring_counts total;
  for (const rescoring_scratch& own : rescoring) {
    total.rows += own.counts.rows;
    total.candidates += own.counts.candidates;
  }
  return total;
}

/// The whole synthesis, stage by stage (see the top of this header).
/// The stages after validation, for checked rows; `compact_output`: see block_context.
template <class Policy>
synthesis_report synthesize_checked(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                    const vocabulary_overlap& overlap, const rows_to_write& rows, const Policy& policy,
                                    int threads, const synthesis_options& options, bool compact_output,
                                    const char* context) {
  synthesis_report report;
  overlap_panels panels(pairs.size());
  // A map is fitted first: a lambda it must refuse is refused before anything is written.
  if constexpr (stages_of<Policy>.weigh == weigher::query_norms)
    if (!rows.missing.empty())
      report.maps = fit_linear_maps(panels.projection, pairs, helper, overlap, double(policy.lambda), threads, context);
  const overlap_scan scan = scan_overlap(pairs, helper, overlap, threads);
  report.overlap = overlap.size();
  report.median_source_row_norm = scan.median_source_row_norm;
  report.copied_rows = rows.copy_end - rows.copy_begin;
  report.synthesized_rows = Index(rows.missing.size());
  if (rows.missing.empty()) {  // copies only (the blocks make them otherwise)
    std::vector<float> scratch(static_cast<std::size_t>(widest_source(pairs)));
    if (options.rows_started) options.rows_started(rows.last);
    copy_overlap_rows(pairs, overlap, {rows.copy_begin, rows.copy_end}, scratch.data());
    if (options.rows_finished) options.rows_finished(rows.last);
    return report;
  }

  const synthesis_plan plan = plan_synthesis(policy, pairs, helper.cols(), overlap.size(), Index(rows.missing.size()),
                                             threads, options.tile_bytes);
  prepare_panels(panels, plan, stages_of<Policy>.combine, pairs, helper, overlap, scan.inverse_norm, threads);
  std::unique_ptr<prepared_similarity> product;
  if (plan.k_max > 0 && !plan.pursuit) {  // neighbour lists: a policy's own, or a map's neighbour norms
    if (options.product) {
      product = prepare_product(*options.product, plan, panels, helper, overlap, scan.inverse_norm, threads);
      report.similarity_product = options.product->name();
    }
  }
  row_outcomes outcomes(rows.padding);
  const rescoring_counts rescored = run_blocks(
      block_context{pairs, helper, overlap, rows, plan, scan, panels, outcomes, product.get(), compact_output},
      policy, threads, options);
  product.reset();
  report.rescored_rows = rescored.rows;
  report.rescored_candidates = rescored.candidates;
  summarise_rows(outcomes, report);
  return report;
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

}  // namespace clp
