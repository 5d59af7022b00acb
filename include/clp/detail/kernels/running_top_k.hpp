// SPDX-License-Identifier: MIT
#pragma once

// Internal, kernels: a running top k under "larger score, then lower id", fed candidates panel
// by panel: how clp::select_top_k (<clp/top_k.hpp>) chooses a row's neighbours and how
// clp::nearest_neighbours searches a vocabulary without a #vocab by #vocab matrix.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <algorithm>
#include <limits>

namespace clp::detail {

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

}  // namespace clp::detail
