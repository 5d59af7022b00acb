// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What a weighting policy is: the contract between a weighting (how one missing target token
/// is placed among the overlapping tokens, the weights w_tj of eq. 3, e_t = sum_j w_tj a_j) and
/// the synthesis engine that runs it. The shipped policies are in <clp/weights.hpp>.
///
/// A policy is a small value type that declares what it needs from the engine,
///
///     static constexpr clp::weighting_input input = clp::weighting_input::...;
///
/// and has what goes with that input:
/// - `cosine_row`: `dense_weights operator()(float* cosines, Index n, const cosine_statistics&) const`
///   on a row of the |overlap| cosines; the weights are the returned scale times the row as the
///   policy left it (it may rewrite it).
/// - `scaled_cosines`: the same call, leaving the row as it is (weights = cosines times scale).
/// - `nearest_cosines`: `Index max_neighbours(Index n) const` and
///   `Index operator()(const float* cosines, Index n, Index* neighbour, float* weight) const`,
///   which reads only the max_neighbours(n) largest cosines and returns at most that many
///   (overlap index, weight) pairs.
/// - `helper_rows`: `max_neighbours`, `double tolerance` and `std::size_t max_gram_bytes`; no
///   call: the engine runs its pursuit over the overlap's helper rows.
/// - `linear_map`: `double lambda`; no call: the engine fits one least-squares map per source,
///   e_t = h_t W (<clp/detail/synthesis/linear_map.hpp>), and forms no cosines unless asked for
///   neighbour norms (least_squares_map::norm_neighbours).
///
/// Either result may say that a row cannot be weighted (scale 0, or no pairs): the row then
/// becomes the mean of the overlapping source rows, and is counted. is_weighting_policy<P>,
/// checked by every entry point, says whether P has one of these shapes.
///
/// What the declaration buys: the engine prepares only what the input needs and combines the
/// weights with the source rows in the cheapest way it allows. Dense weights cost a second
/// product with the overlapping source rows; scaled cosines skip it (the normalised queries
/// times P = sum_j n_j a_j^T, computed once); a neighbour list reads only its chosen source
/// rows. A new kind of input is an enumerator here with its call shape in detail::takes_input,
/// and one row of the engine's table of stages (detail::stages_for in
/// <clp/detail/synthesis/synthesis_plan.hpp>); no policy is admitted by its name. A caller's similarity
/// product of lower precision (<clp/similarity_product.hpp>) serves only the neighbour lists,
/// the one input whose largest cosines rescoring in float32 restores.
///
/// Ties among equal cosines go to the lower overlap index, so every policy is deterministic.

#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

