// SPDX-License-Identifier: MIT
#pragma once

// Internal: row reductions for the weighting step. Each keeps independent lanes so the
// compiler vectorises it, and adds the lanes in a fixed order at the end, so the result
// depends only on the row, never on the block or thread it was computed in. Sums are in
// double: a row has as many terms as the overlap (tens of thousands).

#include <clp/matrix_view.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace clp::detail {

inline float max_of(const float* x, index n) {
  constexpr int lanes = 16;
  float lane[lanes];
  std::fill(lane, lane + lanes, -std::numeric_limits<float>::infinity());
  index j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) lane[l] = std::max(lane[l], x[j + l]);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j]);
  return *std::max_element(lane, lane + lanes);
}

struct row_sums {
  double sum = 0;           ///< sum x
  double sum_abs = 0;       ///< sum |x|
  double sum_squares = 0;   ///< sum x^2
  double sum_positive = 0;  ///< sum max(x, 0)
};

inline row_sums sums_of(const float* x, index n) {
  constexpr int lanes = 8;
  double sum[lanes] = {}, sum_abs[lanes] = {}, sum_squares[lanes] = {}, sum_positive[lanes] = {};
  auto add = [&](int l, double v) {
    sum[l] += v;
    sum_abs[l] += std::abs(v);
    sum_squares[l] += v * v;
    sum_positive[l] += std::max(v, 0.0);
  };
  index j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) add(l, x[j + l]);
  for (int l = 0; j < n; ++j, ++l) add(l, x[j]);
  row_sums total;
  for (int l = 0; l < lanes; ++l) {
    total.sum += sum[l];
    total.sum_abs += sum_abs[l];
    total.sum_squares += sum_squares[l];
    total.sum_positive += sum_positive[l];
  }
  return total;
}

}  // namespace clp::detail
