// SPDX-License-Identifier: MIT
#pragma once

// Internal, neighbours: the blocked exact search behind clp::nearest_neighbours and
// clp::knn_overlap, and the refusals both share. Included by <clp/nearest_neighbours.hpp>
// after knn_options and knn_tiling, which it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/running_top_k.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace clp::detail {

/// 1 / ||x_r|| for every row r (0 for a zero row), used for query and panel rows alike.
inline std::vector<float> inverse_row_norms(const matrix_view<const void>& x) {
  std::vector<float> inverse(static_cast<std::size_t>(x.rows()));
  std::vector<float> row(static_cast<std::size_t>(x.cols()));
  for (Index r = 0; r < x.rows(); ++r) {
    load_row(x, r, row.data());
    const double norm = row_norm(row.data(), x.cols());
    inverse[static_cast<std::size_t>(r)] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
  }
  return inverse;
}

/// The search of query rows `queries` among all rows of x, block by block: a block's k best
/// of each query row written to `neighbours` (row-major, best first).
class neighbour_search {
 public:
  /// A worker's buffers, reused from block to block.
  struct scratch {
    std::vector<float> queries, panel, cosines;
    std::vector<scored_row> heaps;
    std::vector<Index> sizes;
  };

  neighbour_search(const matrix_view<const void>& x, const std::vector<Index>& queries, Index k, Index block)
      : x_(x), queries_(queries), k_(k), block_(block), inverse_norm_(inverse_row_norms(x)), all_rows_(x.rows()) {
    std::iota(all_rows_.begin(), all_rows_.end(), Index(0));
  }

  /// Block b: query rows queries[b * block, ...), at most block of them.
  void run(Index b, scratch& s, Index* neighbours) const;  // in neighbour_search-inl.hpp

 private:
  void scale_row(float* row, float inverse) const {
    for (Index c = 0; c < x_.cols(); ++c) row[c] *= inverse;
  }

  /// The cosines of query position `query` with panel rows [p0, p0 + pn) into its running top
  /// k; the query row itself is no candidate.
  void offer_panel(Index query, float* cosines, Index p0, Index pn, scratch& s) const {
    const Index self = queries_[std::size_t(query)];
    if (self >= p0 && self < p0 + pn) cosines[self - p0] = -std::numeric_limits<float>::infinity();
    const Index i = query % block_;
    s.sizes[std::size_t(i)] = offer_candidates(cosines, pn, p0, s.heaps.data() + i * k_, s.sizes[std::size_t(i)], k_);
  }

  matrix_view<const void> x_;
  const std::vector<Index>& queries_;
  Index k_, block_;
  std::vector<float> inverse_norm_;
  std::vector<Index> all_rows_;
};

/// The search itself; the caller has validated: 1 <= k < x.rows(), ids in range, finite rows.
inline std::vector<Index> search_neighbours(const matrix_view<const void>& x, const std::vector<Index>& queries,
                                            const knn_options& options) {
  const Index k = options.k;
  CLP_ASSERT(k >= 1 && k < x.rows() && x.cols() >= 1);
  std::vector<Index> neighbours(queries.size() * static_cast<std::size_t>(k));
  if (queries.empty()) return neighbours;
  const int threads = resolve_threads(options.threads);
  const tiling cut = knn_tiling(Index(queries.size()), x.cols(), options);
  const neighbour_search search(x, queries, k, cut.block_rows);
  std::vector<neighbour_search::scratch> workers(static_cast<std::size_t>(threads));
  parallel_for(cut.blocks, threads,
               [&](Index b, int worker) { search.run(b, workers[std::size_t(worker)], neighbours.data()); });
  return neighbours;
}

/// The refusals shared by nearest_neighbours and knn_overlap for matrix `name`.
inline void check_searchable(const matrix_view<const void>& x, const char* name, Index k, const char* context) {
  if (x.rows() < 1 || x.cols() < 1)
    throw invalid_argument(error_facts::in(context).with_argument(name),
                           "is empty (" + std::to_string(x.rows()) + " x " + std::to_string(x.cols()) + ")");
  if (k < 1)
    throw invalid_argument(error_facts::in(context).with_argument("k"), "must be at least 1, got " + std::to_string(k));
  if (k >= x.rows())
    throw invalid_argument(error_facts::in(context).with_argument("k"),
                           "is " + std::to_string(k) + " but must be smaller than the " + std::to_string(x.rows()) +
                               " rows (a token is not its own neighbour)");
}

/// Refuses an empty query list and an id outside [0, rows).
inline void check_queries(const std::vector<Index>& queries, Index rows, const char* context) {
  if (queries.empty()) throw invalid_argument(error_facts::in(context).with_argument("queries"), "is empty");
  for (std::size_t i = 0; i < queries.size(); ++i)
    if (queries[i] < 0 || queries[i] >= rows)
      throw invalid_argument(error_facts::in(context).with_argument("queries"),
                             "id " + std::to_string(queries[i]) + " at position " + std::to_string(i) +
                                 " is outside the " + std::to_string(rows) + " rows");
}

/// Every row is a candidate neighbour, so every row must be finite.
inline void require_finite_matrix(const matrix_view<const void>& x, const char* name, int threads,
                                  const char* context) {
  std::vector<Index> all_rows(static_cast<std::size_t>(x.rows()));
  std::iota(all_rows.begin(), all_rows.end(), Index(0));
  require_finite_rows(x, name, all_rows, resolve_threads(threads), context);
}

}  // namespace clp::detail

// The search of a block, which uses Eigen's products; with CLP_SEPARATE_COMPILATION, compiled
// once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/neighbours/neighbour_search-inl.hpp>
#endif
