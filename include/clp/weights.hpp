// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The shipped weighting policies: how the cosine similarities of one missing target token to
/// the overlapping tokens become the weights of eq. 3, e_t = sum_j w_tj a_j. What a policy is,
/// and how to write one, is <clp/policy.hpp>; `weighting` holds any shipped policy chosen at
/// run time, and make_weighting chooses it by name.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/error.hpp>
#include <clp/policy.hpp>
#include <clp/top_k.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace clp {

/// What fitting a least_squares_map came to, for one (source, output) pair.
struct least_squares_fit {
  double lambda = 0;              ///< as used: relative_lambda * trace(H_o^T H_o) / d_helper
  double relative_lambda = 0;     ///< lambda over the mean eigenvalue of H_o^T H_o
  bool automatic = false;         ///< chosen by generalised cross-validation
  Index rank = 0;                 ///< the numerical rank of H_o^T H_o
  double degrees_of_freedom = 0;  ///< sum_i s_i / (s_i + lambda) over its eigenvalues s_i
  double r_squared = 0;           ///< 1 - ||H_o W - A_o||^2 / ||A_o - column means||^2, on the overlap
};

/// Eq. 4 exactly as published: w_tj = cos(h_t, h_j) / sum_j' cos(h_t, h_j'), on every row
/// where that is finite, as the authors' clp.py computes it. A row whose cosine sum is
/// negative is divided by it too: its weights flip sign (an all-negative row gets positive
/// weights that add up to one; a mixed row points away from its most similar tokens), and a
/// sum near zero inflates the row. The report counts both (negative_sum_rows, inflated_rows).
/// Only a row it would make non-finite falls back to the mean: a cosine sum of exactly zero,
/// or so small that 1 / sum is past float32's range (a zero-norm helper row falls back
/// before any policy sees it). guarded_paper_weights falls back on the negative and
/// near-zero sums instead.
/// The row is left as it is: the weights are the cosines times scale = 1 / sum. Declaring
/// that (scaled_cosines) lets the synthesis skip the second product (see <clp/policy.hpp>).
struct paper_weights {
  static constexpr weighting_input input = weighting_input::scaled_cosines;

  dense_weights operator()(float* /*cosines*/, Index /*n*/, const cosine_statistics& s) const {
    if (!(s.sum != 0) || !std::isfinite(s.sum)) return {};
    const double scale = 1.0 / s.sum;
    if (!std::isfinite(static_cast<float>(scale))) return {};
    return {scale, s.sum_abs * std::abs(scale), s.sum_squares * scale * scale};
  }
};

/// Eq. 4 with a guard: w_tj = cos / sum cos where the cosine sum is safely positive, that is
/// sum > min_sum_ratio * sum_j |cos|; any other row (a negative sum, whose weights would flip
/// sign, or a sum so small that the weights' absolute values add up to 1 / min_sum_ratio or
/// more) falls back to the mean.
struct guarded_paper_weights {
  static constexpr weighting_input input = weighting_input::scaled_cosines;
  double min_sum_ratio = 1e-4;

  dense_weights operator()(float* /*cosines*/, Index /*n*/, const cosine_statistics& s) const {
    if (!(s.sum_abs > 0) || !(s.sum > min_sum_ratio * s.sum_abs)) return {};
    const double scale = 1.0 / s.sum;
    return {scale, s.sum_abs * scale, s.sum_squares * scale * scale};
  }
};

/// max(cos, 0) / sum max(cos, 0): identical to paper_weights whenever no cosine is negative
/// (the regime the paper assumes), and never inflates a row. A row without a positive cosine
/// falls back to the mean. Rewrites the row to max(cos, 0); scale = 1 / sum max(cos, 0).
struct clamped_weights {
  static constexpr weighting_input input = weighting_input::cosine_row;

