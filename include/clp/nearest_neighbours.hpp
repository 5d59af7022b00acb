// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Exact k-nearest-neighbour search by cosine similarity among the rows of one embedding
/// matrix: for each query row, the k other rows most similar to it, ties broken towards the
/// lower row id. What the neighbourhood diagnostic of <clp/knn_overlap.hpp> is built on.
///
/// How it runs: never with a #rows by #rows matrix in memory. Query rows are processed in
/// blocks of m rows; a block's normalised rows are multiplied by fixed panels of all
/// normalised rows, and each query row's running top k is updated from the panel's cosines (a
/// candidate is compared with the current k-th best before the heap is touched). Blocks run in
/// parallel, one task per block. Every cosine goes through the same kernel path whatever the
/// block it sits in (fixed panels, block heights padded to one quantum), and the top k under
/// "larger cosine, then lower id" does not depend on the order candidates arrive in, so the
/// neighbours are bit-identical for any thread count and tile budget.
#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/kernels/running_top_k.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/element_type.hpp>
#include <clp/execution.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <cstddef>
#include <vector>

namespace clp {

/// k, plus threads and tile budget (execution_options). How the search spends the tile budget
/// (the neighbour lists, 8 * #queries * k bytes, twice that for knn_overlap, come on top): each thread needs about
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

/// The tiling nearest_neighbours (and knn_overlap, for each of its two matrices) uses: the
/// query rows per block that options.tile_bytes allows, evened out across options.threads
/// workers, and the fixed panel height. Neither changes a result.
/// @param[in] queries  #queries, the query rows searched for
/// @param[in] cols     d, the width of the matrix searched
/// @param[in] options  k, threads and tile budget
inline tiling knn_tiling(Index queries, Index cols, const knn_options& options) {
  const int threads = resolve_threads(options.threads);
  const Index heap_floats = options.k * Index(sizeof(detail::scored_row) / sizeof(float));
  const Index budget_floats = static_cast<Index>(options.tile_bytes / sizeof(float) / std::size_t(threads));
  const Index max_rows = (budget_floats - detail::panel_rows * cols) / (cols + detail::panel_rows + heap_floats);
  const detail::block_plan plan = detail::balance_blocks(queries, max_rows, threads);
  return {plan.rows, plan.count, detail::panel_rows};
}

}  // namespace clp

// The search, which reads knn_options and knn_tiling above.
#include <clp/detail/neighbours/neighbour_search.hpp>

namespace clp {

/// The k rows of x most cosine-similar to each query row, the query row itself excluded, ties
/// towards the lower row id; a zero-norm row has cosine 0 with every row. Cosines are computed
/// in float32; the lists are bit-identical for any thread count and tile budget.
///
/// @param[in] x        #rows by d, anything make_view accepts, with elements float, double,
///                     Eigen::half or Eigen::bfloat16
/// @param[in] queries  #queries row ids in [0, #rows), any order, repeats allowed
/// @param[in] options  k (1 <= k < #rows), threads, tile budget
/// @return #queries by k row ids, row-major: row i holds the neighbours of queries[i], best first
/// @throws clp::invalid_argument for an empty matrix (argument "x"), k out of range ("k"), an
///         empty query list or an id outside the rows ("queries"); clp::non_finite_input for
///         a NaN or infinite element of any row of x (every row is a candidate)
template <class Matrix>
std::vector<Index> nearest_neighbours(const Matrix& x, const std::vector<Index>& queries,
                                      const knn_options& options = {}) {
  constexpr const char* context = "clp::nearest_neighbours";
  const matrix_view<const void> view = make_view(x);
  detail::check_searchable(view, "x", options.k, context);
  detail::check_queries(queries, view.rows(), context);
  detail::require_finite_matrix(view, "x", options.threads, context);
  return detail::search_neighbours(view, queries, options);
}

}  // namespace clp
