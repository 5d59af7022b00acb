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
#include <clp/detail/matrices/validation.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/nearest_neighbours.hpp>

#include <algorithm>
#include <numeric>
#include <string>
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

namespace detail {

/// |A ∩ B| of two lists of k ids (each list without repeats).
inline Index shared_ids(const Index* a, const Index* b, Index k, std::vector<Index>& sorted_a,
                        std::vector<Index>& sorted_b) {
  std::copy_n(a, k, sorted_a.begin());
  std::copy_n(b, k, sorted_b.begin());
  std::sort(sorted_a.begin(), sorted_a.end());
  std::sort(sorted_b.begin(), sorted_b.end());
  Index shared = 0;
  for (auto i = sorted_a.begin(), j = sorted_b.begin(); i != sorted_a.end() && j != sorted_b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++shared;
      ++i;
      ++j;
    }
  }
  return shared;
}

inline knn_overlap_result knn_overlap(const matrix_view<const void>& a, const matrix_view<const void>& b,
                                      const std::vector<Index>& queries, const knn_options& options) {
  constexpr const char* context = "clp::knn_overlap";
  check_searchable(a, "a", options.k, context);
  check_searchable(b, "b", options.k, context);
  if (a.rows() != b.rows())
    throw invalid_argument(error_facts::in(context).with_argument("b"),
                           "has " + std::to_string(b.rows()) + " rows but 'a' has " + std::to_string(a.rows()) +
                               " (both must hold the same vocabulary)");
  check_queries(queries, a.rows(), context);
  require_finite_matrix(a, "a", options.threads, context);
  require_finite_matrix(b, "b", options.threads, context);

  const std::vector<Index> near_a = search_neighbours(a, queries, options);
  const std::vector<Index> near_b = search_neighbours(b, queries, options);
  const Index k = options.k;
  knn_overlap_result result;
  result.tokens = static_cast<Index>(queries.size());
  result.k = k;
  result.per_token.resize(queries.size());
  std::vector<Index> sorted_a(static_cast<std::size_t>(k)), sorted_b(static_cast<std::size_t>(k));
  Index total = 0;  // an integer count: the mean does not depend on summation order
  for (Index t = 0; t < result.tokens; ++t) {
    const Index shared = shared_ids(near_a.data() + t * k, near_b.data() + t * k, k, sorted_a, sorted_b);
    total += shared;
    result.per_token[std::size_t(t)] = static_cast<float>(double(shared) / double(k));
  }
  result.mean_overlap = double(total) / (double(k) * double(result.tokens));
  return result;
}

}  // namespace detail

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
  return detail::knn_overlap(make_view(a), make_view(b), queries, options);
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
  return detail::knn_overlap(va, make_view(b), all, options);
}

}  // namespace clp
