// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what a least-squares map is fitted from (linear_map.hpp), apart from the
// fit, so that what holds moments (<clp/overlap_cache.hpp>) includes neither the fit nor a solver.
#include <clp/detail/internal_header_check.hpp>

#include <Eigen/Core>

#include <vector>

namespace clp::detail {

using double_matrix = Eigen::MatrixXd;  // column-major: middleCols are contiguous

/// What one pass over the overlap sums: G, and per source B, ||A_o||^2 and A_o's column sums.
struct overlap_moments {
  double_matrix gram;
  std::vector<double_matrix> cross;
  std::vector<double> sum_squares;
  std::vector<Eigen::VectorXd> column_sums;
};

}  // namespace clp::detail