  dense_weights operator()(float* cosines, Index n, const cosine_statistics& s) const {
    if (!(s.sum_positive > 0)) return {};
    double squares = 0;
    for (Index j = 0; j < n; ++j) {
      cosines[j] = std::max(cosines[j], 0.0f);
      squares += double(cosines[j]) * cosines[j];
    }
    const double scale = 1.0 / s.sum_positive;
    return {scale, 1.0, squares * scale * scale};
  }
};

/// The k most similar overlapping tokens only, their clamped cosines renormalised:
/// w = max(cos, 0) / sum over the k of max(cos, 0). Falls back to the mean when none of the k
/// has a positive cosine. k larger than the overlap means the whole overlap.
struct top_k_weights {
  static constexpr weighting_input input = weighting_input::nearest_cosines;
  Index k = 10;

  Index max_neighbours(Index n) const { return std::min(k, n); }

  /// @param[in]  cosines    n cosines of one target token
  /// @param[out] neighbour  max_neighbours(n) overlap indices
  /// @param[out] weight     their weights
  /// @return the number of pairs written; 0 means fall back
  Index operator()(const float* cosines, Index n, Index* neighbour, float* weight) const {
    const Index count = select_top_k(cosines, n, k, neighbour);
    double sum = 0;
    for (Index i = 0; i < count; ++i) sum += std::max(cosines[neighbour[i]], 0.0f);
    if (!(sum > 0)) return 0;
    for (Index i = 0; i < count; ++i) weight[i] = static_cast<float>(std::max(cosines[neighbour[i]], 0.0f) / sum);
    return count;
  }
};

/// softmax(cos / temperature) over the k most similar overlapping tokens (WECHSEL's choice:
/// k = 10, temperature = 0.1). Always well defined: the exponent is shifted by the largest
/// cosine, so a tiny temperature tends to the single nearest neighbour and a huge one to equal
/// weights over the k.
struct softmax_weights {
  static constexpr weighting_input input = weighting_input::nearest_cosines;
  Index k = 10;
  float temperature = 0.1f;

  Index max_neighbours(Index n) const { return std::min(k, n); }

  Index operator()(const float* cosines, Index n, Index* neighbour, float* weight) const {
    const Index count = select_top_k(cosines, n, k, neighbour);
    if (count == 0) return 0;
    const double top = cosines[neighbour[0]];
    double sum = 0;
    for (Index i = 0; i < count; ++i) sum += std::exp((cosines[neighbour[i]] - top) / double(temperature));
    for (Index i = 0; i < count; ++i)
      weight[i] = static_cast<float>(std::exp((cosines[neighbour[i]] - top) / double(temperature)) / sum);
    return count;
  }
};

/// sparsemax over all cosines (Martins & Astudillo 2016; the weighting of FOCUS and CLP+):
/// the Euclidean projection of the cosine row onto the probability simplex,
/// w_j = max(cos_j - tau, 0) with tau chosen so the weights add up to one. Only tokens within
/// 1 of the best cosine can get weight. tau is found by Michelot's fixed point (each pass
/// drops the entries at or below the current tau), a few O(n) passes with no sort.
struct sparsemax_weights {
  static constexpr weighting_input input = weighting_input::cosine_row;

  dense_weights operator()(float* cosines, Index n, const cosine_statistics& s) const {
    if (n == 0) return {};
    double tau = s.max - 1;  // tau >= max - 1 always holds
    for (;;) {
      double sum = 0;
      Index support = 0;
      for (Index j = 0; j < n; ++j)
        if (cosines[j] > tau) {
          sum += cosines[j];
          ++support;
        }
      const double next = (sum - 1) / double(support);
      if (next <= tau) break;  // no entry left the support: tau is the fixed point
      tau = next;
    }
    double sum = 0, squares = 0;
    for (Index j = 0; j < n; ++j) {
      cosines[j] = static_cast<float>(std::max(cosines[j] - tau, 0.0));
      sum += cosines[j];
      squares += double(cosines[j]) * cosines[j];
    }
    return {1.0, sum, squares};
  }
};

