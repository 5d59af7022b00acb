// SPDX-License-Identifier: MIT
#pragma once

// Internal: the reductions of a row the kernels make, each over independent lanes added in a
// fixed order, so the compiler vectorises them and the result is a function of the row alone
// (wherever it lies in memory, whichever thread computes it): a row's norm, a dot product, its
// largest entry and sum, its largest absolute value; and the median of a list. (The sums a dense policy
// needs are clp::statistics_of, in <clp/policy.hpp>.)
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace clp::detail {

/// The Euclidean norm of row[0..n), summed in double over eight lanes.
inline double row_norm(const float* row, Index n) {
  constexpr int lanes = 8;
  using double_lanes = Eigen::Array<double, lanes, 1>;
  double_lanes sum = double_lanes::Zero();
  Index c = 0;
  for (; c + lanes <= n; c += lanes)
    sum += Eigen::Map<const Eigen::Array<float, lanes, 1>>(row + c).cast<double>().square();
  for (int l = 0; l < lanes && c < n; ++c, ++l) sum[l] += double(row[c]) * row[c];
  double total = 0;
  for (int l = 0; l < lanes; ++l) total += sum[l];
  return std::sqrt(total);
}

/// The dot product of a[0..n) and b[0..n), summed in double over eight lanes.
inline double dot_double(const float* a, const float* b, Index n) {
  constexpr int lanes = 8;
  using double_lanes = Eigen::Array<double, lanes, 1>;
  using float_lanes = Eigen::Map<const Eigen::Array<float, lanes, 1>>;
  double_lanes sum = double_lanes::Zero();
  Index c = 0;
  for (; c + lanes <= n; c += lanes) sum += float_lanes(a + c).cast<double>() * float_lanes(b + c).cast<double>();
  for (int l = 0; l < lanes && c < n; ++c, ++l) sum[l] += double(a[c]) * b[c];
  double total = 0;
  for (int l = 0; l < lanes; ++l) total += sum[l];
  return total;
}

/// The largest entry and the sum (in double) of x[0..n).
inline void max_and_sum(const float* x, Index n, float& max, double& sum) {
  constexpr int lanes = 8;
  float top[lanes];
  double total[lanes] = {};
  std::fill(top, top + lanes, -std::numeric_limits<float>::infinity());
  Index j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) {
      top[l] = std::max(top[l], x[j + l]);
      total[l] += double(x[j + l]);
    }
  for (int l = 0; j < n; ++j, ++l) {
    top[l] = std::max(top[l], x[j]);
    total[l] += double(x[j]);
  }
  max = *std::max_element(top, top + lanes);
  sum = 0;
  for (double t : total) sum += t;
}

/// The largest |x_j| of x[0..n), 0 for an empty row (x finite: the lanes take the larger of
/// two values as vmaxps does, which for finite values is std::max).
inline float max_abs_of(const float* x, Index n) {
  constexpr int lanes = 16;
  using float_lanes = Eigen::Array<float, lanes, 1>;
  float_lanes top = float_lanes::Zero();
  Index j = 0;
  for (; j + lanes <= n; j += lanes) top = top.max(Eigen::Map<const float_lanes>(x + j).abs());
  float best = top.maxCoeff();
  for (; j < n; ++j) best = std::max(best, std::abs(x[j]));
  return best;
}

/// The first position j with |x[j]| == value (n when none): chunks of lanes tested at once, the
/// chunk that holds it then read element by element.
inline Index first_abs_equal(const float* x, Index n, float value) {
  constexpr int lanes = 16;
  using float_lanes = Eigen::Array<float, lanes, 1>;
  Index j = 0;
  for (; j + lanes <= n; j += lanes)
    if ((Eigen::Map<const float_lanes>(x + j).abs() == value).any()) break;
  while (j < n && std::abs(x[j]) != value) ++j;
  return j;
}

/// The median (the upper one for an even count); 0 for an empty list.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace clp::detail
