// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The k-nearest-neighbour overlap of two embedding matrices over the same vocabulary, the
/// diagnostic of the paper's Figure 1: how much of a token's neighbourhood in one model's
/// embedding space survives in another's. For tokens v,
///
///     overlap_k(v) = |N_k^A(v) ∩ N_k^B(v)| / k,
///
/// where N_k^X(v) are the k rows of X most cosine-similar to row v, v itself excluded, ties
/// broken towards the lower row id. The result is the mean over the tokens and each token's
/// value. Two models with the same neighbourhoods score 1; unrelated ones about k / #vocab.
///
/// How it runs: the neighbours come from clp::nearest_neighbours (<clp/nearest_neighbours.hpp>):
/// exact, never with a #vocab by #vocab matrix in memory, and bit-identical for any thread count
/// and tile budget, and so is the result.
#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/nearest_neighbours.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

namespace clp {

struct knn_overlap_result {
  /// Mean of per_token: sum over tokens of |N_k^A ∩ N_k^B| divided by k * tokens.
  double mean_overlap = 0;
  /// Tokens averaged over: #vocab, or the number of query ids.
  Index tokens = 0;
  Index k = 0;
  /// tokens values |N_k^A(v) ∩ N_k^B(v)| / k in query order (row order for the whole
  /// vocabulary); each is a multiple of 1 / k.
  std::vector<float> per_token;
};

}  // namespace clp

// The overlap of the two neighbour lists, which fills knn_overlap_result.
#include <clp/detail/neighbours/neighbourhood_overlap.hpp>

namespace clp {

/// The k-nearest-neighbour overlap of a and b over sampled tokens: the mean over the query
/// rows v of |N_k^A(v) ∩ N_k^B(v)| / k. Neighbours are searched among all rows.
///
/// @param[in] a        #vocab by d_a: one model's embeddings
/// @param[in] b        #vocab by d_b: another model's embeddings over the same vocabulary,
///                     row v of a and of b being the same token; d_b may differ from d_a
/// @param[in] queries  #sample list of row ids in [0, #vocab), any order; a repeated id
///                     counts as often as it appears
/// @param[in] options  k (1 <= k < #vocab), threads, tile budget
/// @return mean overlap, #sample, k, and #sample per-token overlaps in query order
/// Neighbours are by cosine similarity computed in float32, the token itself excluded, ties
/// towards the lower row id. A zero-norm row has cosine 0 with every row (so its own
/// neighbours are the k lowest other ids, ties all round). Matrices may be of any type
/// make_view accepts, with elements float, double, Eigen::half or Eigen::bfloat16.
/// @throws clp::invalid_argument on an empty matrix (argument "a" or "b"), different row counts
///         ("b"), k out of range ("k"), an empty query list or an id outside the rows
///         ("queries"); clp::non_finite_input for a NaN or infinite element of any row of a or b
template <class A, class B>
knn_overlap_result knn_overlap(const A& a, const B& b, const std::vector<Index>& queries,
                               const knn_options& options = {}) {
  return detail::neighbourhood_overlap(make_view(a), make_view(b), queries, options);
}

/// knn_overlap over the whole vocabulary: every row is a query.
/// @param[in] a        #vocab by d_a
/// @param[in] b        #vocab by d_b
/// @param[in] options  k (1 <= k < #vocab), threads, tile budget
/// @return mean overlap, #vocab, k, and #vocab per-token overlaps in row order
template <class A, class B>
knn_overlap_result knn_overlap(const A& a, const B& b, const knn_options& options = {}) {
  const matrix_view<const void> va = make_view(a);
  std::vector<Index> all(static_cast<std::size_t>(std::max<Index>(va.rows(), 0)));
  std::iota(all.begin(), all.end(), Index(0));
  return detail::neighbourhood_overlap(va, make_view(b), all, options);
}

}  // namespace clp
