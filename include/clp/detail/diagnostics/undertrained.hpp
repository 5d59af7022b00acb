// SPDX-License-Identifier: MIT
#pragma once

// Internal: the body of <clp/undertrained.hpp>, whose contracts are there; included by it in
// header-only builds, and by <clp/impl/src.hpp> with CLP_SEPARATE_COMPILATION. The screen in
// order: the first pass (norms, mean, projections), the norm threshold, the reference (the
// unused ids, or the group the cluster search finds in two passes), and where there is one, the
// first principal component (a sketch and three passes of subspace iteration), the cosines and
// their threshold; then the flags.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/diagnostics/dense_cluster.hpp>
#include <clp/detail/diagnostics/principal_component.hpp>
#include <clp/detail/diagnostics/row_passes.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/undertrained.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

namespace clp {
namespace detail::undertrained {

inline constexpr const char* context = "clp::find_undertrained_rows";

/// `ids` sorted, repeats dropped; throws unless each is a row of a matrix of `rows` rows.
inline std::vector<Index> checked_ids(std::vector<Index> ids, Index rows, const char* name) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (Index id : ids)
    if (id < 0 || id >= rows)
      throw invalid_argument(
          error_facts::in(context).with_argument(name),
          "holds " + std::to_string(id) + ", not a row of the " + std::to_string(rows) + "-row matrix");
  return ids;
}

/// Throws unless `holds` (a condition on the option `name`), saying it must be `what`.
inline void require(bool holds, const char* name, const char* what, double value) {
  if (!holds)
    throw invalid_argument(error_facts::in(context).with_argument(name),
                           std::string("must be ") + what + ", not " + std::to_string(value));
}

inline void check_options(const matrix_view<const void>& m, const undertrained_options& o) {
  require(o.norm_spread >= 0 && std::isfinite(o.norm_spread), "options.norm_spread", "finite and >= 0", o.norm_spread);
  require(o.max_norm_ratio > 0 && o.max_norm_ratio <= 1, "options.max_norm_ratio", "in (0, 1]", o.max_norm_ratio);
  require(o.cosine_spread >= 0 && std::isfinite(o.cosine_spread), "options.cosine_spread", "finite and >= 0",
          o.cosine_spread);
  require(o.min_cosine_threshold >= -1 && o.min_cosine_threshold <= 1, "options.min_cosine_threshold", "in [-1, 1]",
          o.min_cosine_threshold);
  require(o.max_cosine_threshold >= o.min_cosine_threshold && o.max_cosine_threshold <= 1,
          "options.max_cosine_threshold", "in [options.min_cosine_threshold, 1]", o.max_cosine_threshold);
  if (o.norm_threshold)
    require(*o.norm_threshold >= 0 && std::isfinite(*o.norm_threshold), "options.norm_threshold", "finite and >= 0",
            *o.norm_threshold);
  if (o.cosine_threshold)
    require(std::isfinite(*o.cosine_threshold), "options.cosine_threshold", "finite", *o.cosine_threshold);
  require(o.cluster_radius > 0 && std::isfinite(o.cluster_radius), "options.cluster_radius", "finite and > 0",
          o.cluster_radius);
  require(o.min_cluster_rows >= 2, "options.min_cluster_rows", "at least 2", double(o.min_cluster_rows));
  if (m.rows() > 0 && m.cols() == 0)
    throw invalid_argument(error_facts::in(context).with_argument("embeddings"),
                           "has " + std::to_string(m.rows()) + " rows of width 0");
}

/// Throws clp::non_finite_input at the first row (and its first column) whose norm is not finite.
inline void require_finite_norms(const matrix_view<const void>& m, const std::vector<double>& norms) {
  for (Index r = 0; r < m.rows(); ++r) {
    if (std::isfinite(norms[static_cast<std::size_t>(r)])) continue;
    std::vector<float> row(static_cast<std::size_t>(m.cols()));
    read_row_as_float(m, r, row.data());
    Index c = 0;
    while (c + 1 < m.cols() && std::isfinite(row[static_cast<std::size_t>(c)])) ++c;
    throw non_finite_input(error_facts::in(context).with_argument("embeddings").at(r, c));
  }
}

/// The norm threshold of the distribution of ln(norm) (see undertrained_options::norm_spread).
inline double distribution_norm_threshold(const std::vector<double>& norms, const undertrained_options& o) {
  std::vector<double> logs(norms.size());
  std::transform(norms.begin(), norms.end(), logs.begin(), [](double x) { return std::log(x); });
  const robust_spread s = robust_spread::of(logs);
  if (!std::isfinite(s.median)) return 0;  // most rows are zero
  return std::exp(s.median - std::max(o.norm_spread * s.sigma, -std::log(o.max_norm_ratio)));
}

/// (x - mean) - ((x - mean) . p) p: x centred, the first principal component projected out.
inline Eigen::VectorXd residual(const Eigen::VectorXd& x, const Eigen::VectorXd& mean, const Eigen::VectorXd& p) {
  const Eigen::VectorXd centred = x - mean;
  return centred - centred.dot(p) * p;
}

/// One pass: every row's cosine to `reference` (a residual, so orthogonal to p), the row made
/// a residual too. With c = x - mean and r = c - (c . p) p: r . reference = c . reference -
/// (c . p)(p . reference) and ||r||^2 = ||c||^2 - (c . p)^2, from one loop over the row.
inline std::vector<double> residual_cosines(const matrix_view<const void>& m, const Eigen::VectorXd& mean,
                                            const Eigen::VectorXd& p, const Eigen::VectorXd& reference, int threads) {
  std::vector<double> cosines(static_cast<std::size_t>(m.rows()));
  const double reference_norm = reference.norm();
  const double p_along_reference = p.dot(reference);
  for_each_chunk(m, threads, [&](Index, const row_chunk& chunk) {
    for (Index i = 0; i < chunk.count; ++i) {
      const centred_products c = centred_products_of(chunk.row(i), mean.data(), p.data(), reference.data(), chunk.cols);
      const double product = c.with_v - c.with_u * p_along_reference;
      const double squares = std::max(0.0, c.squares - c.with_u * c.with_u);
      const double denominator = std::sqrt(squares) * reference_norm;
      cosines[static_cast<std::size_t>(chunk.first + i)] = denominator > 0 ? product / denominator : 0.0;
    }
  });
  return cosines;
}

/// The eligible rows of the cluster search: nonzero, and not below the norm threshold of the
/// distribution.
inline std::vector<Index> cluster_candidates(const std::vector<double>& norms, double norm_cut) {
  std::vector<Index> eligible;
  for (std::size_t r = 0; r < norms.size(); ++r)
    if (norms[r] > 0 && norms[r] >= norm_cut) eligible.push_back(static_cast<Index>(r));
  return eligible;
}

/// The flags among `rows` (ascending), with their counts by indicator.
inline void flag(undertrained_rows& result, const std::vector<Index>& rows) {
  for (Index r : rows) {
    const bool by_norm = result.norms[static_cast<std::size_t>(r)] < result.norm_threshold;
    const bool by_cosine =
        result.cosine_threshold && result.cosines[static_cast<std::size_t>(r)] > *result.cosine_threshold;
    result.flagged_by_norm += by_norm;
    result.flagged_by_cosine += by_cosine;
    if (by_norm || by_cosine) result.flagged.push_back(r);
  }
}

CLP_DECL undertrained_rows screen(const matrix_view<const void>& m, const undertrained_options& o) {
  check_options(m, o);
  std::vector<Index> rows;
  if (o.rows) {
    rows = checked_ids(*o.rows, m.rows(), "options.rows");
  } else {
    rows.resize(static_cast<std::size_t>(m.rows()));
    for (Index r = 0; r < m.rows(); ++r) rows[static_cast<std::size_t>(r)] = r;
  }
  std::vector<Index> unused = checked_ids(o.unused_ids, m.rows(), "options.unused_ids");
  undertrained_rows result;
  if (m.rows() == 0) return result;
  // Pass 1: norms, mean, and projections (the sketch where the reference is known). Without
  // unused ids, passes 2 and 3 search for the reference. With a reference: the sketch (a pass of
  // its own when the search found the reference), three passes of subspace iteration, and the
  // cosines. Without one, nothing needs more than the norms.
  const bool search = unused.empty();
  row_statistics stats = measure_rows(m, search ? cluster_directions : sketch_directions, search, !search, o.threads);
  require_finite_norms(m, stats.norms);
  const double norm_cut = distribution_norm_threshold(stats.norms, o);
  result.norm_threshold = o.norm_threshold.value_or(norm_cut);
  if (search) {
    cluster_search cluster(m, stats, cluster_candidates(stats.norms, norm_cut), o.cluster_radius, o.min_cluster_rows,
                           o.threads);
    while (cluster.centres().rows() > 0) cluster.absorb(squared_distances_to(m, cluster.centres(), o.threads));
    result.reference_ids = cluster.group();
    result.reference = result.reference_ids.empty() ? undertrained_reference::none : undertrained_reference::cluster;
    if (!result.reference_ids.empty()) stats.sketch = sketch_of(m, stats.mean, o.threads);
  } else {
    result.reference = undertrained_reference::unused_ids;
    result.reference_ids = std::move(unused);
  }
  result.norms = std::move(stats.norms);
  if (!result.reference_ids.empty()) {
    range_finder finder(stats.sketch);
    for (int pass = 0; pass < power_passes; ++pass)
      finder.absorb(centred_gram_times(m, stats.mean, finder.basis(), o.threads));
    const Eigen::VectorXd p = finder.direction();
    result.component.assign(p.data(), p.data() + p.size());
    const Eigen::VectorXd reference = residual(mean_of_rows(m, result.reference_ids), stats.mean, p);
    result.cosines = residual_cosines(m, stats.mean, p, reference, o.threads);
    const robust_spread s = robust_spread::of(result.cosines);
    result.cosine_threshold = o.cosine_threshold.value_or(
        std::clamp(s.median + o.cosine_spread * s.sigma, o.min_cosine_threshold, o.max_cosine_threshold));
  }
  flag(result, rows);
  return result;
}

}  // namespace detail::undertrained

