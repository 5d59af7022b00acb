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
/// How it runs: exact, and never with a #vocab by #vocab matrix in memory. Query rows are
/// processed in blocks of m rows; a block's normalised rows are multiplied by panels of all
/// normalised rows, and each query row's running top k is updated from the panel's cosines
/// (a candidate is compared with the current k-th best before the heap is touched). Blocks
/// run in parallel, one task per block. Every cosine goes through the same kernel path
/// whatever the block it sits in (fixed panels, block heights padded to the same quantum as
/// synthesis), and the top k under "larger cosine, then lower id" does not depend on the
/// order candidates arrive in, so the neighbours, and the result, are bit-identical for any
/// thread count and tile budget.

#include <clp/detail/blocking.hpp>
#include <clp/detail/erased_view.hpp>
#include <clp/parallel.hpp>
#include <clp/detail/plan.hpp>
#include <clp/detail/top_k.hpp>
#include <clp/detail/validation.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace clp {

/// k, plus threads and tile budget (execution_options). How the k-NN overlap spends the tile
/// budget (the neighbour lists, 16 * |tokens| * k bytes, come on top): each thread needs about
/// 4 * (m * (d + panel_rows + 4 * k) + panel_rows * d) bytes for a block of m query rows of
/// width d (panel_rows = 512); m is a multiple of 48 (48 at least). Every block reads all rows
/// once, so a larger budget means fewer passes over the vocabulary.
///
/// Built as `knn_options{k, threads, tile_bytes}` (or field by field): the constructor keeps k
/// first, where aggregate initialisation would put the inherited threads first and silently
/// read `knn_options{20}` as 20 threads.
struct knn_options : execution_options {
  /// Neighbours per token, 1 <= k < #vocab.
  Index k = 10;

  knn_options() = default;
  explicit knn_options(Index neighbours, int worker_threads = 0, std::size_t tile = default_tile_bytes)
      : execution_options{worker_threads, tile}, k(neighbours) {}
};

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

/// Query rows per block for `threads` workers sharing tile_bytes (see knn_options): the most
/// the budget allows, evened out across the workers by balance_blocks. Neither choice changes a
/// result.
inline Index knn_block_rows(Index n_queries, Index d, Index k, int threads, std::size_t tile_bytes) {
  const Index heap_floats = k * Index(sizeof(scored_row) / sizeof(float));
  const Index budget_floats = static_cast<Index>(tile_bytes / sizeof(float) / std::size_t(threads));
  const Index max_rows = (budget_floats - panel_rows * d) / (d + panel_rows + heap_floats);
  return balance_blocks(n_queries, max_rows, threads).rows;
}

/// The k rows of x most cosine-similar to each query row, the query row itself excluded, ties
/// towards the lower id: |queries| by k row ids, row-major, best first. A zero-norm row has
/// cosine 0 with every row. Callers validate: 1 <= k < x.rows, ids in range, finite values.
/// @param[in] x        #rows by d, d >= 1
/// @param[in] queries  query row ids, any order, repeats allowed
inline std::vector<Index> nearest_neighbours(const input_view& x, const std::vector<Index>& queries, Index k,
                                             int requested_threads, std::size_t tile_bytes) {
  const Index n_rows = x.rows;
  const Index d = x.cols;
  const Index n_queries = static_cast<Index>(queries.size());
  CLP_ASSERT(k >= 1 && k < n_rows && d >= 1);
  std::vector<Index> neighbours(static_cast<std::size_t>(n_queries * k));
  if (n_queries == 0) return neighbours;

  // Inverse norms, computed once and used for query and panel rows alike.
  std::vector<float> inverse_norm(static_cast<std::size_t>(n_rows));
  {
    std::vector<float> row(static_cast<std::size_t>(d));
    for (Index r = 0; r < n_rows; ++r) {
      load_row(x, r, row.data());
      const double norm = row_norm(row.data(), d);
      inverse_norm[r] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    }
  }
  std::vector<Index> all_rows(static_cast<std::size_t>(n_rows));
  std::iota(all_rows.begin(), all_rows.end(), Index(0));

  const int threads = resolve_threads(requested_threads);
  const Index block = knn_block_rows(n_queries, d, k, threads, tile_bytes);
  const Index n_blocks = ceil_div(n_queries, block);

  struct scratch {
    std::vector<float> queries, panel, cosines;
    std::vector<scored_row> heaps;
    std::vector<Index> sizes;
  };
  std::vector<scratch> workers(static_cast<std::size_t>(threads));

  parallel_for(n_blocks, threads, [&](Index b, int worker) {
    scratch& s = workers[std::size_t(worker)];
    s.queries.resize(std::size_t(block * d));
    s.panel.resize(std::size_t(panel_rows * d));
    s.cosines.resize(std::size_t(block * panel_rows));
    s.heaps.resize(std::size_t(block * k));
    s.sizes.assign(std::size_t(block), 0);

    const Index row0 = b * block;
    const Index m = std::min(block, n_queries - row0);

    // Normalised query rows; rows past m stay zero (padding to the block height).
    matrix_map query_block(s.queries.data(), block, d);
    query_block.setZero();
    for (Index i = 0; i < m; ++i) {
      float* q = s.queries.data() + i * d;
      const Index id = queries[std::size_t(row0 + i)];
      load_row(x, id, q);
      for (Index c = 0; c < d; ++c) q[c] *= inverse_norm[id];
    }

    for (Index p0 = 0; p0 < n_rows; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_rows - p0);
      gather_rows(x, all_rows.data() + p0, pn, s.panel.data());
      for (Index j = 0; j < pn; ++j) {
        float* h = s.panel.data() + j * d;
        for (Index c = 0; c < d; ++c) h[c] *= inverse_norm[p0 + j];
      }
      matrix_map(s.cosines.data(), block, pn).noalias() = query_block * matrix_map(s.panel.data(), pn, d).transpose();
      for (Index i = 0; i < m; ++i) {
        float* c = s.cosines.data() + i * pn;
        const Index self = queries[std::size_t(row0 + i)];
        if (self >= p0 && self < p0 + pn) c[self - p0] = -std::numeric_limits<float>::infinity();
        s.sizes[i] = offer_candidates(c, pn, p0, s.heaps.data() + i * k, s.sizes[i], k);
      }
    }

    for (Index i = 0; i < m; ++i) {
      scored_row* heap = s.heaps.data() + i * k;
      CLP_ASSERT(s.sizes[i] == k);
      std::sort_heap(heap, heap + k, ranks_before{});
      Index* out = neighbours.data() + (row0 + i) * k;
      for (Index r = 0; r < k; ++r) out[r] = heap[r].id;
    }
  });
  return neighbours;
}

