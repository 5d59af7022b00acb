// SPDX-License-Identifier: MIT
#pragma once

// Internal, weighting: the one pass over a row of cosines behind clp::statistics_of
// (<clp/policy.hpp>). Included by <clp/policy.hpp> after cosine_statistics, which it fills.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace clp::detail {

/// The statistics of x[0..n), summed in double over eight lanes: fixed-size Eigen arrays,
/// vectorised lane by lane and never reassociated, the lanes added in order at the end.
inline cosine_statistics lane_statistics(const float* x, Index n) {
  constexpr int lanes = 8;
  using float_lanes = Eigen::Array<float, lanes, 1>;
  using double_lanes = Eigen::Array<double, lanes, 1>;
  float_lanes top = float_lanes::Constant(-std::numeric_limits<float>::infinity());
  double_lanes sum = double_lanes::Zero(), sum_abs = sum, sum_squares = sum, sum_positive = sum;
  Index j = 0;
  for (; j + lanes <= n; j += lanes) {
    const float_lanes f = Eigen::Map<const float_lanes>(x + j);
    top = top.max(f);
    const double_lanes v = f.cast<double>();
    sum += v;
    sum_abs += v.abs();
    sum_squares += v.square();
    sum_positive += v.max(0.0);
  }
  for (int l = 0; j < n; ++j, ++l) {
    const double v = x[j];
    top[l] = std::max(top[l], x[j]);
    sum[l] += v;
    sum_abs[l] += std::abs(v);
    sum_squares[l] += v * v;
    sum_positive[l] += std::max(v, 0.0);
  }
  cosine_statistics total;
  total.max = -std::numeric_limits<double>::infinity();
  for (int l = 0; l < lanes; ++l) {
    total.max = std::max(total.max, double(top[l]));
    total.sum += sum[l];
    total.sum_abs += sum_abs[l];
    total.sum_squares += sum_squares[l];
    total.sum_positive += sum_positive[l];
  }
  return total;
}

}  // namespace clp::detail
