// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: a caller-supplied similarity product (<clp/similarity_product.hpp>) for
// the weightings that return neighbour lists: the product's cosines of a block, each row's
// candidates within twice its bound of the row's k-th largest, narrowed by the rescored cosines
// of the product's top k, those rescored from the float32 rows, and the policy's choice among
// them. Why the choice is the top k of the rescored cosines whatever the product: see the top
// of similarity_product.hpp.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/similarity_product.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/detail/synthesis/weighing.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/policy.hpp>
#include <clp/similarity_product.hpp>
#include <clp/top_k.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace clp::detail {

/// How many rows were rescored and how many candidates over them (for the report).
struct rescoring_counts {
  Index rows = 0, candidates = 0;
};

/// A worker's rescoring buffers and counts, reused from block to block.
struct rescoring_scratch {
  scratch_buffer<float> value, top_value, other_value, chunk_max;
  scratch_buffer<Index> candidate, top_id, other;
  scratch_buffer<scored_row> heap;
  rescoring_counts counts;
  int worker = 0;
};

/// The cosine of float32 rows a and b as float32 can hold it: the products exact in double,
/// summed in double over fixed lanes in a fixed order, rounded once. Its error is at most
/// rescoring_error(d) for rows of norm at most 1 + 2^-20, and its bits depend on a and b alone.
inline float rescored_cosine(const float* a, const float* b, Index d) {
  constexpr int lanes = 8;
  double sum[lanes] = {};
  Index c = 0;
  for (; c + lanes <= d; c += lanes)
    for (int l = 0; l < lanes; ++l) sum[l] += double(a[c + l]) * double(b[c + l]);
  double total = 0;
  for (; c < d; ++c) total += double(a[c]) * double(b[c]);
  for (int l = 0; l < lanes; ++l) total += sum[l];
  return static_cast<float>(total);
}

/// The bound on |rescored_cosine - exact dot|: one float32 rounding of a value of magnitude at
/// most (1 + 2^-20)^2, and d double roundings, both generously rounded up.
inline double rescoring_error(Index d) { return 0x1.0p-23 + double(d) * 0x1.0p-50; }

/// The largest float at most x.
inline float float_at_most(double x) {
  const float f = static_cast<float>(x);
  return double(f) <= x ? f : std::nextafter(f, -std::numeric_limits<float>::infinity());
}

/// The candidates of a row of product cosines: every position within 2 * margin of T, the
/// row's k-th largest, left ascending in s.candidate (their count returned, k at least), with
/// the product's top k in s.heap; `sum` is the row's sum (for the report's flags).
/// A first pass, branch-free, sums the row and takes each chunk's largest cosine. k chunks hold
/// a cosine at least as large as the k-th largest of those maxima, so that value, L, is at most
/// T: only the chunks whose maximum reaches L - 2 * margin can hold a candidate or one of the
/// top k, and only they are read again, from the cache, to list positions and fill the heap.
/// L sits at T or just below on real rows (their top k are spread over the row's chunks), so
/// this second pass reads a few dozen of the row's chunks. The heap is offered those chunks in
/// ascending order, so it ends as it would have over the whole row.
inline Index collect_candidates(const float* cosines, Index n, Index k, double margin, rescoring_scratch& s,
                                double& sum) {
  constexpr Index chunk = 64;
  constexpr int lanes = 32;
  const Index chunks = ceil_div(n, chunk);
  float* const chunk_max = s.chunk_max.reserve(std::size_t(chunks));
  double lane_sum[lanes] = {};
  for (Index c = 0; c < chunks; ++c) {
    const Index j0 = c * chunk, j1 = std::min(n, j0 + chunk);
    Index j = j0;
    for (; j + lanes <= j1; j += lanes)
      for (int l = 0; l < lanes; ++l) lane_sum[l] += double(cosines[j + l]);
    for (int l = 0; j < j1; ++j, ++l) lane_sum[l] += double(cosines[j]);
    chunk_max[c] = j1 - j0 == chunk ? Eigen::Map<const Eigen::Array<float, chunk, 1>>(cosines + j0).maxCoeff()
                                    : Eigen::Map<const Eigen::ArrayXf>(cosines + j0, j1 - j0).maxCoeff();
  }
  sum = 0;
  for (int l = 0; l < lanes; ++l) sum += lane_sum[l];
  // The chunks' maxima go through the heap first (it is refilled below): its top is L.
  scored_row* const heap = s.heap.reserve(std::size_t(k));
  const float floor = chunks >= k && offer_candidates(chunk_max, chunks, 0, heap, 0, k) == k
                          ? float_at_most(double(heap[0].cosine) - 2 * margin)
                          : -std::numeric_limits<float>::infinity();
  Index* const candidate = s.candidate.reserve(std::size_t(n));
  Index size = 0, count = 0;
  for (Index c = 0; c < chunks; ++c) {
    if (!(chunk_max[c] >= floor)) continue;
    const Index j0 = c * chunk, j1 = std::min(n, j0 + chunk);
    for (Index j = j0; j < j1; ++j) {
      candidate[count] = j;
      count += cosines[j] >= floor;
    }
    size = offer_candidates(cosines + j0, j1 - j0, j0, heap, size, k);
  }
  CLP_ASSERT(size == k);
  const double cut = double(heap[0].cosine) - 2 * margin;
  Index kept = 0;
  for (Index c = 0; c < count; ++c) {
    candidate[kept] = candidate[c];
    kept += double(cosines[candidate[c]]) >= cut;
  }
  return kept;
}

