// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: a pass, the engine's one loop over blocks of missing rows. A pass runs
// one or more jobs, each a policy with its (source, output) pairs, over the same missing rows:
// each block's normalised queries and its similarity product (their cosines with the overlap,
// most of a weighting's cost) are formed once and read by every job, so k jobs cost about one
// product, not k. A synthesis is a pass of one job; clp::synthesize_each and clp::evaluate_each
// run several.
// Every job's rows and report come out bit for bit as its own synthesis would make them: a
// cosine's bits do not depend on the block it is formed in (tiling.hpp), and a job that rewrites
// its cosines (a dense policy, a pursuit by products) works on a copy when a later job reads them.
//
// The stages, in order: each map fitted (a lambda that must be refused is refused before
// anything is written), the overlap scanned once per distinct list of sources, every job planned
// and the pass's block height and helper-panel residency taken from their plans, the helper
// panels gathered once, each job's own panels prepared, the caller's product made ready when
// every job that reads cosines reads only neighbour lists (else the float32 product serves them
// all), the blocks, and the reports.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/stopwatch.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/block_engine.hpp>
#include <clp/detail/synthesis/linear_map.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/overlap_scan.hpp>
#include <clp/detail/synthesis/rescoring.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/element_type.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/parallel.hpp>
#include <clp/similarity_product.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

namespace clp::detail {

/// One job of a pass: a policy (a clp::weighting when the jobs' policies differ) and its pairs.
template <class Policy>
struct pass_job {
  Policy policy;
  std::vector<source_output> pairs;
};

/// What a pass may be given instead of computing it from its own overlap, when that overlap is
/// part of a larger one (an evaluation's kept overlap within the whole overlap): the larger
/// overlap's Gram matrix for Batch-OMP, with the position in it of each entry of the pass's
/// overlap, and the moments of the pass's overlap for its least-squares maps.
struct overlap_givens {
  const float* gram = nullptr;  ///< gram_size x gram_size; null: none given
  Index gram_size = 0;
  const std::vector<Index>* positions = nullptr;  ///< per entry of the pass's overlap, its position in the larger
  const overlap_moments* moments = nullptr;       ///< for every map job (their sources are the same); null: none
};

/// What a pass keeps for one job.
struct job_state {
  job_state(std::size_t pairs, const std::vector<bool>& padding, int threads)
      : panels(pairs), outcomes(padding), workers(std::size_t(threads)), rescoring(std::size_t(threads)) {}
  std::size_t scan = 0;  ///< which of the pass's scans describes its sources
  synthesis_plan plan;
  combiner combine = combiner::dense;
  bool rewrites_cosines = false;  ///< its policy rewrites the row, or a pursuit forms correlations in place
  bool own_cosines = false;       ///< ... and a later job reads them: it works on a copy
  overlap_panels panels;
  row_outcomes outcomes;
  synthesis_report report;
  std::vector<block_scratch> workers;
  std::vector<rescoring_scratch> rescoring;
};

/// Each map of the pass fitted into its job's projections, the fits into its report: from the
/// moments the pass was given, or the cache's, or its own.
template <class Policy>
void fit_maps(const std::vector<pass_job<Policy>>& jobs, std::vector<job_state>& states,
              const matrix_view<const void>& helper, const vocabulary_overlap& overlap, int threads,
              const overlap_givens& given, overlap_cache* cache, const char* context) {
  for (std::size_t j = 0; j < jobs.size(); ++j)
    visit_weighting(jobs[j].policy, [&](const auto& policy) {
      if constexpr (stages_of<std::decay_t<decltype(policy)>>.weigh == weigher::query_norms) {
        const stopwatch clock;
        const auto sum = [&] { return sum_overlap_moments(jobs[j].pairs, helper, overlap, threads); };
        std::optional<overlap_moments> own;
        const overlap_moments* moments = given.moments;
        if (moments == nullptr && cache != nullptr) moments = &cache->moments(helper, overlap, jobs[j].pairs, sum);
        if (moments == nullptr) moments = &own.emplace(sum());
        states[j].report.seconds.moments = clock.seconds();
        states[j].report.maps = fit_linear_maps(states[j].panels.projection, jobs[j].pairs, helper, overlap,
                                                double(policy.lambda), threads, context, moments);
        states[j].report.seconds.fit = clock.seconds() - states[j].report.seconds.moments;
      }
    });
}

/// The overlap scanned once per distinct list of sources; each job told which scan is its own.
template <class Policy>
std::vector<overlap_scan> scan_sources(const std::vector<pass_job<Policy>>& jobs, std::vector<job_state>& states,
                                       const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                       int threads) {
  std::vector<overlap_scan> scans;
  std::vector<std::size_t> first_job;  // per scan, the job it was made for
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    std::size_t s = 0;
    while (s < scans.size() && !same_sources(jobs[first_job[s]].pairs, jobs[j].pairs)) ++s;
    if (s == scans.size()) {
      scans.push_back(scan_overlap(jobs[j].pairs, helper, overlap, threads));
      first_job.push_back(j);
    }
    states[j].scan = s;
  }
  return scans;
}

