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

#include <clp/error.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace clp {

/// Row and column counts, ids and strides: signed, and the same name and type as Eigen::Index.
/// Not `index`: <strings.h> declares a function of that name, which `using namespace clp;`
/// would make ambiguous.
using Index = std::ptrdiff_t;

enum class storage_order { row_major, column_major };

/// Element types the algorithms accept. Everything is computed in float32; half and bfloat16
/// are how checkpoints store embeddings, double is for callers whose data is double.
template <class T>
inline constexpr bool is_scalar_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                    std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

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
    if (rows < 0 || cols < 0)
      detail::fail("clp::matrix_view: negative shape " + std::to_string(rows) + " x " + std::to_string(cols));
    const Index inner = order == storage_order::row_major ? cols : rows;
    const Index outer = order == storage_order::row_major ? rows : cols;
    if (outer > 1 && outer_stride < inner)
      detail::fail("clp::matrix_view: outer stride " + std::to_string(outer_stride) +
                   " is smaller than the inner size " + std::to_string(inner));
    if (data == nullptr && rows * cols != 0)
      detail::fail("clp::matrix_view: null data for a " + std::to_string(rows) + " x " + std::to_string(cols) +
                   " matrix");
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

/// A std::vector holding a contiguous matrix of the given shape (row-major by default).
template <class T, class Alloc>
matrix_view<T> make_view(std::vector<T, Alloc>& v, Index rows, Index cols,
                         storage_order order = storage_order::row_major) {
  if (rows < 0 || cols < 0 || static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) != v.size())
    detail::fail("clp::make_view: std::vector of " + std::to_string(v.size()) + " elements cannot be viewed as " +
                 std::to_string(rows) + " x " + std::to_string(cols));
  return matrix_view<T>(v.data(), rows, cols, order);
}
template <class T, class Alloc>
matrix_view<const T> make_view(const std::vector<T, Alloc>& v, Index rows, Index cols,
                               storage_order order = storage_order::row_major) {
  if (rows < 0 || cols < 0 || static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) != v.size())
    detail::fail("clp::make_view: std::vector of " + std::to_string(v.size()) + " elements cannot be viewed as " +
                 std::to_string(rows) + " x " + std::to_string(cols));
  return matrix_view<const T>(v.data(), rows, cols, order);
}

}  // namespace clp
