// SPDX-License-Identifier: MIT
#pragma once

// Internal: the screen for NaN and infinite elements behind clp::find_non_finite
// (<clp/finite.hpp>), which every kernel runs on the rows it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace clp::detail {

/// The position of the first non-finite element of the contiguous data[0..n) (as float32: a
/// double past float's range counts), or -1. Screens with x * 0, which is 0 for every finite x
/// and NaN otherwise, added over independent lanes (vectorised, no early exit); half and
/// bfloat16, whose conversion to float keeps every value's finiteness, by their exponent bits
/// alone, all set for NaN and infinity. The position is looked for only when the screen fails.
template <class T>
Index first_non_finite_element(const T* data, Index n) {
  if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
    constexpr std::uint16_t exponent = std::is_same_v<T, Eigen::half> ? 0x7C00u : 0x7F80u;
    std::uint16_t screen = 0;
    for (Index i = 0; i < n; ++i) {
      std::uint16_t bits;
      std::memcpy(&bits, data + i, sizeof(bits));
      screen |= std::uint16_t((bits & exponent) == exponent);
    }
    if (screen == 0) return -1;
  } else {
    constexpr int lanes = 16;
    float screen[lanes] = {};
    Index i = 0;
    for (; i + lanes <= n; i += lanes)
      for (int l = 0; l < lanes; ++l) screen[l] += static_cast<float>(data[i + l]) * 0.0f;
    for (; i < n; ++i) screen[0] += static_cast<float>(data[i]) * 0.0f;
    float total = 0;
    for (float x : screen) total += x;
    if (total == 0) return -1;
  }
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(static_cast<float>(data[i]))) return i;
  return -1;
}

/// The first non-finite column of row r of v (as float32), or -1.
inline Index first_non_finite_column(const matrix_view<const void>& v, Index r) {
  return visit_element_type(v.type(), [&](auto* tag) -> Index {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* row = static_cast<const T*>(v.data()) + r * v.row_stride();
    const Index stride = v.col_stride();
    if (stride == 1) return first_non_finite_element(row, v.cols());
    for (Index c = 0; c < v.cols(); ++c)
      if (!std::isfinite(static_cast<float>(row[c * stride]))) return c;
    return -1;
  });
}

/// The first row of `rows`, in their order, with a non-finite element (as float32), or -1. Each
/// chunk of rows is screened by one task and the first chunk with such a row decides, so the
/// answer does not depend on the thread count.
inline Index first_non_finite_row(const matrix_view<const void>& v, const std::vector<Index>& rows, int threads) {
  constexpr Index chunk = 1024;
  const Index n = static_cast<Index>(rows.size());
  std::vector<Index> first_bad(static_cast<std::size_t>((n + chunk - 1) / chunk), -1);  // per chunk: position in rows
  parallel_for(Index(first_bad.size()), resolve_threads(threads), [&](Index k, int) {
    for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i)
      if (first_non_finite_column(v, rows[static_cast<std::size_t>(i)]) >= 0) {
        first_bad[static_cast<std::size_t>(k)] = i;
        return;
      }
  });
  for (Index i : first_bad)
    if (i >= 0) return rows[static_cast<std::size_t>(i)];
  return -1;
}

}  // namespace clp::detail