/// Orthogonal matching pursuit (as mergekit's tokensurgeon offers it; k = 8 is its default):
/// reconstruct the helper embedding h_t from at most k overlapping helper embeddings,
/// h_t ~ sum_j c_j h_j, and apply the same coefficients to the source rows,
/// e_t = sum_j c_j a_j. Greedy: each step picks the overlapping token whose normalised helper
/// row has the largest |correlation| with the residual (ties: the lower overlap index), then
/// refits all chosen coefficients by least squares (in double, by a Cholesky factorisation of
/// the chosen rows' Gram matrix), so the residual is orthogonal to every chosen row.
/// The selection uses normalised helper rows (the first step's correlations are the
/// cosines); the least-squares fit, and so the coefficients, are those of the raw rows. The
/// coefficients are not normalised: they may be negative and need not add up to one.
/// The pursuit stops early when no row correlates with the residual by more than `tolerance`
/// (the residual, relative to ||h_t||, is then round-off) or when the next row is linearly
/// dependent on the chosen ones; a row with no token chosen falls back to the mean.
/// Unlike the other policies it needs the overlapping helper rows, not only a cosine row: it
/// declares weighting_input::helper_rows, and the synthesis runs the pursuit with its k,
/// tolerance and Gram budget (<clp/detail/synthesis/pursuit.hpp>), so it has no call operator. When the
/// Gram matrix of the overlapping helper
/// rows (|overlap|^2 floats) fits in `max_gram_bytes` it is computed once and each step costs
/// |overlap| x (tokens chosen) per row (Batch-OMP); otherwise each step is one product of the
/// residuals with the overlapping helper rows, |overlap| x d_helper per row, about k times
/// the cost of the cosines. Both give the same picks and coefficients up to float rounding.
struct omp_weights {
  static constexpr weighting_input input = weighting_input::helper_rows;
  Index k = 8;
  double tolerance = 1e-5;
  std::size_t max_gram_bytes = std::size_t(1) << 30;  ///< 1 GiB: an overlap of up to 16,384 rows

  Index max_neighbours(Index n) const { return std::min(k, n); }
};

/// A least-squares map from the helper's space to the source's, fitted on the overlap (ridge
/// regression; Mikolov et al. 2013's translation matrix): with H_o the overlapping tokens' raw
/// helper rows and A_o their source rows,
///     W = (H_o^T H_o + lambda I)^-1 H_o^T A_o,    e_t = h_t W,
/// eq. 3 with the weights w_t = h_t (H_o^T H_o + lambda I)^-1 H_o^T over the whole overlap,
/// signed and not normalised (they are never formed: the synthesis computes W once per source,
/// in double, and each missing row costs one d_helper x d_source product). An untied head and
/// every matrix pair get their own W from the same factorisation of H_o^T H_o.
/// `lambda` is relative to the mean eigenvalue of H_o^T H_o, trace / d_helper, so it does not
/// depend on the helper's scale; a negative lambda (the default) is chosen per source by
/// generalised cross-validation, the closed form of leave-one-out for ridge, over the grid
/// 10^-6 ... 10^2. lambda = 0 is plain least squares, refused (clp::invalid_argument, argument
/// "lambda") when H_o^T H_o is singular (fewer overlapping tokens than helper dimensions, or
/// dependent columns). A zero helper row falls back to the mean, as for every policy. The
/// report's `maps` says what each fit came to (lambda, R^2 on the overlap).
///
/// The map alone shrinks row norms towards the overlap's mean. So by default each synthesised
/// row keeps the map's direction and takes its norm from the norm_neighbours tokens
/// top_k_weights{norm_neighbours} would weigh for it, per source ("neighbour norms"): their
/// norms averaged with those weights (norm_rule = neighbour_norm::mean, within the neighbours'
/// norms), or the norm of the row top-k writes (neighbour_norm::of_top_k_row, the norm of a
/// convex combination, which may fall below every neighbour's). That is the library's default
/// weighting (docs/weighting.md gives the measurements that chose it). It costs top-k's
/// similarity product on top of the map (a caller's lower-precision product serves it, as it
/// serves top-k); a row top-k cannot weight (none of its k cosines positive) falls back to the
/// mean, as under top-k. norm_neighbours = 0 keeps the map's own norms.
struct least_squares_map {
  static constexpr weighting_input input = weighting_input::linear_map;
  static constexpr double automatic = -1;
  /// How the k neighbours of a row, weighed as top_k_weights weighs them (w_k >= 0, sum 1),
  /// give the row its norm.
  enum class neighbour_norm {
    of_top_k_row,  ///< ||sum_k w_k a_k||, the norm of the row top-k writes
    mean,          ///< sum_k w_k ||a_k||, the neighbours' norms averaged
  };
  double lambda = automatic;
  Index norm_neighbours = 10;  ///< k of the top-k rows whose norms the rows take; 0: the map's own norms
  neighbour_norm norm_rule = neighbour_norm::mean;
};