/// A pursuit runs Batch-OMP on a Gram matrix the pass was given when its budget would hold that
/// matrix (it is there already; the policy's own overlap is part of it).
inline void use_given_gram(job_state& state, const overlap_givens& given, std::size_t max_gram_bytes) {
  if (given.gram == nullptr ||
      double(given.gram_size) * double(given.gram_size) * sizeof(float) > double(max_gram_bytes))
    return;
  state.plan.gram = true;
  state.panels.gram = given.gram;
  state.panels.gram_stride = given.gram_size;
  state.panels.gram_positions = given.positions->data();
}

/// Plans every job for the tile budget, then the pass's plan: the first job's, with the tallest
/// block every job's plan allows and the helper panels resident when a job's plan has them so
/// (bits do not depend on either). A pass of one job keeps that job's plan. Each job gets the
/// pass's blocks and residency; a dense combine keeps its own decision for its source panels.
template <class Policy>
synthesis_plan plan_pass(const std::vector<pass_job<Policy>>& jobs, std::vector<job_state>& states, Index d_helper,
                         Index n_overlap, Index n_missing, int threads, std::size_t tile_bytes,
                         const overlap_givens& given) {
  Index block_rows = std::numeric_limits<Index>::max();
  bool resident = false, cosines = false;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    job_state& state = states[j];
    visit_weighting(jobs[j].policy, [&](const auto& policy) {
      using P = std::decay_t<decltype(policy)>;
      state.plan = plan_synthesis(policy, jobs[j].pairs, d_helper, n_overlap, n_missing, threads, tile_bytes);
      if constexpr (stages_of<P>.weigh == weigher::pursuit) use_given_gram(state, given, policy.max_gram_bytes);
      state.combine = stages_of<P>.combine;
      state.rewrites_cosines = P::input == weighting_input::cosine_row || (state.plan.pursuit && !state.plan.gram);
    });
    block_rows = std::min(block_rows, state.plan.blocks.rows);
    resident = resident || state.plan.resident;
    cosines = cosines || state.plan.cosines;
  }
  synthesis_plan pass = states.front().plan;
  if (jobs.size() == 1) return pass;
  pass.resident = resident;
  pass.cosines = cosines;
  pass.blocks = balance_blocks(n_missing, block_rows, threads);
  for (std::size_t j = 0; j < states.size(); ++j) {
    synthesis_plan& plan = states[j].plan;
    plan.blocks = pass.blocks;
    plan.resident = resident;
    for (std::size_t later = j + 1; later < states.size(); ++later)
      states[j].own_cosines = states[j].own_cosines || (states[j].rewrites_cosines && states[later].plan.cosines);
  }
  return pass;
}

/// Batch-OMP's Gram matrix from the cache, made there when it holds none for this helper and
/// overlap.
inline void use_cached_gram(overlap_panels& panels, overlap_cache& cache, const matrix_view<const void>& helper,
                            const vocabulary_overlap& overlap, const std::vector<float>& inverse_norm, int threads) {
  panels.gram = cache.gram(helper, overlap, [&](scratch_buffer<float>& storage) {
    compute_gram(storage, panels.helper, helper, overlap, inverse_norm, threads);
  });
  panels.gram_stride = overlap.size();
  panels.gram_positions = nullptr;
}

/// An earlier job's panels whose P (sum_j n_j a_j^T, scaled cosines) job j can read: P depends only
/// on the sources, the helper and the overlap. Null when none.
template <class Policy>
const overlap_panels* earlier_projections(const std::vector<pass_job<Policy>>& jobs,
                                          const std::vector<job_state>& states, std::size_t j) {
  const auto scales_cosines = [&](std::size_t i) {
    return states[i].combine == combiner::projected && !states[i].plan.linear_map;
  };
  if (!scales_cosines(j)) return nullptr;
  for (std::size_t i = 0; i < j; ++i)
    if (scales_cosines(i) && same_sources(jobs[i].pairs, jobs[j].pairs)) return &states[i].panels;
  return nullptr;
}

