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
#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_pass.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/parallel.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
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

namespace detail {

/// SplitMix64's finaliser: a well-mixed 64-bit hash, the same everywhere.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The overlap positions held out: the round(share * n) (at least 1) with the smallest hashes
/// of (seed, target id), ascending. A token's fate depends only on the seed and its target id.
inline std::vector<Index> held_out_positions(const vocabulary_overlap& overlap, double share, std::uint64_t seed,
                                             const char* context) {
  const Index n = overlap.size();
  if (!(share > 0 && share < 1))
    throw invalid_argument(error_facts::in(context).with_argument("held_out_share"),
                           "must be between 0 and 1 (exclusive), got " + std::to_string(share));
  if (n < 2)
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has " + std::to_string(n) +
                               " token(s): at least 2 are needed to hold one out and synthesise it from the rest");
  const Index count = std::clamp<Index>(Index(std::llround(share * double(n))), 1, n - 1);
  std::vector<std::pair<std::uint64_t, Index>> keyed;
  keyed.reserve(std::size_t(n));
  const std::uint64_t salt = mix64(seed);
  for (Index j = 0; j < n; ++j) keyed.emplace_back(mix64(salt ^ std::uint64_t(overlap.target_ids[std::size_t(j)])), j);
  std::partial_sort(keyed.begin(), keyed.begin() + count, keyed.end());
  std::vector<Index> held;
  for (Index i = 0; i < count; ++i) held.push_back(keyed[std::size_t(i)].second);
  std::sort(held.begin(), held.end());
  return held;
}

/// The overlap the held-out rows are synthesised from: the kept pairs as its overlap, the
/// held-out target ids as its missing ids (ids only: no row is copied).
inline vocabulary_overlap kept_overlap(const vocabulary_overlap& overlap, const std::vector<Index>& held) {
  vocabulary_overlap kept;
  std::size_t next = 0;
  for (Index j = 0; j < overlap.size(); ++j) {
    if (next < held.size() && held[next] == j) {
      kept.missing_ids.push_back(overlap.target_ids[std::size_t(j)]);
      ++next;
      continue;
    }
    kept.target_ids.push_back(overlap.target_ids[std::size_t(j)]);
    kept.source_ids.push_back(overlap.source_ids[std::size_t(j)]);
  }
  kept.source_vocab_size = overlap.source_vocab_size;
  kept.target_vocab_size = overlap.target_vocab_size;
  return kept;
}

