// SPDX-License-Identifier: MIT
#pragma once

// Internal, evaluate: clp::evaluate and clp::evaluate_each on views. Each split is one pass of
// the synthesis engine (synthesis_pass.hpp) over the split's held-out rows, one job per policy:
// their similarity product with the kept rows formed once for every policy, the Gram matrix and
// the maps' moments taken from the whole overlap's (whole_overlap.hpp), the rows written to
// compact matrices of their own, then scored. Included by <clp/evaluate.hpp> after
// evaluation_options, evaluation and scored_matrices, which it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/evaluate/held_out_split.hpp>
#include <clp/detail/evaluate/whole_overlap.hpp>
#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/detail/synthesis/linear_map.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_pass.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace clp::detail {

/// The matrices an evaluation scores: ("source", the embedding), then the scored_matrices.
using named_sources = std::vector<std::pair<std::string, matrix_view<const void>>>;

/// What the splits of an evaluation reuse, so that only the first touches fresh memory: the
/// compact held-out matrices (per policy, per source) and the kept overlap's moments.
struct split_memory {
  std::vector<std::vector<scratch_buffer<float>>> compact;
  overlap_moments kept_moments;
};

/// The jobs of a split's pass, one per policy, each writing every source's held-out rows to its
/// compact matrices in `memory`.
template <class Policy>
std::vector<pass_job<Policy>> split_jobs(const named_sources& sources, const std::vector<Policy>& policies, Index held,
                                         split_memory& memory) {
  memory.compact.resize(policies.size());
  std::vector<pass_job<Policy>> jobs;
  for (std::size_t j = 0; j < policies.size(); ++j) {
    jobs.push_back({policies[j], {}});
    memory.compact[j].resize(sources.size());
    for (std::size_t p = 0; p < sources.size(); ++p) {
      const auto& [name, view] = sources[p];
      float* const rows = memory.compact[j][p].reserve(std::size_t(held * view.cols()));
      std::fill(rows, rows + held * view.cols(), 0.0f);
      jobs[j].pairs.push_back(
          {view, matrix_view<void>(matrix_view<float>(rows, held, view.cols())), name, name + " held out"});
    }
  }
  return jobs;
}

/// One split, every policy: the held-out rows synthesised in one pass, then scored. Returns
/// one evaluation per policy.
template <class Policy>
std::vector<evaluation> score_split(const named_sources& sources, const matrix_view<const void>& helper,
                                    const vocabulary_overlap& overlap, const std::vector<Policy>& policies,
                                    const whole_overlap& whole, const held_out_split& split, int threads,
                                    const synthesis_options& synthesis, split_memory& memory, const char* context) {
  const Index held = Index(split.held_out.size());
  std::vector<pass_job<Policy>> jobs = split_jobs(sources, policies, held, memory);
  if (whole.moments != nullptr)
    moments_without(memory.kept_moments, *whole.moments,
                    sum_overlap_moments(jobs.front().pairs, helper, split.held, threads));
  overlap_givens given;
  given.gram = whole.gram;
  given.gram_size = overlap.size();
  given.positions = &split.kept_at;
  given.moments = whole.moments != nullptr ? &memory.kept_moments : nullptr;
  rows_to_write rows;
  rows.missing = split.kept.missing_ids;
  rows.padding.assign(rows.missing.size(), false);
  std::vector<synthesis_report> reports =
      run_pass(jobs, helper, split.kept, rows, threads, synthesis, true, context, given);

  std::vector<evaluation> results(policies.size());
  for (std::size_t j = 0; j < policies.size(); ++j) {
    results[j].held_out = split.held_out;
    results[j].kept = split.kept.size();
    results[j].report = std::move(reports[j]);
    for (std::size_t p = 0; p < sources.size(); ++p)
      results[j].scores.push_back(
          score_rows(sources[p].first, sources[p].second, split.held.source_ids, memory.compact[j][p].data()));
  }
  return results;
}

