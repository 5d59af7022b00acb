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

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>

#include <type_traits>

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

}  // namespace clp

// The sums of a row and the shapes of the policies, which read the types above.
#include <clp/detail/weighting/policy_shape.hpp>
#include <clp/detail/weighting/row_statistics.hpp>

namespace clp {

/// The statistics of x[0..n).
/// @param[in] x  n cosines (any floats)
inline cosine_statistics statistics_of(const float* x, Index n) { return detail::lane_statistics(x, n); }

/// Whether P is a weighting policy: it declares `static constexpr weighting_input input` and
/// has what goes with it (the list at the top of this header). `weighting` itself is not a
/// policy but holds one.
template <class P>
struct is_weighting_policy : std::bool_constant<detail::has_policy_shape<P>()> {};
template <class P>
inline constexpr bool is_weighting_policy_v = is_weighting_policy<P>::value;

}  // namespace clp