/// The value at quantile q of sorted values (nearest rank).
inline double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = std::size_t(std::llround(q * double(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

/// The scores of `synthesised` (held x d, row-major float) against the source's held-out rows.
inline held_out_scores score_rows(const std::string& name, const matrix_view<const void>& source,
                                  const std::vector<Index>& source_ids, const float* synthesised) {
  const Index d = source.cols();
  held_out_scores s;
  s.name = name;
  std::vector<float> truth(std::size_t(d), 0.0f);
  for (std::size_t i = 0; i < source_ids.size(); ++i) {
    load_row(source, source_ids[i], truth.data());
    const float* got = synthesised + i * std::size_t(d);
    double dot = 0, got2 = 0, true2 = 0, diff2 = 0;
    for (Index c = 0; c < d; ++c) {
      dot += double(got[c]) * truth[std::size_t(c)];
      got2 += double(got[c]) * got[c];
      true2 += double(truth[std::size_t(c)]) * truth[std::size_t(c)];
      diff2 += (double(got[c]) - truth[std::size_t(c)]) * (double(got[c]) - truth[std::size_t(c)]);
    }
    s.cosine.push_back(got2 > 0 && true2 > 0 ? dot / std::sqrt(got2 * true2) : 0.0);
    s.relative_error.push_back(true2 > 0 ? std::sqrt(diff2 / true2) : std::sqrt(diff2));
    s.norm_ratio.push_back(true2 > 0 ? std::sqrt(got2 / true2) : 0.0);
  }
  const double n = double(source_ids.size());
  s.mean_cosine = std::accumulate(s.cosine.begin(), s.cosine.end(), 0.0) / n;
  s.mean_relative_error = std::accumulate(s.relative_error.begin(), s.relative_error.end(), 0.0) / n;
  std::vector<double> sorted = s.cosine;
  std::sort(sorted.begin(), sorted.end());
  s.cosine_p10 = quantile_of_sorted(sorted, 0.1);
  s.median_cosine = quantile_of_sorted(sorted, 0.5);
  s.cosine_p90 = quantile_of_sorted(sorted, 0.9);
  sorted = s.norm_ratio;
  std::sort(sorted.begin(), sorted.end());
  s.median_norm_ratio = quantile_of_sorted(sorted, 0.5);
  return s;
}

/// What every split of an evaluation shares, prepared once over the whole overlap: for Batch-OMP
/// the overlap's Gram matrix (when a pursuit's budget holds it), for least-squares maps the
/// overlap's moments; its own, or the cache's. Each split reads its kept overlap's part of them
/// (overlap_givens), so a split costs neither a Gram matrix nor a pass over the kept rows of its
/// own.
struct whole_overlap {
  const float* gram = nullptr;
  const overlap_moments* moments = nullptr;
  scratch_buffer<float> own_gram;  // without a cache
  std::optional<overlap_moments> own_moments;
};

template <class Policy>
void prepare_whole_overlap(whole_overlap& whole, const std::vector<Policy>& policies,
                           const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                           const vocabulary_overlap& overlap, overlap_cache* cache, int threads) {
  bool gram = false, maps = false;
  const double gram_bytes = double(overlap.size()) * double(overlap.size()) * sizeof(float);
  for (const Policy& policy : policies)
    visit_weighting(policy, [&](const auto& p) {
      constexpr weigher weigh = stages_of<std::decay_t<decltype(p)>>.weigh;
      if constexpr (weigh == weigher::pursuit) gram = gram || gram_bytes <= double(p.max_gram_bytes);
      if constexpr (weigh == weigher::query_norms) maps = true;
    });
  const auto make_gram = [&](scratch_buffer<float>& storage) {
    compute_gram(storage, nullptr, helper, overlap, scan_overlap({}, helper, overlap, threads).inverse_norm, threads);
  };
  const auto make_moments = [&] { return sum_overlap_moments(pairs, helper, overlap, threads); };
  if (gram && cache != nullptr) {
    whole.gram = cache->gram(helper, overlap, make_gram);
  } else if (gram) {
    make_gram(whole.own_gram);
    whole.gram = whole.own_gram.data();
  }
  if (maps && cache != nullptr) {
    whole.moments = &cache->moments(helper, overlap, pairs, make_moments);
  } else if (maps) {
    whole.own_moments = make_moments();
    whole.moments = &*whole.own_moments;
  }
}

/// The overlap entries of `positions` (ascending) alone.
inline vocabulary_overlap overlap_entries(const vocabulary_overlap& overlap, const std::vector<Index>& positions) {
  vocabulary_overlap part;
  for (Index j : positions) {
    part.target_ids.push_back(overlap.target_ids[std::size_t(j)]);
    part.source_ids.push_back(overlap.source_ids[std::size_t(j)]);
  }
  part.source_vocab_size = overlap.source_vocab_size;
  part.target_vocab_size = overlap.target_vocab_size;
  return part;
}

/// The positions of the overlap that `held` (ascending) leaves.
inline std::vector<Index> kept_positions(Index n_overlap, const std::vector<Index>& held) {
  std::vector<Index> kept;
  for (Index j = 0, h = 0; j < n_overlap; ++j) {
    if (h < Index(held.size()) && held[std::size_t(h)] == j)
      ++h;
    else
      kept.push_back(j);
  }
  return kept;
}

/// What the splits of an evaluation reuse, so that only the first touches fresh memory: the
/// compact held-out matrices (per policy, per source) and the kept overlap's moments.
struct split_memory {
  std::vector<std::vector<scratch_buffer<float>>> compact;
  overlap_moments kept_moments;
};

/// One split of an evaluation, every policy: its held-out rows synthesised into compact matrices
/// in one pass (synthesis_pass.hpp: their cosines with the kept rows formed once for every
/// policy; the Gram matrix and the maps' moments taken from the whole overlap's), then scored.
/// Returns one evaluation per policy.
template <class Policy>
std::vector<evaluation> evaluate_split(const std::vector<std::pair<std::string, matrix_view<const void>>>& sources,
                                       const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                       const std::vector<Policy>& policies, const whole_overlap& whole,
                                       const std::vector<Index>& held_out, int threads,
                                       const synthesis_options& synthesis, split_memory& memory, const char* context) {
  const vocabulary_overlap kept = kept_overlap(overlap, held_out);
  const Index held = Index(held_out.size());
  const std::vector<Index> positions = kept_positions(overlap.size(), held_out);
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
  if (whole.moments != nullptr)
    moments_without(memory.kept_moments, *whole.moments,
                    sum_overlap_moments(jobs.front().pairs, helper, overlap_entries(overlap, held_out), threads));
  overlap_givens given;
  given.gram = whole.gram;
  given.gram_size = overlap.size();
  given.positions = &positions;
  given.moments = whole.moments != nullptr ? &memory.kept_moments : nullptr;
  rows_to_write rows;
  rows.missing = kept.missing_ids;
  rows.padding.assign(rows.missing.size(), false);
  std::vector<synthesis_report> reports = run_pass(jobs, helper, kept, rows, threads, synthesis, true, context, given);

  std::vector<Index> held_source_ids;
  for (Index j : held_out) held_source_ids.push_back(overlap.source_ids[std::size_t(j)]);
  std::vector<evaluation> results(policies.size());
  for (std::size_t j = 0; j < policies.size(); ++j) {
    results[j].held_out = held_out;
    results[j].kept = kept.size();
    results[j].report = std::move(reports[j]);
    for (std::size_t p = 0; p < sources.size(); ++p)
      results[j].scores.push_back(
          score_rows(sources[p].first, sources[p].second, held_source_ids, memory.compact[j][p].data()));
  }
  return results;
}

/// The whole evaluation on views, of every policy on every split: validate, prepare what the
/// splits share, then each split. Returns, per policy, one evaluation per split.
template <class Policy>
std::vector<std::vector<evaluation>> evaluate_views(const matrix_view<const void>& source,
                                                    const matrix_view<const void>& helper,
                                                    const vocabulary_overlap& overlap, const scored_matrices& more,
                                                    const std::vector<Policy>& policies,
                                                    const evaluation_options& options, const char* context) {
  if (overlap.source_ids.size() != overlap.target_ids.size())
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has target and source id lists of different lengths");
  if (helper.cols() < 1) throw invalid_argument(error_facts::in(context).with_argument("helper"), "has no columns");
  if (policies.empty()) throw invalid_argument(error_facts::in(context).with_argument("policies"), "is empty");
  if (options.splits < 1)
    throw invalid_argument(error_facts::in(context).with_argument("splits"),
                           "must be at least 1, got " + std::to_string(options.splits));
  check_sorted_ids(overlap.target_ids, helper.rows(), "overlap target", "helper", context);
  std::vector<std::pair<std::string, matrix_view<const void>>> sources{{"source", source}};
  for (const scored_matrix& m : more) sources.emplace_back(m.name, m.source);
  std::vector<source_output> pairs;  // the sources, for the screen and the maps' moments
  for (const auto& [name, view] : sources) {
    check_ids(overlap.source_ids, view.rows(), "overlap source", name, context);
    pairs.push_back({view, {}, name, name + " held out", true});
  }
  std::vector<std::vector<Index>> splits;
  for (int s = 0; s < options.splits; ++s)
    splits.push_back(held_out_positions(overlap, options.held_out_share, options.seed + std::uint64_t(s), context));
  const int threads = resolve_threads(options.threads);
  screen_inputs(pairs, helper, overlap, {}, threads, context);  // every row any split reads
  whole_overlap whole;
  prepare_whole_overlap(whole, policies, pairs, helper, overlap, options.cache.get(), threads);

  synthesis_options synthesis;
  static_cast<execution_options&>(synthesis) = options;
  std::vector<std::vector<evaluation>> results(policies.size());
  Index done = 0;  // held-out rows of the splits before this one
  const Index total = Index(splits.front().size()) * options.splits;
  if (options.progress) synthesis.progress = [&](Index rows, Index) { options.progress(done + rows, total); };
  split_memory memory;
  for (const std::vector<Index>& held : splits) {
    std::vector<evaluation> split =
        evaluate_split(sources, helper, overlap, policies, whole, held, threads, synthesis, memory, context);
    for (std::size_t j = 0; j < policies.size(); ++j) results[j].push_back(std::move(split[j]));
    done += Index(held.size());
  }
  return results;
}

}  // namespace detail

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
        detail::evaluate_views(source_view, helper_view, overlap, more, std::vector{p}, options, "clp::evaluate")
            .front()
            .front());
  });
}

/// Scores `policy` on the overlap of the embedding: holds out a share of the overlapping
/// tokens (options.seed decides which), synthesises their rows from the rest exactly as a
/// transfer would synthesise a missing row, and compares each with its true source row.
/// @param[in] source   #source_rows by d_source: the large source model's embeddings
/// @param[in] helper   #target_rows by d_helper: the helper's embeddings
/// @param[in] overlap  as for transfer (its missing ids are not read)
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
/// cosines with the kept ones are formed once for every weighting (the similarity product is most
/// of a weighting's cost), and what the splits share is prepared once over the whole overlap (for
/// omp the overlap's Gram matrix, for least-squares maps the overlap's moments, of which each
/// split takes its part). Each result is bit for bit what evaluate gives for that weighting and
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
  return detail::evaluate_views(make_view(source), make_view(helper), overlap, more, policies, options,
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
