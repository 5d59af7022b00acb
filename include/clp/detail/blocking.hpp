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
inline constexpr index panel_rows = 512;
/// Block heights are multiples of this.
inline constexpr index block_quantum = 48;

using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using matrix_map = Eigen::Map<row_major_matrix>;
using strided_map = Eigen::Map<row_major_matrix, 0, Eigen::OuterStride<>>;

inline double row_norm(const float* row, index n) {
  double sum = 0;
  for (index c = 0; c < n; ++c) sum += double(row[c]) * row[c];
  return std::sqrt(sum);
}

}  // namespace clp::detail
