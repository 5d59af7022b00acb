// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The element types the library reads and writes, as compile-time types and as a run-time
/// value (a checkpoint's dtype, a torch::Tensor's), and their conversion to and from float32,
/// the one type every kernel computes in. The conversions are public because every caller that
/// moves embeddings between storage types needs them and gets them wrong the same two ways:
/// one element at a time through Eigen's scalar conversion (at a real size that was 7% of a
/// whole transfer for bfloat16), or rounding that differs from the library's.

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace clp {

/// Row and column counts, ids and strides: signed, and the same name and type as Eigen::Index.
/// Not `index`: <strings.h> declares a function of that name, which `using namespace clp;`
/// would make ambiguous.
using Index = std::ptrdiff_t;

/// Element types the algorithms accept. Everything is computed in float32; half and bfloat16
/// are how checkpoints store embeddings, double is for callers whose data is double.
template <class T>
inline constexpr bool is_scalar_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                    std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

/// The element types of is_scalar_v as a run-time value: the element type of a
/// matrix_view<const void> (a view whose type is known only at run time, as a checkpoint's
/// dtype or a torch::Tensor's is).
enum class element_type { float32, float64, float16, bfloat16 };

/// The element_type of T (float, double, Eigen::half or Eigen::bfloat16, const or not).
template <class T>
constexpr element_type element_type_of() {
  using U = std::remove_const_t<T>;
  static_assert(is_scalar_v<U>, "clp::element_type_of: T must be float, double, Eigen::half or Eigen::bfloat16");
  if constexpr (std::is_same_v<U, float>)
    return element_type::float32;
  else if constexpr (std::is_same_v<U, double>)
    return element_type::float64;
  else if constexpr (std::is_same_v<U, Eigen::half>)
    return element_type::float16;
  else
    return element_type::bfloat16;
}

/// "float32", "float64", "float16" or "bfloat16".
constexpr const char* element_type_name(element_type type) {
  switch (type) {
    case element_type::float32:
      return "float32";
    case element_type::float64:
      return "float64";
    case element_type::float16:
      return "float16";
    case element_type::bfloat16:
      break;
  }
  return "bfloat16";
}

/// Bytes per element: 4, 8, 2 or 2.
constexpr std::size_t element_size(element_type type) {
  return type == element_type::float64 ? 8 : type == element_type::float32 ? 4 : 2;
}

/// Calls f with a null pointer of the element type `type` names (float*, double*,
/// Eigen::half*, Eigen::bfloat16*) and returns what f returns (the same type for every
/// pointer type): the one switch on a run-time element type, under clp::visit and the kernels'
/// row loaders.
template <class F>
decltype(auto) visit_element_type(element_type type, F&& f) {
  switch (type) {
    case element_type::float32:
      return f(static_cast<float*>(nullptr));
    case element_type::float64:
      return f(static_cast<double*>(nullptr));
    case element_type::float16:
      return f(static_cast<Eigen::half*>(nullptr));
    case element_type::bfloat16:
      break;
  }
  return f(static_cast<Eigen::bfloat16*>(nullptr));
}

/// dst[i] = float(src[i]) for n contiguous elements: exact for float, half and bfloat16, a
/// double rounded to nearest. bfloat16 is widened on its raw bits (the 16 bits shifted up), a
/// loop the compiler vectorises.
/// @param[in]  src  n elements of T (float, double, Eigen::half or Eigen::bfloat16)
/// @param[in]  n    element count, >= 0
/// @param[out] dst  n floats; must not overlap src
template <class T>
void to_float32(const T* src, Index n, float* dst) {
  static_assert(is_scalar_v<T>, "clp::to_float32: T must be float, double, Eigen::half or Eigen::bfloat16");
  if constexpr (std::is_same_v<T, float>) {
    if (n > 0) std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(n));
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    for (Index i = 0; i < n; ++i) {
      const std::uint32_t bits = std::uint32_t{src[i].value} << 16;
      std::memcpy(dst + i, &bits, sizeof(float));
    }
  } else {
    for (Index i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

/// dst[i] = T(src[i]) for n contiguous floats: bit for bit Eigen's conversion (half and
/// bfloat16 rounded to nearest even, a NaN to the quiet NaN of its sign). bfloat16 is rounded
/// on the raw bits, a loop the compiler vectorises.
/// @param[in]  src  n floats
/// @param[in]  n    element count, >= 0
/// @param[out] dst  n elements of T; must not overlap src
template <class T>
void from_float32(const float* src, Index n, T* dst) {
  static_assert(is_scalar_v<T>, "clp::from_float32: T must be float, double, Eigen::half or Eigen::bfloat16");
  if constexpr (std::is_same_v<T, float>) {
    if (n > 0) std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(n));
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    for (Index i = 0; i < n; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, src + i, sizeof(float));
      const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
      const std::uint32_t quiet_nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
      dst[i].value = static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
    }
  } else {
    for (Index i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  }
}

}  // namespace clp
