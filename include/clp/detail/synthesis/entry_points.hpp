// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the path from the public entry points (<clp/synthesize.hpp>) into the
// engine: the caller's matrices as (source, output) pairs, their checks and NaN screen, then
// one pass (synthesis_pass.hpp) of one job (synthesize_rows) or of several (synthesize_each).
// Included by <clp/synthesize.hpp> after untied_head, matrix_pairs and synthesis_job, which it
// reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_pass.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp::detail {

/// One synthesis of `pairs` with one policy: checked, screened, then a pass of one job.
template <class Policy>
synthesis_report synthesize_pairs(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                  const vocabulary_overlap& overlap, const Policy& policy,
                                  const synthesis_options& options, const char* context) {
  validate_shapes(pairs, helper, overlap, context);
  const rows_to_write rows = select_rows(overlap, options.first_row, options.last_row, helper.rows(), context);
  const int threads = resolve_threads(options.threads);
  screen_inputs(pairs, helper, overlap, rows.missing, threads, context);
  const std::vector<pass_job<Policy>> jobs{{policy, pairs}};
  return std::move(run_pass(jobs, helper, overlap, rows, threads, options, false, context).front());
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

/// synthesize_rows' one path: the helper's view made once, the policy (or the one a `weighting`
/// holds) checked and dispatched by visit_weighting.
template <class Helper, class Policy>
synthesis_report run_synthesis(const std::vector<source_output>& pairs, const Helper& helper,
                               const vocabulary_overlap& overlap, const Policy& policy,
                               const synthesis_options& options, const char* context) {
  const matrix_view<const void> helper_view = make_view(helper);
  return visit_weighting(
      policy, [&](const auto& p) { return synthesize_pairs(pairs, helper_view, overlap, p, options, context); });
}

/// synthesize_each: every job checked, each distinct source screened once, then one pass.
CLP_DECL std::vector<synthesis_report> synthesize_jobs(const matrix_view<const void>& helper,
                                                       const vocabulary_overlap& overlap,
                                                       const std::vector<synthesis_job>& jobs,
                                                       const synthesis_options& options);

}  // namespace clp::detail

// The shipped policies' syntheses: compiled once by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION, so that a caller's file instantiates only its own policies'.
#define CLP_DETAIL_SYNTHESIS_INSTANCE(prefix, Policy)                                                                  \
  prefix template synthesis_report synthesize_pairs<Policy>(const std::vector<source_output>&,                         \
                                                            const matrix_view<const void>&, const vocabulary_overlap&, \
                                                            const Policy&, const synthesis_options&, const char*);
#ifdef CLP_SEPARATE_COMPILATION
namespace clp::detail {
#define CLP_DETAIL_DECLARE(Policy) CLP_DETAIL_SYNTHESIS_INSTANCE(extern, Policy)
CLP_DETAIL_FOR_EACH_SHIPPED_POLICY(CLP_DETAIL_DECLARE)
#undef CLP_DETAIL_DECLARE
}  // namespace clp::detail
#else
#include <clp/detail/synthesis/entry_points-inl.hpp>
#endif
