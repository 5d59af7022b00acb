// SPDX-License-Identifier: MIT
#pragma once

// Internal: the largest entry of a row, over independent lanes so the compiler vectorises it,
// and the median of a list. (The sums a dense policy needs are clp::statistics_of, in
// <clp/weights.hpp>.)

#include <clp/matrix_view.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

namespace clp::detail {

inline float max_of(const float* x, Index n) {
  constexpr int lanes = 16;
  float lane[lanes];
  std::fill(lane, lane + lanes, -std::numeric_limits<float>::infinity());
  Index j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) lane[l] = std::max(lane[l], x[j + l]);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j]);
  return *std::max_element(lane, lane + lanes);
}

/// The median (the upper one for an even count); 0 for an empty list.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace clp::detail