inline knn_overlap_result knn_overlap(const input_view& a, const input_view& b, const std::vector<Index>& queries,
                                      const knn_options& options, const char* context) {
  for (const auto& [v, name] : {std::pair(a, "a"), std::pair(b, "b")})
    if (v.rows < 1 || v.cols < 1)
      fail(std::string(context) + ": '" + name + "' is empty (" + std::to_string(v.rows) + " x " +
           std::to_string(v.cols) + ")");
  if (a.rows != b.rows)
    fail(std::string(context) + ": 'a' has " + std::to_string(a.rows) + " rows but 'b' has " + std::to_string(b.rows) +
         " (both must hold the same vocabulary)");
  const Index k = options.k;
  if (k < 1) fail(std::string(context) + ": k must be at least 1, got " + std::to_string(k));
  if (k >= a.rows)
    fail(std::string(context) + ": k = " + std::to_string(k) + " must be smaller than the " + std::to_string(a.rows) +
         " rows (a token is not its own neighbour)");
  if (queries.empty()) fail(std::string(context) + ": 'queries' is empty");
  for (std::size_t i = 0; i < queries.size(); ++i)
    if (queries[i] < 0 || queries[i] >= a.rows)
      fail(std::string(context) + ": query id " + std::to_string(queries[i]) + " at position " + std::to_string(i) +
           " is outside the " + std::to_string(a.rows) + " rows");
  // Every row is a candidate neighbour, so every row must be finite.
  std::vector<Index> all_rows(static_cast<std::size_t>(a.rows));
  std::iota(all_rows.begin(), all_rows.end(), Index(0));
  const int threads = resolve_threads(options.threads);
  require_finite_rows(a, "a", all_rows, threads, context);
  require_finite_rows(b, "b", all_rows, threads, context);

  const std::vector<Index> near_a = nearest_neighbours(a, queries, k, options.threads, options.tile_bytes);
  const std::vector<Index> near_b = nearest_neighbours(b, queries, k, options.threads, options.tile_bytes);

  knn_overlap_result result;
  result.tokens = static_cast<Index>(queries.size());
  result.k = k;
  result.per_token.resize(queries.size());
  std::vector<Index> sorted_a(static_cast<std::size_t>(k)), sorted_b(static_cast<std::size_t>(k));
  Index total = 0;  // an integer count: the mean does not depend on summation order
  for (Index t = 0; t < result.tokens; ++t) {
    std::copy_n(near_a.begin() + t * k, k, sorted_a.begin());
    std::copy_n(near_b.begin() + t * k, k, sorted_b.begin());
    std::sort(sorted_a.begin(), sorted_a.end());
    std::sort(sorted_b.begin(), sorted_b.end());
    Index shared = 0;
    for (auto i = sorted_a.begin(), j = sorted_b.begin(); i != sorted_a.end() && j != sorted_b.end();) {
      if (*i < *j)
        ++i;
      else if (*j < *i)
        ++j;
      else {
        ++shared;
        ++i;
        ++j;
      }
    }
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
/// @throws clp::error on an empty matrix, different row counts, k out of range, an empty
/// query list or an id outside the rows, NaN or infinite values
template <class A, class B>
knn_overlap_result knn_overlap(const A& a, const B& b, const std::vector<Index>& queries,
                               const knn_options& options = {}) {
  return detail::knn_overlap(detail::input_view::from(make_view(a)), detail::input_view::from(make_view(b)), queries,
                             options, "clp::knn_overlap");
}

/// knn_overlap over the whole vocabulary: every row is a query.
/// @param[in] a        #vocab by d_a
/// @param[in] b        #vocab by d_b
/// @param[in] options  k (1 <= k < #vocab), threads, tile budget
/// @return mean overlap, #vocab, k, and #vocab per-token overlaps in row order
template <class A, class B>
knn_overlap_result knn_overlap(const A& a, const B& b, const knn_options& options = {}) {
  const auto va = detail::input_view::from(make_view(a));
  std::vector<Index> all(static_cast<std::size_t>(std::max<Index>(va.rows, 0)));
  std::iota(all.begin(), all.end(), Index(0));
  return detail::knn_overlap(va, detail::input_view::from(make_view(b)), all, options, "clp::knn_overlap");
}

}  // namespace clp
