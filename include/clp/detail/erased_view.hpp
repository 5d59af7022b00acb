// SPDX-License-Identifier: MIT
#pragma once

// Transitional: used by examples/clp-transfer until it moves to the public API; removed after
// the merge. Nothing in the library includes this header or uses its names. The program
// includes it directly (hence no internal-header check here, and the marker below, which lets
// its direct include of <clp/detail/scratch_buffer.hpp> through). Each name has a public
// successor:
//   scalar_kind, kind_of<T>()        -> clp::element_type, clp::element_type_of<T>()
//   input_view / output_view         -> clp::matrix_view<const void> / clp::matrix_view<void>
//   visit_kind(view, f)              -> clp::visit(view, f), clp::visit_element_type(type, f)
//   first_non_finite(data, n)        -> clp::find_non_finite(view, rows, threads)
//   parallel_for, resolve_threads    -> clp::parallel_for, clp::resolve_threads (<clp/parallel.hpp>)
// The program also uses two of the library's own internals, which stay internal: the scratch
// buffer (detail/scratch_buffer.hpp) and splitmix64 (random_init.hpp). It should hold its own.
#define CLP_PUBLIC_HEADER_INCLUDED

#include <clp/element_type.hpp>
#include <clp/finite.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>

#include <type_traits>
#include <utility>

namespace clp::detail {

// Transitional: used by examples/clp-transfer until it moves to the public API; removed after
// the merge.
enum class scalar_kind { f32, f64, f16, bf16 };

template <class T>
constexpr scalar_kind kind_of() {
  return static_cast<scalar_kind>(element_type_of<T>());
}

template <class Void>
struct basic_erased_view {
  Void* data = nullptr;
  scalar_kind kind = scalar_kind::f32;
  Index rows = 0, cols = 0, row_stride = 0, col_stride = 0;

  template <class T>
  static basic_erased_view from(const matrix_view<T>& v) {
    if constexpr (std::is_void_v<T>)
      return {v.data(), static_cast<scalar_kind>(v.type()), v.rows(), v.cols(), v.row_stride(), v.col_stride()};
    else
      return {v.data(), kind_of<std::remove_const_t<T>>(), v.rows(), v.cols(), v.row_stride(), v.col_stride()};
  }
  template <class T>
  T* typed() const {
    return static_cast<T*>(data);
  }
};
using input_view = basic_erased_view<const void>;
using output_view = basic_erased_view<void>;

template <class Void, class F>
decltype(auto) visit_kind(const basic_erased_view<Void>& v, F&& f) {
  return visit_element_type(static_cast<element_type>(v.kind), std::forward<F>(f));
}

template <class T>
Index first_non_finite(const T* data, Index n) {
  return first_non_finite_element(data, n);
}

}  // namespace clp::detail