/// Whether the caller's product forms the pass's cosines: it is given, and every job that reads
/// cosines reads only a neighbour list from them (what rescoring restores exactly).
inline bool product_serves(const std::vector<job_state>& states, const synthesis_plan& pass,
                           const similarity_product* product) {
  if (product == nullptr || !pass.cosines) return false;
  return std::all_of(states.begin(), states.end(),
                     [](const job_state& s) { return !s.plan.cosines || (s.plan.k_max > 0 && !s.plan.pursuit); });
}

/// The blocks, in parallel: each block's similarities once, then every job's weights and rows
/// on its worker's scratch; progress reported as blocks finish, and the rows below the finished
/// prefix of blocks (blocks are handed out in order).
template <class Policy>
void run_pass_blocks(const block_context& pass, const std::vector<pass_job<Policy>>& jobs,
                     std::vector<job_state>& states, const std::vector<block_context>& contexts, int threads,
                     const synthesis_options& options) {
  const synthesis_plan& plan = pass.plan;
  std::vector<similarity_scratch> shared(static_cast<std::size_t>(threads));
  std::mutex report_mutex;
  Index rows_done = 0, prefix = 0;  // blocks [0, prefix) have finished
  Index started = pass.rows.first;  // no row at or above it has been written
  std::vector<bool> finished(static_cast<std::size_t>(plan.blocks.count));
  std::vector<double> similarity_seconds(static_cast<std::size_t>(threads)), row_seconds(similarity_seconds);
  const stopwatch clock;
  parallel_for(plan.blocks.count, threads, [&](Index b, int worker) {
    const stopwatch block_clock;
    const similarity_buffers similarities =
        reserve_similarities(shared[std::size_t(worker)], plan, pass.product != nullptr);
    const block_rows rows{b * plan.blocks.rows, std::min(plan.blocks.rows, plan.n_missing - b * plan.blocks.rows)};
    form_similarities(pass, rows, similarities, pass.product, worker);
    const double formed = block_clock.seconds();
    similarity_seconds[std::size_t(worker)] += formed;
    // Reported as late as it can be, when the block is about to write: until then the caller
    // may still put memory into the block's rows. Blocks are taken in order, but may reach this
    // lock out of it.
    bool announced = false;
    const auto before_writing = [&] {
      if (announced || !options.rows_started) return;
      announced = true;
      std::lock_guard<std::mutex> lock(report_mutex);
      const Index end = block_stretch(pass, b).second;
      if (end > started) options.rows_started(started = end);
    };
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      job_state& state = states[j];
      const block_buffers buffers =
          reserve_block(state.workers[std::size_t(worker)], state.plan, similarities, state.own_cosines);
      visit_weighting(jobs[j].policy, [&](const auto& policy) {
        weigh_block(contexts[j], policy, rows, buffers, similarities.bound, state.rescoring[std::size_t(worker)]);
        before_writing();
        write_block(contexts[j], policy, b, rows, buffers);
      });
    }
    row_seconds[std::size_t(worker)] += block_clock.seconds() - formed;
    std::lock_guard<std::mutex> lock(report_mutex);
    rows_done += rows.m;
    if (options.progress) options.progress(rows_done, plan.n_missing);
    finished[static_cast<std::size_t>(b)] = true;
    const Index before = prefix;
    while (prefix < plan.blocks.count && finished[static_cast<std::size_t>(prefix)]) ++prefix;
    if (options.rows_finished && prefix > before) options.rows_finished(block_stretch(pass, prefix - 1).second);
  });
  const double blocks = clock.seconds();
  const auto per_worker = [&](const std::vector<double>& s) {
    return std::accumulate(s.begin(), s.end(), 0.0) / double(threads);
  };
  for (job_state& state : states) {
    state.report.seconds.blocks = blocks;
    state.report.seconds.similarities = per_worker(similarity_seconds);
    state.report.seconds.rows = per_worker(row_seconds);
  }
}

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

