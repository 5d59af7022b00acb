// SPDX-License-Identifier: MIT
#pragma once

// Internal: a matrix_view with its element type turned into a run-time tag, so the engine is
// compiled once per weighting policy rather than once per combination of caller types, and
// the row loaders and storers that convert every element type to and from float32.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace clp::detail {

/// In the order of clp::element_type (float32, float64, float16, bfloat16).
enum class scalar_kind { f32, f64, f16, bf16 };

template <class T>
constexpr scalar_kind kind_of() {
  if constexpr (std::is_same_v<T, float>)
    return scalar_kind::f32;
  else if constexpr (std::is_same_v<T, double>)
    return scalar_kind::f64;
  else if constexpr (std::is_same_v<T, Eigen::half>)
    return scalar_kind::f16;
  else
    return scalar_kind::bf16;
}

template <class Void>
struct basic_erased_view {
  Void* data = nullptr;
  scalar_kind kind = scalar_kind::f32;
  Index rows = 0, cols = 0, row_stride = 0, col_stride = 0;

  template <class T>
  static basic_erased_view from(const matrix_view<T>& v) {
    if constexpr (std::is_void_v<T>) {
      static_assert(std::is_const_v<Void> || !std::is_const_v<T>, "an output needs a writable view");
      return {v.data(), static_cast<scalar_kind>(v.type()), v.rows(), v.cols(), v.row_stride(), v.col_stride()};
    } else {
      return {v.data(), kind_of<std::remove_const_t<T>>(), v.rows(), v.cols(), v.row_stride(), v.col_stride()};
    }
  }
  template <class T>
  T* typed() const {
    return static_cast<T*>(data);
  }
};
using input_view = basic_erased_view<const void>;
using output_view = basic_erased_view<void>;

/// Calls f with a typed null pointer that names the element type of v.
template <class Void, class F>
decltype(auto) visit_kind(const basic_erased_view<Void>& v, F&& f) {
  switch (v.kind) {
    case scalar_kind::f32:
      return f(static_cast<float*>(nullptr));
    case scalar_kind::f64:
      return f(static_cast<double*>(nullptr));
    case scalar_kind::f16:
      return f(static_cast<Eigen::half*>(nullptr));
    case scalar_kind::bf16:
      break;
  }
  return f(static_cast<Eigen::bfloat16*>(nullptr));
}

/// bfloat16 to float32 over n contiguous elements: exact (the 16 bits shifted up). Written on
/// the raw bits so the compiler vectorises it; Eigen's scalar conversion goes through memory
/// one element at a time (at a real size it was 7% of a whole transfer).
inline void widen_bf16(const Eigen::bfloat16* src, Index n, float* dst) {
  for (Index c = 0; c < n; ++c) {
    const std::uint32_t bits = std::uint32_t{src[c].value} << 16;
    std::memcpy(dst + c, &bits, sizeof(float));
  }
}

/// float32 to bfloat16 over n contiguous elements, rounded to nearest even, a NaN to the quiet
/// NaN of its sign: bit for bit what Eigen::bfloat16(float) gives, vectorised like widen_bf16.
inline void narrow_bf16(const float* src, Index n, Eigen::bfloat16* dst) {
  for (Index c = 0; c < n; ++c) {
    std::uint32_t bits;
    std::memcpy(&bits, src + c, sizeof(float));
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
    dst[c].value = static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
  }
}

/// dst[c] = float(v(r, c)) for every column c.
inline void load_row(const input_view& v, Index r, float* dst) {
  visit_kind(v, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* row = v.typed<const T>() + r * v.row_stride;
    const Index cs = v.col_stride;
    if (cs == 1) {
      if constexpr (std::is_same_v<T, float>)
        std::memcpy(dst, row, sizeof(float) * std::size_t(v.cols));
      else if constexpr (std::is_same_v<T, Eigen::bfloat16>)
        widen_bf16(row, v.cols, dst);
      else
        for (Index c = 0; c < v.cols; ++c) dst[c] = static_cast<float>(row[c]);
    } else {
      for (Index c = 0; c < v.cols; ++c) dst[c] = static_cast<float>(row[c * cs]);
    }
  });
}