namespace clp {

/// What a weighting needs from the synthesis engine: see the list at the top of this header.
enum class weighting_input {
  cosine_row,       ///< the whole row of cosines; returns dense weights (clamped, sparsemax)
  scaled_cosines,   ///< the row's statistics; its weights are the cosines times a scale (paper)
  nearest_cosines,  ///< the row's largest cosines; returns a neighbour list (top-k, softmax)
  helper_rows,      ///< the helper rows themselves; the engine runs a pursuit (omp)
  linear_map,       ///< the raw overlap helper rows; the engine fits a least-squares map (least_squares_map)
};

/// One pass over a row of cosines, made once by the synthesis and handed to dense policies.
/// Sums are in double, over fixed lanes added in a fixed order: the result depends only on
/// the row.
struct cosine_statistics {
  double max = 0;           ///< max_j cos_j (-infinity for an empty row)
  double sum = 0;           ///< sum_j cos_j
  double sum_abs = 0;       ///< sum_j |cos_j|
  double sum_squares = 0;   ///< sum_j cos_j^2
  double sum_positive = 0;  ///< sum_j max(cos_j, 0)
};

/// What a dense policy made of a row: its weights are `scale` times the row as the policy
/// left it. `scale == 0` means the row cannot be weighted. `sum_abs` and `sum_squares` are
/// those of the final weights (they feed the report's inflated rows and effective neighbours).
struct dense_weights {
  double scale = 0;
  double sum_abs = 0;
  double sum_squares = 0;
};

/// The statistics of x[0..n).
/// @param[in] x  n cosines (any floats)
inline cosine_statistics statistics_of(const float* x, Index n) {
  // Eight lanes as fixed-size Eigen arrays (vectorised lane by lane, never reassociated), the
  // lanes added in order at the end.
  constexpr int lanes = 8;
  using float_lanes = Eigen::Array<float, lanes, 1>;
  using double_lanes = Eigen::Array<double, lanes, 1>;
  float_lanes top = float_lanes::Constant(-std::numeric_limits<float>::infinity());
  double_lanes sum = double_lanes::Zero(), sum_abs = sum, sum_squares = sum, sum_positive = sum;
  Index j = 0;
  for (; j + lanes <= n; j += lanes) {
    const float_lanes f = Eigen::Map<const float_lanes>(x + j);
    top = top.max(f);
    const double_lanes v = f.cast<double>();
    sum += v;
    sum_abs += v.abs();
    sum_squares += v.square();
    sum_positive += v.max(0.0);
  }
  for (int l = 0; j < n; ++j, ++l) {
    const double v = x[j];
    top[l] = std::max(top[l], x[j]);
    sum[l] += v;
    sum_abs[l] += std::abs(v);
    sum_squares[l] += v * v;
    sum_positive[l] += std::max(v, 0.0);
  }
  cosine_statistics total;
  total.max = -std::numeric_limits<double>::infinity();
  for (int l = 0; l < lanes; ++l) {
    total.max = std::max(total.max, double(top[l]));
    total.sum += sum[l];
    total.sum_abs += sum_abs[l];
    total.sum_squares += sum_squares[l];
    total.sum_positive += sum_positive[l];
  }
  return total;
}

namespace detail {

/// P's declared input, when P declares `static constexpr weighting_input input`.
template <class P, class = void>
struct declares_input : std::false_type {};
template <class P>
struct declares_input<P, std::enable_if_t<std::is_same_v<decltype(P::input), const weighting_input>>> : std::true_type {
};

template <class P, class = void>
struct weighs_rows : std::false_type {};
template <class P>
struct weighs_rows<
    P,
    std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>()(std::declval<float*>(), Index{},
                                                                             std::declval<const cosine_statistics&>())),
                                           dense_weights>>> : std::true_type {};

template <class P, class = void>
struct counts_neighbours : std::false_type {};
template <class P>
struct counts_neighbours<
    P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().max_neighbours(Index{})), Index>>>
    : std::true_type {};

template <class P, class = void>
struct picks_neighbours : std::false_type {};
template <class P>
struct picks_neighbours<P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>()(
                                                                      std::declval<const float*>(), Index{},
                                                                      std::declval<Index*>(), std::declval<float*>())),
                                                                  Index>>> : std::true_type {};

template <class P, class = void>
struct sets_pursuit : std::false_type {};
template <class P>
struct sets_pursuit<
    P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().tolerance), double> &&
                        std::is_convertible_v<decltype(std::declval<const P&>().max_gram_bytes), std::size_t>>>
    : std::true_type {};

template <class P, class = void>
struct sets_lambda : std::false_type {};
template <class P>
struct sets_lambda<P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().lambda), double>>>
    : std::true_type {};

/// Whether P has the call shape of the input `kind` (the list at the top of this header).
template <class P, weighting_input kind>
constexpr bool takes_input() {
  if constexpr (kind == weighting_input::cosine_row || kind == weighting_input::scaled_cosines)
    return weighs_rows<P>::value;
  else if constexpr (kind == weighting_input::nearest_cosines)
    return counts_neighbours<P>::value && picks_neighbours<P>::value;
  else if constexpr (kind == weighting_input::linear_map)
    return sets_lambda<P>::value;
  else
    return counts_neighbours<P>::value && sets_pursuit<P>::value;
}

template <class P>
constexpr bool has_policy_shape() {
  if constexpr (!declares_input<P>::value)
    return false;
  else
    return takes_input<P, P::input>();
}

}  // namespace detail

/// Whether P is a weighting policy: it declares `static constexpr weighting_input input` and
/// has what goes with it (the list at the top of this header). `weighting` itself is not a
/// policy but holds one.
template <class P>
struct is_weighting_policy : std::bool_constant<detail::has_policy_shape<P>()> {};
template <class P>
inline constexpr bool is_weighting_policy_v = is_weighting_policy<P>::value;

}  // namespace clp
