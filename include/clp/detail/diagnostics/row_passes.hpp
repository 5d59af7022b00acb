// SPDX-License-Identifier: MIT
#pragma once

// Internal: how the under-trained screen (<clp/undertrained.hpp>) reads a matrix. Every pass
// reads consecutive chunks of rows, converted to float32 row-major in a buffer of the worker
// that reads them; nothing else of the matrix is ever held. The chunks are grouped into a fixed
// number of slots that depends on the row count alone, and a reduction keeps one partial per
// slot, added in slot order, so that every result is the same for any thread count. Also the
// robust statistics and the fixed pseudo-random numbers the screen uses.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/splitmix64.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace clp::detail::undertrained {

/// Row r of m as float32: out[c] = float(m(r, c)) for c in [0, #cols).
inline void read_row_as_float(const matrix_view<const void>& m, Index r, float* out) {
  visit(m, [&](auto typed) {
    const auto* row = typed.data() + r * typed.row_stride();
    const Index stride = typed.col_stride();
    if (stride == 1) {
      to_float32(row, typed.cols(), out);
    } else {
      for (Index c = 0; c < typed.cols(); ++c) out[c] = static_cast<float>(row[c * stride]);
    }
  });
}

/// Rows [first, first + count) of m as float32, row-major: out[i * #cols + c] = m(first + i, c).
/// A column-major matrix is read column by column, each column's run of rows contiguous.
inline void read_rows_as_float(const matrix_view<const void>& m, Index first, Index count, float* out) {
  if (m.order() == storage_order::row_major) {
    for (Index i = 0; i < count; ++i) read_row_as_float(m, first + i, out + i * m.cols());
    return;
  }
  visit(m, [&](auto typed) {
    for (Index c = 0; c < typed.cols(); ++c) {
      const auto* column = typed.data() + c * typed.outer_stride() + first;
      for (Index i = 0; i < count; ++i) out[i * typed.cols() + c] = static_cast<float>(column[i]);
    }
  });
}

/// The rows of one chunk: `count` rows starting at `first`, as float32 row-major (`cols` wide).
/// The buffer is the reading worker's own, so a pass may overwrite it.
struct row_chunk {
  Index first = 0;
  Index count = 0;
  Index cols = 0;
  float* rows = nullptr;

  float* row(Index i) const { return rows + i * cols; }
};

/// How a pass cuts the rows: `slots` slots of consecutive rows, each read in chunks of at most
/// `chunk_rows` rows (about 1 MiB of float32 each, at least one row).
struct chunk_plan {
  Index slots = 0;
  Index chunk_rows = 1;

  static chunk_plan of(Index rows, Index cols) {
    constexpr Index max_slots = 64;
    const Index chunk = std::clamp<Index>((Index(1) << 18) / std::max<Index>(cols, 1), 1, 256);
    return {std::min(max_slots, (rows + chunk - 1) / chunk), chunk};
  }
  Index slot_begin(Index slot, Index rows) const { return slots ? slot * rows / slots : 0; }
};

/// Calls f(slot, chunk) for every chunk of m's rows, slots in parallel on `threads` workers (0:
/// all hardware threads), the chunks of one slot in row order. Working memory: one chunk
/// buffer per worker.
template <class F>
void for_each_chunk(const matrix_view<const void>& m, int threads, F&& f) {
  const chunk_plan plan = chunk_plan::of(m.rows(), m.cols());
  const int workers = static_cast<int>(std::clamp<Index>(plan.slots, 1, resolve_threads(threads)));
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(workers));
  parallel_for(plan.slots, workers, [&](Index slot, int worker) {
    std::vector<float>& buffer = buffers[static_cast<std::size_t>(worker)];
    buffer.resize(static_cast<std::size_t>(plan.chunk_rows * m.cols()));
    const Index end = plan.slot_begin(slot + 1, m.rows());
    for (Index first = plan.slot_begin(slot, m.rows()); first < end; first += plan.chunk_rows) {
      const row_chunk chunk{first, std::min(plan.chunk_rows, end - first), m.cols(), buffer.data()};
      read_rows_as_float(m, chunk.first, chunk.count, chunk.rows);
      f(slot, chunk);
    }
  });
}

/// The number of slots for_each_chunk uses on m: the size of a per-slot reduction.
inline Index slot_count(const matrix_view<const void>& m) { return chunk_plan::of(m.rows(), m.cols()).slots; }

/// sum_c a[c] * b[c] over n floats, in double.
inline double dot(const float* a, const float* b, Index n) {
  double sum[4] = {0, 0, 0, 0};
  Index c = 0;
  for (; c + 4 <= n; c += 4)
    for (int l = 0; l < 4; ++l) sum[l] += double(a[c + l]) * b[c + l];
  for (; c < n; ++c) sum[0] += double(a[c]) * b[c];
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

/// sum_c (a[c] - b[c])^2 of n floats a and n doubles b, in double.
inline double squared_distance(const float* a, const double* b, Index n) {
  double sum[4] = {0, 0, 0, 0};
  Index c = 0;
  for (; c + 4 <= n; c += 4)
    for (int l = 0; l < 4; ++l) {
      const double diff = a[c + l] - b[c + l];
      sum[l] += diff * diff;
    }
  for (; c < n; ++c) sum[0] += (a[c] - b[c]) * (a[c] - b[c]);
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

/// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  const double upper = *mid;
  if (values.size() % 2) return upper;
  return 0.5 * (*std::max_element(values.begin(), mid) + upper);
}

/// A robust location and spread: the median and 1.4826 times the median absolute deviation
/// (the standard deviation, were the values normal).
struct robust_spread {
  double median = 0;
  double sigma = 0;

  static robust_spread of(const std::vector<double>& values) {
    robust_spread s;
    s.median = detail::undertrained::median(values);
    std::vector<double> deviations(values.size());
    std::transform(values.begin(), values.end(), deviations.begin(), [&](double x) { return std::abs(x - s.median); });
    s.sigma = 1.4826 * detail::undertrained::median(std::move(deviations));
    return s;
  }
};

/// A number in [0, 1) from the hash of (stream, i) (clp::splitmix64): the screen's pseudo-random
/// numbers, the same on every platform.
inline double uniform(std::uint64_t stream, std::uint64_t i) {
  return double(splitmix64(splitmix64(stream) ^ i) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace clp::detail::undertrained
