// SPDX-License-Identifier: MIT
#pragma once

// Internal: how the blocked kernels (synthesis, nearest neighbours) cut their work, and why the
// cut never changes a result.
//
// With row-major float matrices, Eigen (and BLAS) compute C = Q * P^T as the transposed
// product, so the kernels' row blocking (48 rows on AVX-512) runs along the panel, whose
// partition into panel_rows-row panels is fixed; the block height only meets the kernels'
// column blocking (4), and every block height is a multiple of block_quantum. So each
// element of C goes through the same kernel path, with the same order of its sum, whichever
// block, thread or budget it was computed under.
//
// The budget gives a tallest block; the blocks are then evened out so that every worker gets
// the same number of equally tall blocks.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>

namespace clp::detail {

/// Overlap (or vocabulary) rows per panel: fixed, so the order of every sum is fixed.
inline constexpr Index panel_rows = 512;
/// Block heights are multiples of this.
inline constexpr Index block_quantum = 48;
/// The tallest block when the overlap panels are shared (resident): short blocks lose to the
/// products' packing, tall ones to page faults and cache misses on the block's cosines
/// (examples/benchmarks/bench_synthesis measures the trade-off).
inline constexpr Index max_shared_block = 480;

using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using matrix_map = Eigen::Map<row_major_matrix>;
using const_matrix_map = Eigen::Map<const row_major_matrix>;
using strided_map = Eigen::Map<row_major_matrix, 0, Eigen::OuterStride<>>;
using const_strided_map = Eigen::Map<const row_major_matrix, 0, Eigen::OuterStride<>>;

inline constexpr Index ceil_div(Index n, Index d) { return (n + d - 1) / d; }
inline constexpr Index round_up(Index n, Index step) { return ceil_div(n, step) * step; }

/// Rows per block and number of blocks.
struct block_plan {
  Index rows = block_quantum;
  Index count = 0;
};

/// Blocks for n_rows rows on `threads` workers, each block at most max_rows tall (rounded down
/// to a multiple of block_quantum, and block_quantum at least): a multiple of `threads` blocks
/// of equal height where the rows allow, so no worker idles at the end.
inline block_plan balance_blocks(Index n_rows, Index max_rows, int threads) {
  if (n_rows <= 0) return {};
  Index rows = std::max(block_quantum, max_rows / block_quantum * block_quantum);
  const Index blocks = std::min(round_up(ceil_div(n_rows, rows), threads), ceil_div(n_rows, block_quantum));
  rows = round_up(ceil_div(n_rows, blocks), block_quantum);
  return {rows, ceil_div(n_rows, rows)};
}

}  // namespace clp::detail
