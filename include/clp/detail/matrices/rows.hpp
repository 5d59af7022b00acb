// SPDX-License-Identifier: MIT
#pragma once

// Internal: the kernels' row loaders and storers. Every kernel reads its inputs and writes its
// outputs through the functions below, on views whose element type is a run-time value, so
// that each kernel is compiled once per weighting policy rather than once per combination of
// caller types; every element is converted to and from float32 here, and only here.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace clp::detail {

/// Asks for the cache lines of [p, p + bytes) to be fetched ahead of their use: rows read at
/// scattered positions (a row's neighbours, its candidates) are otherwise waited for line by
/// line. The lines go to the second-level cache, not the first (locality 2: prefetcht1 on
/// x86-64): a prefetch into L1 holds one of its few miss buffers until the line arrives, so
/// with a row's worth in flight the loads themselves queued behind them. Into L2, scattered
/// 8 KB BF16 rows were added at about twice the speed on one Zen 5 machine and at the same
/// speed on another (docs/performance.md). A hint only; nothing where the compiler has no way
/// to give it.
inline void prefetch(const void* p, std::size_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  const char* const first = static_cast<const char*>(p);
  for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(first + offset, 0, 2);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Asks for row r of v to be fetched (prefetch), where its elements are contiguous.
inline void prefetch_row(const matrix_view<const void>& v, Index r) {
  if (v.col_stride() != 1) return;
  const std::size_t size = element_size(v.type());
  prefetch(static_cast<const char*>(v.data()) + std::size_t(r * v.row_stride()) * size, std::size_t(v.cols()) * size);
}

/// dst[c] = float(v(r, c)) for every column c.
inline void load_row(const matrix_view<const void>& v, Index r, float* dst) {
  visit_element_type(v.type(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* row = static_cast<const T*>(v.data()) + r * v.row_stride();
    const Index stride = v.col_stride();
    if (stride == 1)
      to_float32(row, v.cols(), dst);
    else
      for (Index c = 0; c < v.cols(); ++c) dst[c] = static_cast<float>(row[c * stride]);
  });
}

/// out[c] += w * float(v(r, c)) for every column c, each line of row r converted as it is
/// added (no copy of the row). Where next >= 0, the same line of row `next` is asked for as each
/// line of row r is read: a caller that reads scattered rows in an order it knows (a block's
/// neighbours) keeps the memory busy with the next row while it adds this one, a line at a
/// time: asking for the whole next row at once floods the prefetch queue.
inline void add_scaled_row(const matrix_view<const void>& v, Index r, float w, float* out, Index next = -1) {
  visit_element_type(v.type(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* const base = static_cast<const T*>(v.data());
    const T* const row = base + r * v.row_stride();
    const Index d = v.cols(), stride = v.col_stride();
    if (stride != 1) {
      for (Index c = 0; c < d; ++c) out[c] += w * static_cast<float>(row[c * stride]);
      return;
    }
    constexpr Index line = Index(64 / sizeof(T));
    const T* const ahead = next >= 0 ? base + next * v.row_stride() : nullptr;
    float converted[line];
    Index c0 = 0;
    for (; c0 + line <= d; c0 += line) {
      if (ahead) prefetch(ahead + c0, 1);
      to_float32(row + c0, line, converted);
      for (Index c = 0; c < line; ++c) out[c0 + c] += w * converted[c];
    }
    to_float32(row + c0, d - c0, converted);
    for (Index c = 0; c0 + c < d; ++c) out[c0 + c] += w * converted[c];
  });
}

/// Rows ids[0..n) of v, converted to float32, into the row-major n x v.cols() buffer dst.
/// Column-major sources are walked column by column so each read stays inside one column.
inline void gather_rows(const matrix_view<const void>& v, const Index* ids, Index n, float* dst) {
  const Index cols = v.cols();
  if (v.col_stride() == 1 || cols <= 1) {
    for (Index i = 0; i < n; ++i) load_row(v, ids[i], dst + i * cols);
    return;
  }
  visit_element_type(v.type(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* base = static_cast<const T*>(v.data());
    const Index row_stride = v.row_stride(), col_stride = v.col_stride();
    for (Index c = 0; c < cols; ++c) {
      const T* column = base + c * col_stride;
      for (Index i = 0; i < n; ++i) dst[i * cols + c] = static_cast<float>(column[ids[i] * row_stride]);
    }
  });
}

/// v(r, c) = src[c], rounded to nearest even for half and bfloat16.
inline void store_row(const matrix_view<void>& v, Index r, const float* src) {
  visit_element_type(v.type(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* row = static_cast<T*>(v.data()) + r * v.row_stride();
    const Index stride = v.col_stride();
    if (stride == 1)
      from_float32(src, v.cols(), row);
    else
      for (Index c = 0; c < v.cols(); ++c) row[c * stride] = static_cast<T>(src[c]);
  });
}

/// out(to, :) = in(from, :). Same element type: an exact copy. Otherwise through float32,
/// which holds every half and bfloat16 exactly; a double only meets float through rounding.
/// @param scratch  in.cols() floats
inline void copy_row(const matrix_view<const void>& in, Index from, const matrix_view<void>& out, Index to,
                     float* scratch) {
  if (in.type() == out.type()) {
    visit_element_type(in.type(), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* src = static_cast<const T*>(in.data()) + from * in.row_stride();
      T* dst = static_cast<T*>(out.data()) + to * out.row_stride();
      const Index in_stride = in.col_stride(), out_stride = out.col_stride();
      for (Index c = 0; c < in.cols(); ++c) dst[c * out_stride] = src[c * in_stride];
    });
    return;
  }
  load_row(in, from, scratch);
  store_row(out, to, scratch);
}

}  // namespace clp::detail