/// The refusals of an evaluation that no split's own checks make.
inline void check_evaluation(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                             std::size_t policies, int splits, const char* context) {
  if (overlap.source_ids.size() != overlap.target_ids.size())
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has target and source id lists of different lengths");
  if (helper.cols() < 1) throw invalid_argument(error_facts::in(context).with_argument("helper"), "has no columns");
  if (policies == 0) throw invalid_argument(error_facts::in(context).with_argument("policies"), "is empty");
  if (splits < 1)
    throw invalid_argument(error_facts::in(context).with_argument("splits"),
                           "must be at least 1, got " + std::to_string(splits));
  check_sorted_ids(overlap.target_ids, helper.rows(), "overlap target", "helper", context);
}

/// The whole evaluation, of every policy on every split: validate, prepare what the splits
/// share, then each split. Returns, per policy, one evaluation per split.
template <class Policy>
std::vector<std::vector<evaluation>> score_every_split(const matrix_view<const void>& source,
                                                       const matrix_view<const void>& helper,
                                                       const vocabulary_overlap& overlap, const scored_matrices& more,
                                                       const std::vector<Policy>& policies,
                                                       const evaluation_options& options, const char* context) {
  check_evaluation(helper, overlap, policies.size(), options.splits, context);
  named_sources sources{{"source", source}};
  for (const scored_matrix& m : more) sources.emplace_back(m.name, m.source);
  std::vector<source_output> pairs;  // the sources, for the screen and the maps' moments
  for (const auto& [name, view] : sources) {
    check_ids(overlap.source_ids, view.rows(), "overlap source", name, context);
    pairs.push_back({view, {}, name, name + " held out", true});
  }
  std::vector<held_out_split> splits;
  for (int s = 0; s < options.splits; ++s)
    splits.push_back(split_overlap(
        overlap, held_out_positions(overlap, options.held_out_share, options.seed + std::uint64_t(s), context)));
  const int threads = resolve_threads(options.threads);
  screen_inputs(pairs, helper, overlap, {}, threads, context);  // every row any split reads
  whole_overlap whole;
  prepare_whole_overlap(whole, policies, pairs, helper, overlap, options.cache.get(), threads);

  synthesis_options synthesis;
  static_cast<execution_options&>(synthesis) = options;
  synthesis.product = options.product;
  std::vector<std::vector<evaluation>> results(policies.size());
  Index done = 0;  // held-out rows of the splits before this one
  const Index total = Index(splits.front().held_out.size()) * options.splits;
  if (options.progress) synthesis.progress = [&](Index rows, Index) { options.progress(done + rows, total); };
  split_memory memory;
  for (const held_out_split& split : splits) {
    std::vector<evaluation> scored =
        score_split(sources, helper, overlap, policies, whole, split, threads, synthesis, memory, context);
    for (std::size_t j = 0; j < policies.size(); ++j) results[j].push_back(std::move(scored[j]));
    done += Index(split.held_out.size());
  }
  return results;
}

}  // namespace clp::detail

// The shipped policies' evaluations, and evaluate_each's of a list of weightings: compiled once
// by <clp/impl/src.hpp> with CLP_SEPARATE_COMPILATION.
#define CLP_DETAIL_EVALUATION_INSTANCE(prefix, Policy)                                           \
  prefix template std::vector<std::vector<evaluation>> score_every_split<Policy>(                \
      const matrix_view<const void>&, const matrix_view<const void>&, const vocabulary_overlap&, \
      const scored_matrices&, const std::vector<Policy>&, const evaluation_options&, const char*);
#ifdef CLP_SEPARATE_COMPILATION
namespace clp::detail {
#define CLP_DETAIL_DECLARE(Policy) CLP_DETAIL_EVALUATION_INSTANCE(extern, Policy)
CLP_DETAIL_FOR_EACH_SHIPPED_POLICY(CLP_DETAIL_DECLARE)
CLP_DETAIL_DECLARE(weighting)
#undef CLP_DETAIL_DECLARE
}  // namespace clp::detail
#endif
