// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Non-owning views of dense matrices: how any caller's matrix reaches the algorithms.
///
/// The algorithms never take Eigen, xtensor or any other container type directly. They take
/// anything `clp::make_view` understands, which is anything with a `clp::matrix_traits`
/// specialization: a pointer, rows, cols, outer stride and storage order. Ready
/// specializations: `clp::matrix_view` itself (raw buffers), Eigen dense objects with direct
/// access (`<clp/adapters/eigen.hpp>`, included by `<clp/clp.hpp>`) and xtensor containers
/// (`<clp/adapters/xtensor.hpp>`, include it yourself). A layout that is not a strided 2-D
/// array (an expression, an inner stride other than one) is rejected at compile or run time,
/// never copied behind the caller's back.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/element_type.hpp>
#include <clp/error.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace clp {

/// How a strided matrix lies in memory: each row contiguous (row-major) or each column.
enum class storage_order { row_major, column_major };

}  // namespace clp

// The untyped views and the shape checks of every view, which read storage_order.
#include <clp/detail/matrices/untyped_view.hpp>

namespace clp {

/// A strided 2-D view of caller-owned memory: element (r, c) lives at
/// `data[r * outer_stride + c]` (row-major) or `data[c * outer_stride + r]` (column-major).
/// T may be const. This is also the raw-buffer entry point:
///     clp::matrix_view<const float> helper(ptr, rows, cols, ld, clp::storage_order::row_major);
template <class T>
class matrix_view {
  static_assert(is_scalar_v<std::remove_const_t<T>>,
                "clp::matrix_view: element type must be float, double, Eigen::half or Eigen::bfloat16");

 public:
  using value_type = std::remove_const_t<T>;
  using element_type = T;

  matrix_view() = default;

  /// @param data          first element; may be null only when rows * cols == 0
  /// @param rows, cols    shape, both >= 0
  /// @param outer_stride  elements between consecutive rows (row-major) or columns
  ///                      (column-major); at least cols (resp. rows) unless there is at most
  ///                      one row (resp. column)
  /// @param order         storage order of the buffer
  matrix_view(T* data, Index rows, Index cols, Index outer_stride, storage_order order)
      : data_(data), rows_(rows), cols_(cols), outer_stride_(outer_stride), order_(order) {
    detail::check_view_shape(data == nullptr, rows, cols, outer_stride, order);
  }

  /// A contiguous buffer: the outer stride is the inner size.
  matrix_view(T* data, Index rows, Index cols, storage_order order = storage_order::row_major)
      : matrix_view(data, rows, cols, order == storage_order::row_major ? cols : rows, order) {}

  /// A mutable view converts to a read-only one.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  matrix_view(const matrix_view<U>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()),
        rows_(other.rows()),
        cols_(other.cols()),
        outer_stride_(other.outer_stride()),
        order_(other.order()) {}

  T* data() const { return data_; }
  Index rows() const { return rows_; }
  Index cols() const { return cols_; }
  Index outer_stride() const { return outer_stride_; }
  storage_order order() const { return order_; }
  /// Elements between (r, c) and (r + 1, c), and between (r, c) and (r, c + 1).
  Index row_stride() const { return order_ == storage_order::row_major ? outer_stride_ : 1; }
  Index col_stride() const { return order_ == storage_order::row_major ? 1 : outer_stride_; }

  T& operator()(Index r, Index c) const { return data_[r * row_stride() + c * col_stride()]; }

 private:
  T* data_ = nullptr;
  Index rows_ = 0;
  Index cols_ = 0;
  Index outer_stride_ = 0;
  storage_order order_ = storage_order::row_major;
};

/// A read-only view whose element type is known only at run time: a checkpoint's tensor, a
/// torch::Tensor. Every algorithm takes it like a typed view; the engine reads (and converts)
/// its elements by their run-time type, so one compiled engine serves every type.
///     clp::matrix_view<const void> v(ptr, clp::element_type::bfloat16, rows, cols, ld,
///                                    clp::storage_order::row_major);
/// A typed view converts to it; `as<T>()` and `clp::visit` go back to the typed view.
template <>
class matrix_view<const void> : public detail::untyped_view<const void> {
 public:
  using detail::untyped_view<const void>::untyped_view;
  matrix_view() = default;
  /// Any typed view, read-only or not.
  template <class T, class = std::enable_if_t<is_scalar_v<std::remove_const_t<T>>>>
  matrix_view(const matrix_view<T>& v)  // NOLINT(google-explicit-constructor)
      : untyped_view(v.data(), element_type_of<T>(), v.rows(), v.cols(), v.outer_stride(), v.order()) {}