/// The rescored cosines of query row `query` with overlap rows ids[0..n), into value[0..n),
/// read from the pass's normalised overlap rows (run_pass gathers them whenever a product
/// serves). The rows lie scattered over the whole overlap, so each is asked for two rows ahead
/// of its use.
inline void rescore_rows(const block_context& context, const float* query, const Index* ids, Index n, float* value) {
  constexpr Index ahead = 2;
  const Index d = context.plan.d_helper;
  const float* const rows = context.panels.rescoring_rows;
  CLP_ASSERT(rows != nullptr);
  const auto prefetch_row = [&](Index j) { prefetch(rows + j * d, std::size_t(d) * sizeof(float)); };
  for (Index c = 0; c < std::min(ahead, n); ++c) prefetch_row(ids[c]);
  for (Index c = 0; c < n; ++c) {
    if (c + ahead < n) prefetch_row(ids[c + ahead]);
    value[c] = rescored_cosine(query, rows + ids[c] * d, d);
  }
}

/// Narrows the candidates that collect_candidates left (every row within 2 * margin of T, the
/// product's k-th largest) and rescores them, into s.candidate and s.value; returns their count.
/// First the product's own top k (in s.heap) are rescored: the smallest of them, R, is at most
/// the k-th largest rescored cosine (k rows reach it), and a row whose product cosine is below
/// R - margin has a rescored cosine below R, so it is in no top k. R is at least T - margin,
/// so this cut is never below the first one; on real rows it about halves the window, as the
/// rescored cosines sit much closer to the product's than the bound allows.
inline Index narrow_and_rescore(const block_context& context, const float* query, const float* cosines, Index count,
                                Index k, double margin, rescoring_scratch& s) {
  scored_row* const top = s.heap.data();
  std::sort(top, top + k, [](const scored_row& a, const scored_row& b) { return a.id < b.id; });
  Index* const ids = s.top_id.reserve(std::size_t(k));
  float* const top_value = s.top_value.reserve(std::size_t(k));
  for (Index r = 0; r < k; ++r) ids[r] = top[r].id;
  rescore_rows(context, query, ids, k, top_value);
  const double cut = double(*std::min_element(top_value, top_value + k)) - margin;
  // Keep a candidate at or above the cut (the top k always are, by the argument above; they are
  // kept by name too, so rounding in the cut cannot drop one), and list the others to rescore.
  Index* const candidate = s.candidate.data();
  Index* const others = s.other.reserve(std::size_t(count));
  Index kept = 0, n_others = 0;
  for (Index c = 0, r = 0; c < count; ++c) {
    const Index j = candidate[c];
    while (r < k && ids[r] < j) ++r;
    const bool in_top = r < k && ids[r] == j;
    if (!in_top && !(double(cosines[j]) >= cut)) continue;
    candidate[kept++] = j;
    if (!in_top) others[n_others++] = j;
  }
  CLP_ASSERT(kept - n_others == k);  // every one of the top k was among the first pass's candidates
  float* const other_value = s.other_value.reserve(std::size_t(n_others));
  rescore_rows(context, query, others, n_others, other_value);
  // Both lists ascend, as the kept candidates do: merge the values in candidate order.
  float* const value = s.value.reserve(std::size_t(kept));
  for (Index c = 0, r = 0, o = 0; c < kept; ++c)
    value[c] = (r < k && ids[r] == candidate[c]) ? top_value[r++] : other_value[o++];
  return kept;
}

/// Row i of the block (missing position `row`), whose product cosines have `bound` > 0: the
/// policy chooses among the rescored candidates; its choices are mapped back to overlap
/// positions.
template <class Policy>
void weigh_rescored_row(const block_context& context, const Policy& policy, Index row, Index i, float bound,
                        const block_buffers& buffers, rescoring_scratch& s) {
  const Index n_overlap = context.plan.n_overlap, k_max = context.plan.k_max, d = context.plan.d_helper;
  const float* const cosines = buffers.cosines + i * n_overlap;
  std::uint8_t& flag = context.outcomes.flags[std::size_t(row)];
  float max = 0;
  double sum = 0;
  Index& count = buffers.counts[i];
  count = 0;
  if (!(flag & zero_norm) && k_max > 0) {
    const double margin = double(bound) + rescoring_error(d);
    const Index collected = collect_candidates(cosines, n_overlap, k_max, margin, s, sum);
    const Index candidates = narrow_and_rescore(context, buffers.queries + i * d, cosines, collected, k_max, margin, s);
    const float* const value = s.value.data();
    max = *std::max_element(value, value + candidates);  // the largest cosine is a candidate
    Index* const neighbour = buffers.neighbours + i * k_max;
    count = policy(value, candidates, neighbour, buffers.weights + i * k_max);
    for (Index r = 0; r < count; ++r) neighbour[r] = s.candidate.data()[neighbour[r]];
    ++s.counts.rows;
    s.counts.candidates += candidates;
  }
  flag_cosines(max, sum, flag);
  if (count == 0 && !(flag & zero_norm)) flag |= fallback;
  const cosine_statistics chosen = statistics_of(buffers.weights + i * k_max, count);
  buffers.scale[i] = 1.0f;
  record_weights(context.outcomes, row, n_overlap, {chosen.sum_abs, chosen.sum_squares});
}

/// The block's rows weighed from the caller's product's cosines and their bounds (`bound`, one
/// per row of the block): rows the product marks exact (bound 0) as the float32 path weighs
/// them, the others through their candidates.
template <class Policy>
void weigh_by_product(const block_context& context, const Policy& policy, block_rows rows, const block_buffers& buffers,
                      const float* bound, rescoring_scratch& s) {
  for (Index i = 0; i < rows.m; ++i) {
    if (bound[i] > 0)
      weigh_rescored_row(context, policy, rows.row0 + i, i, bound[i], buffers, s);
    else
      weigh_neighbour_row(context, policy, rows.row0 + i, i, buffers);
  }
}

}  // namespace clp::detail
