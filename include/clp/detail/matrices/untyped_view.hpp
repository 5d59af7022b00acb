// SPDX-License-Identifier: MIT
#pragma once

// Internal, matrices: the shape checks every view's constructor makes, and the strided view
// whose element type is a run-time value that matrix_view<const void> and matrix_view<void>
// are. Included by <clp/matrix_view.hpp> after storage_order, which both read.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>

#include <string>

namespace clp::detail {

/// The shape checks every view's constructor makes (typed or not).
inline void check_view_shape(bool null_data, Index rows, Index cols, Index outer_stride, storage_order order) {
  if (rows < 0 || cols < 0)
    throw invalid_argument(error_facts::in("clp::matrix_view"),
                           "negative shape " + std::to_string(rows) + " x " + std::to_string(cols));
  const Index inner = order == storage_order::row_major ? cols : rows;
  const Index outer = order == storage_order::row_major ? rows : cols;
  if (outer > 1 && outer_stride < inner)
    throw invalid_argument(
        error_facts::in("clp::matrix_view"),
        "outer stride " + std::to_string(outer_stride) + " is smaller than the inner size " + std::to_string(inner));
  if (null_data && rows * cols != 0)
    throw invalid_argument(error_facts::in("clp::matrix_view"),
                           "null data for a " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
}

/// A strided 2-D view whose element type is a run-time value (Void: void or const void).
template <class Void>
class untyped_view {
 public:
  untyped_view() = default;

  /// As matrix_view<T>'s constructor, with the element type given at run time.
  untyped_view(Void* data, element_type type, Index rows, Index cols, Index outer_stride, storage_order order)
      : data_(data), type_(type), rows_(rows), cols_(cols), outer_stride_(outer_stride), order_(order) {
    check_view_shape(data == nullptr, rows, cols, outer_stride, order);
  }

  Void* data() const { return data_; }
  element_type type() const { return type_; }
  Index rows() const { return rows_; }
  Index cols() const { return cols_; }
  Index outer_stride() const { return outer_stride_; }
  storage_order order() const { return order_; }
  Index row_stride() const { return order_ == storage_order::row_major ? outer_stride_ : 1; }
  Index col_stride() const { return order_ == storage_order::row_major ? 1 : outer_stride_; }

 private:
  Void* data_ = nullptr;
  element_type type_ = element_type::float32;
  Index rows_ = 0;
  Index cols_ = 0;
  Index outer_stride_ = 0;
  storage_order order_ = storage_order::row_major;
};

}  // namespace clp::detail
