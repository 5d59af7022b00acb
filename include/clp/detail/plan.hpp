// SPDX-License-Identifier: MIT
#pragma once

// Internal: how the blocked kernels (synthesis, k-NN overlap) cut their rows into blocks. The
// budget gives a tallest block; the blocks are then evened out so that every worker gets the
// same number of equally tall blocks. Block heights never change a result (see blocking.hpp),
// only how fast it comes.

#include <clp/detail/blocking.hpp>
#include <clp/matrix_view.hpp>

#include <algorithm>

namespace clp::detail {

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
