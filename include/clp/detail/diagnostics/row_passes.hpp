// SPDX-License-Identifier: MIT
#pragma once

// Internal: how the under-trained screen (<clp/undertrained.hpp>) reads a matrix. Every pass
// reads consecutive chunks of rows as float32 row-major: a float32 matrix with contiguous rows
// in place, any other converted into a buffer of the worker that reads them; nothing else of
// the matrix is ever held, and no row is converted twice in one pass. The chunks are grouped
// into a fixed number of slots that depends on the row count alone, and a reduction keeps one
// partial per slot, added in slot order, so that every result is the same for any thread
// count. Also the robust statistics and the fixed pseudo-random numbers the screen uses.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/splitmix64.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
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

/// The rows of one chunk: `count` rows starting at `first`, as float32 row-major (`cols` wide,
/// `stride` floats from one row to the next). Read only: they may be the matrix's own memory.
struct row_chunk {
  Index first = 0;
  Index count = 0;
  Index cols = 0;
  Index stride = 0;
  const float* rows = nullptr;

  const float* row(Index i) const { return rows + i * stride; }
  /// The chunk as an Eigen matrix, count by cols.
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>
  matrix() const {
    return {rows, count, cols, Eigen::OuterStride<>(stride)};
  }
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

/// Whether m's rows can be read in place as float32: float32, each row contiguous.
inline bool float_rows_in_place(const matrix_view<const void>& m) {
  return m.type() == element_type::float32 && (m.order() == storage_order::row_major || m.cols() <= 1);
}

/// Calls f(slot, worker, chunk) for every chunk of m's rows, slots in parallel on `threads`
/// workers (0: all hardware threads), the chunks of one slot in row order; then, once a slot's
/// chunks are done, finish(slot, worker), one slot at a time and in slot order, whichever
/// workers ran them. So a worker can sum its slot into a partial of its own, and finish() add
/// that partial to a total: the total's bits do not depend on the thread count, and the
/// partials take one per worker. Working memory: one chunk buffer per worker, none when m's
/// rows are float32 and contiguous.
template <class F, class Finish>
void for_each_chunk_summed(const matrix_view<const void>& m, int threads, F&& f, Finish&& finish) {
  const chunk_plan plan = chunk_plan::of(m.rows(), m.cols());
  const int workers = static_cast<int>(std::clamp<Index>(plan.slots, 1, resolve_threads(threads)));
  const bool in_place = float_rows_in_place(m);
  const auto* data = static_cast<const float*>(m.data());
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(workers));
  std::mutex mutex;
  std::condition_variable turn;
  Index finished = 0;  // the slots whose finish() has run (or that failed), a prefix
  parallel_for(plan.slots, workers, [&](Index slot, int worker) {
    std::exception_ptr failure;
    try {
      std::vector<float>& buffer = buffers[static_cast<std::size_t>(worker)];
      if (!in_place) buffer.resize(static_cast<std::size_t>(plan.chunk_rows * m.cols()));
      const Index end = plan.slot_begin(slot + 1, m.rows());
      for (Index first = plan.slot_begin(slot, m.rows()); first < end; first += plan.chunk_rows) {
        const Index count = std::min(plan.chunk_rows, end - first);
        if (in_place) {
          f(slot, worker, row_chunk{first, count, m.cols(), m.row_stride(), data + first * m.row_stride()});
        } else {
          read_rows_as_float(m, first, count, buffer.data());
          f(slot, worker, row_chunk{first, count, m.cols(), m.cols(), buffer.data()});
        }
      }
    } catch (...) {
      failure = std::current_exception();
    }
    // Slots are taken in increasing order, so every slot before this one is running or done,
    // and each one, failed or not, takes its turn: no worker waits for a slot nobody holds.
    std::unique_lock<std::mutex> lock(mutex);
    turn.wait(lock, [&] { return finished == slot; });
    if (!failure) {
      try {
        finish(slot, worker);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    ++finished;
    lock.unlock();
    turn.notify_all();
    if (failure) std::rethrow_exception(failure);
  });
}

/// Calls f(slot, chunk) for every chunk of m's rows, slots in parallel on `threads` workers (0:
/// all hardware threads), the chunks of one slot in row order. Working memory: one chunk
/// buffer per worker, none when m's rows are float32 and contiguous.
template <class F>
void for_each_chunk(const matrix_view<const void>& m, int threads, F&& f) {
  for_each_chunk_summed(
      m, threads, [&](Index slot, int, const row_chunk& chunk) { f(slot, chunk); }, [](Index, int) {});
}

/// The screen's reductions of one row: eight double lanes, added in a fixed order at the end,
/// so that the compiler vectorises them and each result is a function of the row alone.
inline constexpr int row_lanes = 8;
using double_lanes = Eigen::Array<double, row_lanes, 1>;
using float_lanes = Eigen::Map<const Eigen::Array<float, row_lanes, 1>>;
using double_lanes_map = Eigen::Map<const double_lanes>;

inline double sum_of_lanes(const double_lanes& lanes) {
  double total = 0;
  for (int l = 0; l < row_lanes; ++l) total += lanes[l];
  return total;
}

/// sum_c x[c]^2, and sum[c] += x[c], over n floats x, in double.
inline double add_row(const float* x, Index n, double* sum) {
  double_lanes squares = double_lanes::Zero();
  Index c = 0;
  for (; c + row_lanes <= n; c += row_lanes) {
    const double_lanes v = float_lanes(x + c).cast<double>();
    squares += v.square();
    Eigen::Map<double_lanes>(sum + c) += v;
  }
  for (int l = 0; c < n; ++c, ++l) {
    squares[l] += double(x[c]) * x[c];
    sum[c] += x[c];
  }
  return sum_of_lanes(squares);
}

/// out[j] = sum_c (x[c] - centres[j * n + c])^2 for j in [0, q): the squared distances of n
/// floats x to q centres of n doubles, in double, the row read once for up to four centres.
inline void squared_distances(const float* x, const double* centres, Index q, Index n, double* out) {
  constexpr Index group = 4;
  for (Index j0 = 0; j0 < q; j0 += group) {
    const Index count = std::min(group, q - j0);
    const double* centre = centres + j0 * n;
    double_lanes sums[group] = {double_lanes::Zero(), double_lanes::Zero(), double_lanes::Zero(), double_lanes::Zero()};
    Index c = 0;
    for (; c + row_lanes <= n; c += row_lanes) {
      const double_lanes v = float_lanes(x + c).cast<double>();
      for (Index j = 0; j < count; ++j) sums[j] += (v - double_lanes_map(centre + j * n + c)).square();
    }
    for (int l = 0; c < n; ++c, ++l)
      for (Index j = 0; j < count; ++j) sums[j][l] += (x[c] - centre[j * n + c]) * (x[c] - centre[j * n + c]);
    for (Index j = 0; j < count; ++j) out[j0 + j] = sum_of_lanes(sums[j]);
  }
}

/// For the centred row x - mean of n floats x, in double: its products with u and with v, and
/// its squared norm.
struct centred_products {
  double with_u = 0, with_v = 0, squares = 0;
};
inline centred_products centred_products_of(const float* x, const double* mean, const double* u, const double* v,
                                            Index n) {
  double_lanes with_u = double_lanes::Zero(), with_v = with_u, squares = with_u;
  Index c = 0;
  for (; c + row_lanes <= n; c += row_lanes) {
    const double_lanes centred = float_lanes(x + c).cast<double>() - double_lanes_map(mean + c);
    with_u += centred * double_lanes_map(u + c);
    with_v += centred * double_lanes_map(v + c);
    squares += centred.square();
  }
  for (int l = 0; c < n; ++c, ++l) {
    const double centred = x[c] - mean[c];
    with_u[l] += centred * u[c];
    with_v[l] += centred * v[c];
    squares[l] += centred * centred;
  }
  return {sum_of_lanes(with_u), sum_of_lanes(with_v), sum_of_lanes(squares)};
}

/// The median of `values` (the mean of the two middle ones for an even count), reordering
/// them; 0 when empty.
inline double median_in_place(std::vector<double>& values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  const double upper = *mid;
  if (values.size() % 2) return upper;
  return 0.5 * (*std::max_element(values.begin(), mid) + upper);
}

inline double median(std::vector<double> values) { return median_in_place(values); }

/// A robust location and spread: the median and 1.4826 times the median absolute deviation
/// (the standard deviation, were the values normal).
struct robust_spread {
  double median = 0;
  double sigma = 0;

  /// Of `values`, which it overwrites (no copy is made of them).
  static robust_spread in_place(std::vector<double>& values) {
    robust_spread s;
    s.median = median_in_place(values);
    for (double& x : values) x = std::abs(x - s.median);
    s.sigma = 1.4826 * median_in_place(values);
    return s;
  }
  static robust_spread of(std::vector<double> values) { return in_place(values); }
};

/// A number in [0, 1) from the hash of (stream, i) (clp::splitmix64): the screen's pseudo-random
/// numbers, the same on every platform.
inline double uniform(std::uint64_t stream, std::uint64_t i) {
  return double(splitmix64(splitmix64(stream) ^ i) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace clp::detail::undertrained
