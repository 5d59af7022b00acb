// SPDX-License-Identifier: MIT
#pragma once

// Internal: the largest entry of a row, over independent lanes so the compiler vectorises it.
// (The sums a dense policy needs are clp::statistics_of, in <clp/weights.hpp>.)

#include <clp/matrix_view.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

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

}  // namespace clp::detail