  /// The typed view; T (const or not) must be the element type.
  /// @throws clp::invalid_argument when it is not
  template <class T>
  matrix_view<const T> as() const;
};

/// A writable view whose element type is known only at run time (an output); see
/// matrix_view<const void>.
template <>
class matrix_view<void> : public detail::untyped_view<void> {
 public:
  using detail::untyped_view<void>::untyped_view;
  matrix_view() = default;
  /// Any writable typed view.
  template <class T, class = std::enable_if_t<is_scalar_v<T>>>
  matrix_view(const matrix_view<T>& v)  // NOLINT(google-explicit-constructor)
      : untyped_view(v.data(), element_type_of<T>(), v.rows(), v.cols(), v.outer_stride(), v.order()) {}
  /// Read-only from here on.
  operator matrix_view<const void>() const {  // NOLINT(google-explicit-constructor)
    return {data(), type(), rows(), cols(), outer_stride(), order()};
  }

  /// The typed view; T must be the element type.
  /// @throws clp::invalid_argument when it is not
  template <class T>
  matrix_view<T> as() const;
};

namespace detail {
template <class T>
void check_element_type(element_type type) {
  if (element_type_of<T>() != type)
    throw invalid_argument(
        error_facts::in("clp::matrix_view::as"),
        std::string("the view holds ") + element_type_name(type) + ", not " + element_type_name(element_type_of<T>()));
}
}  // namespace detail

template <class T>
matrix_view<const T> matrix_view<const void>::as() const {
  detail::check_element_type<T>(type());
  return {static_cast<const std::remove_const_t<T>*>(data()), rows(), cols(), outer_stride(), order()};
}

template <class T>
matrix_view<T> matrix_view<void>::as() const {
  static_assert(!std::is_const_v<T>, "clp::matrix_view<void>::as: ask for a writable type");
  detail::check_element_type<T>(type());
  return {static_cast<T*>(data()), rows(), cols(), outer_stride(), order()};
}

/// Calls f with the typed view of `v` (matrix_view<const T> for a read-only view,
/// matrix_view<T> for a writable one), T its run-time element type; returns what f returns
/// (the same type for every T).
template <class Void, class F, class = std::enable_if_t<std::is_void_v<Void>>>
decltype(auto) visit(const matrix_view<Void>& v, F&& f) {
  return visit_element_type(v.type(), [&](auto* tag) -> decltype(auto) {
    using T = std::conditional_t<std::is_const_v<Void>, const std::remove_pointer_t<decltype(tag)>,
                                 std::remove_pointer_t<decltype(tag)>>;
    return f(matrix_view<T>(static_cast<T*>(v.data()), v.rows(), v.cols(), v.outer_stride(), v.order()));
  });
}

/// Customization point: specialize for your matrix type M, providing
///     static matrix_view<const T> view(const M&);   // read access
///     static matrix_view<T> view(M&);               // write access (for outputs)
/// The second Enable parameter allows partial specialization with SFINAE.
template <class M, class Enable = void>
struct matrix_traits;

template <class T>
struct matrix_traits<matrix_view<T>> {
  static matrix_view<T> view(const matrix_view<T>& m) { return m; }
};

/// The view of any supported matrix. A const argument gives a read-only view.
template <class M>
auto make_view(M& m) {
  return matrix_traits<std::remove_const_t<M>>::view(m);
}
template <class T>
matrix_view<T> make_view(const matrix_view<T>& m) {
  return m;
}

namespace detail {
/// The refusal of make_view for a std::vector whose size is not rows * cols.
inline void check_vector_shape(std::size_t size, Index rows, Index cols) {
  if (rows < 0 || cols < 0 || static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) != size)
    throw invalid_argument(error_facts::in("clp::make_view"), "std::vector of " + std::to_string(size) +
                                                                  " elements cannot be viewed as " +
                                                                  std::to_string(rows) + " x " + std::to_string(cols));
}
}  // namespace detail

/// A std::vector holding a contiguous matrix of the given shape (row-major by default).
/// @throws clp::invalid_argument when the vector does not hold rows * cols elements
template <class T, class Alloc>
matrix_view<T> make_view(std::vector<T, Alloc>& v, Index rows, Index cols,
                         storage_order order = storage_order::row_major) {
  detail::check_vector_shape(v.size(), rows, cols);
  return matrix_view<T>(v.data(), rows, cols, order);
}
template <class T, class Alloc>
matrix_view<const T> make_view(const std::vector<T, Alloc>& v, Index rows, Index cols,
                               storage_order order = storage_order::row_major) {
  detail::check_vector_shape(v.size(), rows, cols);
  return matrix_view<const T>(v.data(), rows, cols, order);
}

}  // namespace clp
