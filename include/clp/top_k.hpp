// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The k largest of a row of scores under one strict order, "larger score, then lower index",
/// so that the choice is a function of the row alone: select_top_k, what the neighbour-list
/// weightings (top_k_weights, softmax_weights) choose by, public for a policy of your own that
/// must choose the same way. Underneath, a running top k fed candidates panel by panel (how
/// clp::nearest_neighbours searches a vocabulary without a #vocab by #vocab matrix).

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/kernels/running_top_k.hpp>
#include <clp/element_type.hpp>

#include <algorithm>
#include <vector>

namespace clp {

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