/// The weighting every entry point uses when none is given: least_squares_map{} (the map with
/// its neighbours' mean norms, k 10, lambda by GCV). paper_weights is eq. 4 as published, never a default.
using default_weighting = least_squares_map;

/// Any of the shipped policies, chosen at run time (the command-line programs do this). Every
/// entry point that takes a policy takes a `weighting` too.
using weighting = std::variant<paper_weights, clamped_weights, top_k_weights, softmax_weights, sparsemax_weights,
                               guarded_paper_weights, omp_weights, least_squares_map>;

}  // namespace clp

// How every entry point takes a policy or a `weighting`, which it reads.
#include <clp/detail/weighting/visit_weighting.hpp>

namespace clp {

/// The policy named `name` ("paper", "paper-guarded", "clamped", "top-k", "softmax",
/// "sparsemax", "omp" or "least-squares"), with k, temperature and lambda where the policy
/// uses them (lambda: least_squares_map's, negative or not given for the GCV choice). Without k each
/// policy takes its own default: 10 for top-k and softmax (WECHSEL's), 8 for omp
/// (tokensurgeon's).
/// @throws clp::invalid_argument (context "clp::make_weighting") for an unknown name, k < 1 or
///         a temperature that is not positive and finite. The argument is named in the
///         message's words ("k must be at least 1"), not in facts().argument: the clp-transfer
///         program shows these messages as they are for its own options of the same names.
inline weighting make_weighting(const std::string& name, std::optional<Index> given_k = std::nullopt,
                                float temperature = 0.1f, std::optional<double> lambda = std::nullopt) {
  const auto refuse = [](const std::string& problem) {
    throw invalid_argument(error_facts::in("clp::make_weighting"), problem);
  };
  if (given_k && *given_k < 1) refuse("k must be at least 1, got " + std::to_string(*given_k));
  const Index k = given_k.value_or(name == "omp" ? omp_weights{}.k : top_k_weights{}.k);
  if (!(temperature > 0) || !std::isfinite(temperature))
    refuse("temperature must be positive and finite, got " + std::to_string(temperature));
  if (name == "paper") return paper_weights{};
  if (name == "paper-guarded") return guarded_paper_weights{};
  if (name == "clamped") return clamped_weights{};
  if (name == "top-k") return top_k_weights{k};
  if (name == "softmax") return softmax_weights{k, temperature};
  if (name == "sparsemax") return sparsemax_weights{};
  if (lambda && !std::isfinite(*lambda)) refuse("lambda must be finite, got " + std::to_string(*lambda));
  if (name == "omp") return omp_weights{k};
  if (name == "least-squares") return least_squares_map{lambda.value_or(least_squares_map::automatic)};
  if (name == "ridge")
    refuse("unknown weighting 'ridge': the ridge map from the helper's space is named 'least-squares'");
  refuse("unknown weighting '" + name +
         "' (expected paper, paper-guarded, clamped, top-k, softmax, sparsemax, omp or least-squares)");
  return {};
}

}  // namespace clp
