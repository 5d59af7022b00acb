// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The k largest of a row of scores under one strict order, "larger score, then lower index",
/// so that the choice is a function of the row alone: select_top_k, what the neighbour-list
/// weightings (top_k_weights, softmax_weights) choose by, public for a policy of your own that
/// must choose the same way. Underneath, a running top k fed candidates panel by panel (how
/// clp::nearest_neighbours searches a vocabulary without a #vocab by #vocab matrix).

#include <clp/element_type.hpp>

#include <algorithm>
#include <limits>
#include <vector>

namespace clp {

namespace detail {

/// A candidate neighbour: its cosine with the query and its row id.
struct scored_row {
  float cosine;
  Index id;
};

/// "a ranks before b": larger cosine, then lower id. A strict total order on distinct ids, so
/// the top k is a function of the candidate set alone, not of the order it is seen in.
struct ranks_before {
  bool operator()(const scored_row& a, const scored_row& b) const {
    return a.cosine > b.cosine || (a.cosine == b.cosine && a.id < b.id);
  }
};

/// Offers candidates first_id, first_id + 1, ... with cosines[0..n) to a running top-k heap
/// (heap[0..size), capacity k, worst kept entry on top); returns the new size. Candidates must
/// arrive in ascending id order across calls: then one that only ties the worst kept cosine
/// has a larger id and loses, so "cosine > threshold" is the whole test. A cosine of -inf is
/// never taken (how callers exclude a row).
inline Index offer_candidates(const float* cosines, Index n, Index first_id, scored_row* heap, Index size, Index k) {
  constexpr Index chunk = 64;
  float threshold = size < k ? -std::numeric_limits<float>::infinity() : heap[0].cosine;
  auto take = [&](Index j) {
    const scored_row candidate{cosines[j], first_id + j};
    if (size < k) {
      heap[size++] = candidate;
      std::push_heap(heap, heap + size, ranks_before{});
    } else {
      std::pop_heap(heap, heap + size, ranks_before{});
      heap[size - 1] = candidate;
      std::push_heap(heap, heap + size, ranks_before{});
    }
    if (size == k) threshold = heap[0].cosine;
  };
  Index j = 0;
  for (; j + chunk <= n; j += chunk) {
    // Most chunks hold nothing better than the k-th best: one branch-free (vectorised) count
    // rules them out.
    int better = 0;
    for (Index i = j; i < j + chunk; ++i) better += cosines[i] > threshold;
    if (better == 0) continue;
    for (Index i = j; i < j + chunk; ++i)
      if (cosines[i] > threshold) take(i);
  }
  for (; j < n; ++j)
    if (cosines[j] > threshold) take(j);
  return size;
}

}  // namespace detail

/// The k largest of scores[0..n) (ties: the lower index first), their indices written to
/// chosen[] in descending order of score. One pass: chunks holding nothing better than the
/// current k-th best are ruled out by a vectorised count, so the heap is touched about
/// k log(n / k) times.
/// @param[in]  scores  n scores (cosines, say); a score of -infinity is never chosen
/// @param[in]  n       count, >= 0
/// @param[in]  k       how many to choose
/// @param[out] chosen  at least min(k, n) indices
/// @return how many were written: min(k, n), fewer only where scores are -infinity
inline Index select_top_k(const float* scores, Index n, Index k, Index* chosen) {
  k = std::min(k, n);
  if (k <= 0) return 0;
  thread_local std::vector<detail::scored_row> heap;
  heap.resize(static_cast<std::size_t>(k));
  const Index size = detail::offer_candidates(scores, n, 0, heap.data(), 0, k);
  std::sort_heap(heap.data(), heap.data() + size, detail::ranks_before{});
  for (Index i = 0; i < size; ++i) chosen[i] = heap[static_cast<std::size_t>(i)].id;
  return size;
}

}  // namespace clp