CLP_DECL vocabulary_overlap without_source_rows(const vocabulary_overlap& overlap,
                                                const std::vector<Index>& source_rows) {
  std::vector<Index> drop = source_rows;
  std::sort(drop.begin(), drop.end());
  if (!drop.empty() && drop.front() < 0)
    throw invalid_argument(error_facts::in("clp::without_source_rows").with_argument("source_rows"),
                           "holds " + std::to_string(drop.front()) + ", not a row id");
  const bool reasons = overlap.matched_by.size() == overlap.target_ids.size();
  vocabulary_overlap kept = overlap;
  kept.target_ids.clear();
  kept.source_ids.clear();
  kept.matched_by.clear();
  std::vector<Index> dropped_targets;
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i) {
    if (!std::binary_search(drop.begin(), drop.end(), overlap.source_ids[i])) {
      kept.target_ids.push_back(overlap.target_ids[i]);
      kept.source_ids.push_back(overlap.source_ids[i]);
      if (reasons) kept.matched_by.push_back(overlap.matched_by[i]);
      continue;
    }
    dropped_targets.push_back(overlap.target_ids[i]);
    if (!reasons) continue;
    const match_reason reason = overlap.matched_by[i];
    --(reason == match_reason::exact   ? kept.exact_matches
       : reason == match_reason::bytes ? kept.byte_matches
                                       : kept.forced_matches);
  }
  if (!reasons) kept.matched_by = overlap.matched_by;
  kept.missing_ids.clear();
  std::merge(overlap.missing_ids.begin(), overlap.missing_ids.end(), dropped_targets.begin(), dropped_targets.end(),
             std::back_inserter(kept.missing_ids));
  return kept;
}

}  // namespace clp
