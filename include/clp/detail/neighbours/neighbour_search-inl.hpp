// SPDX-License-Identifier: MIT
#pragma once

// Internal, neighbours: the search of one block (neighbour_search::run), which forms its cosines
// with Eigen's products. Included by neighbour_search.hpp in header-only builds, and by
// <clp/impl/src.hpp> with CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/neighbours/neighbour_search.hpp>

#include <algorithm>
#include <limits>

namespace clp::detail {

CLP_DECL void neighbour_search::run(Index b, scratch& s, Index* neighbours) const {
  const Index d = x_.cols(), row0 = b * block_, m = std::min(block_, Index(queries_.size()) - row0);
  s.queries.resize(std::size_t(block_ * d));
  s.panel.resize(std::size_t(panel_rows * d));
  s.cosines.resize(std::size_t(block_ * panel_rows));
  float* const queries = s.queries.data();
  float* const panel = s.panel.data();
  float* const cosines = s.cosines.data();
  s.heaps.resize(std::size_t(block_ * k_));
  s.sizes.assign(std::size_t(block_), 0);
  // Normalised query rows; rows past m are zero (padding to the block height).
  matrix_map(queries, block_, d).setZero();
  for (Index i = 0; i < m; ++i) {
    const Index id = queries_[std::size_t(row0 + i)];
    load_row(x_, id, queries + i * d);
    scale_row(queries + i * d, inverse_norm_[std::size_t(id)]);
  }
  for (Index p0 = 0; p0 < x_.rows(); p0 += panel_rows) {
    const Index pn = std::min(panel_rows, x_.rows() - p0);
    gather_rows(x_, all_rows_.data() + p0, pn, panel);
    for (Index j = 0; j < pn; ++j) scale_row(panel + j * d, inverse_norm_[std::size_t(p0 + j)]);
    matrix_map(cosines, block_, pn).noalias() = matrix_map(queries, block_, d) * matrix_map(panel, pn, d).transpose();
    for (Index i = 0; i < m; ++i) offer_panel(row0 + i, cosines + i * pn, p0, pn, s);
  }
  for (Index i = 0; i < m; ++i) {
    scored_row* heap = s.heaps.data() + i * k_;
    CLP_ASSERT(s.sizes[std::size_t(i)] == k_);
    std::sort_heap(heap, heap + k_, ranks_before{});
    for (Index r = 0; r < k_; ++r) neighbours[(row0 + i) * k_ + r] = heap[r].id;
  }
}

}  // namespace clp::detail