/// Rows ids[0..n) of v, converted to float32, into the row-major n x v.cols buffer dst.
/// Column-major sources are walked column by column so each read stays inside one column.
inline void gather_rows(const input_view& v, const Index* ids, Index n, float* dst) {
  if (v.col_stride == 1 || v.cols <= 1) {
    for (Index i = 0; i < n; ++i) load_row(v, ids[i], dst + i * v.cols);
    return;
  }
  visit_kind(v, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* base = v.typed<const T>();
    for (Index c = 0; c < v.cols; ++c) {
      const T* column = base + c * v.col_stride;
      for (Index i = 0; i < n; ++i) dst[i * v.cols + c] = static_cast<float>(column[ids[i] * v.row_stride]);
    }
  });
}

/// v(r, c) = src[c], rounded to nearest even for half and bfloat16.
inline void store_row(const output_view& v, Index r, const float* src) {
  visit_kind(v, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* row = v.typed<T>() + r * v.row_stride;
    if (v.col_stride == 1) {
      if constexpr (std::is_same_v<T, float>)
        std::memcpy(row, src, sizeof(float) * std::size_t(v.cols));
      else if constexpr (std::is_same_v<T, Eigen::bfloat16>)
        narrow_bf16(src, v.cols, row);
      else
        for (Index c = 0; c < v.cols; ++c) row[c] = static_cast<T>(src[c]);
    } else {
      for (Index c = 0; c < v.cols; ++c) row[c * v.col_stride] = static_cast<T>(src[c]);
    }
  });
}

/// out(to, :) = in(from, :). Same element type: an exact copy. Otherwise through float32,
/// which holds every half and bfloat16 exactly; a double only meets float through rounding.
inline void copy_row(const input_view& in, Index from, const output_view& out, Index to, float* scratch) {
  if (in.kind == out.kind) {
    visit_kind(in, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* src = in.typed<const T>() + from * in.row_stride;
      T* dst = out.typed<T>() + to * out.row_stride;
      for (Index c = 0; c < in.cols; ++c) dst[c * out.col_stride] = src[c * in.col_stride];
    });
    return;
  }
  load_row(in, from, scratch);
  store_row(out, to, scratch);
}

/// The position of the first non-finite element of the contiguous data[0..n) (as float32: a
/// double past float's range counts), or -1. Screens with x * 0, which is 0 for every finite x
/// and NaN otherwise, added over independent lanes (vectorised, no early exit); the position
/// is looked for only when the screen fails.
template <class T>
Index first_non_finite(const T* data, Index n) {
  constexpr int lanes = 16;
  float screen[lanes] = {};
  Index i = 0;
  for (; i + lanes <= n; i += lanes)
    for (int l = 0; l < lanes; ++l) screen[l] += static_cast<float>(data[i + l]) * 0.0f;
  for (; i < n; ++i) screen[0] += static_cast<float>(data[i]) * 0.0f;
  float total = 0;
  for (float x : screen) total += x;
  if (total == 0) return -1;
  for (i = 0; i < n; ++i)
    if (!std::isfinite(static_cast<float>(data[i]))) return i;
  return -1;
}

/// The first non-finite element of row r (as float32), or -1.
inline Index first_non_finite(const input_view& v, Index r) {
  return visit_kind(v, [&](auto* tag) -> Index {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* row = v.typed<const T>() + r * v.row_stride;
    if (v.col_stride == 1) return first_non_finite(row, v.cols);
    for (Index c = 0; c < v.cols; ++c)
      if (!std::isfinite(static_cast<float>(row[c * v.col_stride]))) return c;
    return -1;
  });
}

}  // namespace clp::detail
