// SPDX-License-Identifier: MIT
#pragma once

// Internal: the blocking shared by the blocked kernels (synthesis, k-NN overlap), and why it
// keeps results bit-identical for any thread count and tile budget.
//
// With row-major float matrices, Eigen (and BLAS) compute C = Q * P^T as the transposed
// product, so the kernels' row blocking (48 rows on AVX-512) runs along the panel, whose
// partition into panel_rows-row panels is fixed; the block height only meets the kernels'
// column blocking (4), and every block height is a multiple of block_quantum. So each
// element of C goes through the same kernel path, with the same order of its sum, whichever
// block, thread or budget it was computed under.

#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <cmath>

namespace clp::detail {

/// Overlap (or vocabulary) rows per panel: fixed, so the order of every sum is fixed.
inline constexpr Index panel_rows = 512;
/// Block heights are multiples of this.
inline constexpr Index block_quantum = 48;
/// The tallest block when the overlap panels are shared (resident): measured on the three
/// benchmark shapes, 336-480 rows were fastest, 96 and fewer lose to the products' packing,
/// and 1200 or more to page faults and cache misses on the block's cosines.
inline constexpr Index max_shared_block = 480;

using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using matrix_map = Eigen::Map<row_major_matrix>;
using strided_map = Eigen::Map<row_major_matrix, 0, Eigen::OuterStride<>>;

/// The Euclidean norm of row[0..n), summed in double over eight lanes (vectorised, and the
/// same for a row wherever it lies in memory), the lanes added in order.
inline double row_norm(const float* row, Index n) {
  constexpr int lanes = 8;
  using double_lanes = Eigen::Array<double, lanes, 1>;
  double_lanes sum = double_lanes::Zero();
  Index c = 0;
  for (; c + lanes <= n; c += lanes)
    sum += Eigen::Map<const Eigen::Array<float, lanes, 1>>(row + c).cast<double>().square();
  for (int l = 0; c < n; ++c, ++l) sum[l] += double(row[c]) * row[c];
  double total = 0;
  for (int l = 0; l < lanes; ++l) total += sum[l];
  return std::sqrt(total);
}

}  // namespace clp::detail
