// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// clp::matrix_traits for Eigen: Matrix, Array, Map, Block, Ref, row- or column-major, with any
/// outer stride. Expressions (products, sums) have no memory to view and do not compile;
/// an inner stride other than one is a run-time clp::unsupported_layout, not a silent copy.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <string>
#include <type_traits>

namespace clp {

template <class M>
struct matrix_traits<M, std::enable_if_t<std::is_base_of_v<Eigen::DenseBase<M>, M>>> {
  static_assert(bool(Eigen::internal::traits<M>::Flags & Eigen::DirectAccessBit),
                "clp: this Eigen expression has no memory of its own; evaluate it into a matrix "
                "first (an explicit copy you can see)");

  template <class Dense>
  static auto view(Dense& m) {
    using element = std::remove_pointer_t<decltype(m.data())>;
    if (m.innerStride() != 1)
      throw unsupported_layout(
          error_facts::in("clp::make_view"),
          "an Eigen object with inner stride " + std::to_string(m.innerStride()) + " cannot be viewed without a copy");
    return matrix_view<element>(m.data(), m.rows(), m.cols(), m.outerStride(),
                                M::IsRowMajor ? storage_order::row_major : storage_order::column_major);
  }
};

}  // namespace clp