/// Each job's report, from what its rows came to, in the jobs' order.
inline std::vector<synthesis_report> finish_reports(std::vector<job_state>& states,
                                                    const std::vector<overlap_scan>& scans,
                                                    const vocabulary_overlap& overlap, const rows_to_write& rows,
                                                    const similarity_product* product) {
  std::vector<synthesis_report> reports;
  for (job_state& state : states) {
    synthesis_report& report = state.report;
    report.overlap = overlap.size();
    report.median_source_row_norm = scans[state.scan].median_source_row_norm;
    report.copied_rows = rows.copy_end - rows.copy_begin;
    report.synthesized_rows = Index(rows.missing.size());
    if (!rows.missing.empty()) {
      if (product != nullptr && state.plan.k_max > 0 && !state.plan.pursuit)
        report.similarity_product = product->name();
      for (const rescoring_scratch& own : state.rescoring) {
        report.rescored_rows += own.counts.rows;
        report.rescored_candidates += own.counts.candidates;
      }
      summarise_rows(state.outcomes, report);
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

/// The copies of eq. 2 alone, for a row range without missing rows (the blocks make them
/// otherwise).
template <class Policy>
void copy_only(const std::vector<pass_job<Policy>>& jobs, const vocabulary_overlap& overlap, const rows_to_write& rows,
               const synthesis_options& options) {
  if (options.rows_started) options.rows_started(rows.last);
  for (const pass_job<Policy>& job : jobs) {
    std::vector<float> scratch(static_cast<std::size_t>(widest_source(job.pairs)));
    copy_overlap_rows(job.pairs, overlap, {rows.copy_begin, rows.copy_end}, scratch.data());
  }
  if (options.rows_finished) options.rows_finished(rows.last);
}

/// The whole pass, for validated and screened inputs (see the top of this header); one report
/// per job, in order. `compact_output`: see block_context; `given`: see overlap_givens.
template <class Policy>
std::vector<synthesis_report> run_pass(const std::vector<pass_job<Policy>>& jobs, const matrix_view<const void>& helper,
                                       const vocabulary_overlap& overlap, const rows_to_write& rows, int threads,
                                       const synthesis_options& options, bool compact_output, const char* context,
                                       const overlap_givens& given = {}) {
  const similarity_product* const product = options.product.get();
  std::vector<job_state> states;
  states.reserve(jobs.size());
  for (const pass_job<Policy>& job : jobs) states.emplace_back(job.pairs.size(), rows.padding, threads);
  if (!rows.missing.empty()) fit_maps(jobs, states, helper, overlap, threads, given, options.cache.get(), context);
  const stopwatch preparing;
  const std::vector<overlap_scan> scans = scan_sources(jobs, states, helper, overlap, threads);
  if (rows.missing.empty()) {
    copy_only(jobs, overlap, rows, options);
    return finish_reports(states, scans, overlap, rows, nullptr);
  }

  const synthesis_plan plan = plan_pass(jobs, states, helper.cols(), overlap.size(), Index(rows.missing.size()),
                                        threads, options.tile_bytes, given);
  const std::vector<float>& inverse_norm = scans.front().inverse_norm;
  const bool use_product = product_serves(states, plan, product);
  // The caller's product is prepared from the normalised overlap rows, and its candidates are
  // rescored from them: gathered once, they stay for the blocks even where the plan does not
  // keep the panels resident, so that rescoring, which reads rows scattered over the whole
  // overlap, reads them in place instead of gathering each from the helper's dtype again. They
  // cost n_overlap x d_helper floats beside the tile budget (similarity_product.hpp).
  scratch_buffer<float> helper_rows;
  if (plan.resident || use_product)
    gather_helper_rows(helper, overlap, inverse_norm, helper_rows.reserve(std::size_t(overlap.size() * helper.cols())),
                       threads);
  const float* const resident_rows = plan.resident ? helper_rows.data() : nullptr;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    states[j].panels.helper = resident_rows;
    states[j].panels.rescoring_rows = helper_rows.data();
    if (states[j].plan.gram && states[j].panels.gram == nullptr && options.cache)
      use_cached_gram(states[j].panels, *options.cache, helper, overlap, inverse_norm, threads);
    prepare_job_panels(states[j].panels, states[j].plan, states[j].combine, jobs[j].pairs, helper, overlap,
                       inverse_norm, threads, earlier_projections(jobs, states, j));
  }
  std::unique_ptr<prepared_similarity> prepared;
  if (use_product)
    prepared = product->prepare(helper_rows.data(), overlap.size(), helper.cols(), plan.blocks.rows, threads);
  overlap_panels pass_panels(0);
  pass_panels.helper = resident_rows;
  pass_panels.rescoring_rows = helper_rows.data();
  row_outcomes no_outcomes(std::vector<bool>{});
  const block_context pass{jobs.front().pairs, helper,      overlap,     rows,           plan,
                           scans.front(),      pass_panels, no_outcomes, prepared.get(), compact_output};
  std::vector<block_context> contexts;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    contexts.push_back({jobs[j].pairs, helper, overlap, rows, states[j].plan, scans[states[j].scan], states[j].panels,
                        states[j].outcomes, prepared.get(), compact_output});
  for (job_state& state : states) state.report.seconds.prepare = preparing.seconds();
  run_pass_blocks(pass, jobs, states, contexts, threads, options);
  prepared.reset();
  return finish_reports(states, scans, overlap, rows, use_product ? product : nullptr);
}

}  // namespace clp::detail
