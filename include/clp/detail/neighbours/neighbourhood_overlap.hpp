// SPDX-License-Identifier: MIT
#pragma once

// Internal, neighbours: clp::knn_overlap on views: both matrices' neighbour lists
// (neighbour_search.hpp, through <clp/nearest_neighbours.hpp>), then the share of each query's
// two lists they have in common. Included by <clp/knn_overlap.hpp> after knn_overlap_result,
// which it fills.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/nearest_neighbours.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace clp::detail {

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

/// knn_overlap of the views a and b over the query rows `queries`.
inline knn_overlap_result neighbourhood_overlap(const matrix_view<const void>& a, const matrix_view<const void>& b,
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

}  // namespace clp::detail
