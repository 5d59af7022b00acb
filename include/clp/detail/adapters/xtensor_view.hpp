// SPDX-License-Identifier: MIT
#pragma once

// Internal, adapters: the strided view of an xtensor container behind the matrix_traits of
// <clp/adapters/xtensor.hpp>.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <string>

namespace clp::detail {

/// xtensor reports a stride of 0 for a dimension of extent 1, so the layout is decided by the
/// dimensions that actually have extent.
template <class Element, class Container>
matrix_view<Element> view_xtensor(Container& m) {
  if (m.dimension() != 2)
    throw unsupported_layout(error_facts::in("clp::make_view"),
                             "an xtensor container of dimension " + std::to_string(m.dimension()) + " is not a matrix");
  const auto rows = static_cast<Index>(m.shape()[0]);
  const auto cols = static_cast<Index>(m.shape()[1]);
  const auto s0 = static_cast<Index>(m.strides()[0]);
  const auto s1 = static_cast<Index>(m.strides()[1]);
  if (cols <= 1 || s1 == 1)
    return matrix_view<Element>(m.data(), rows, cols, rows <= 1 ? cols : s0, storage_order::row_major);
  if (rows <= 1 || s0 == 1)
    return matrix_view<Element>(m.data(), rows, cols, cols <= 1 ? rows : s1, storage_order::column_major);
  throw unsupported_layout(error_facts::in("clp::make_view"), "an xtensor container with strides (" +
                                                                  std::to_string(s0) + ", " + std::to_string(s1) +
                                                                  ") cannot be viewed without a copy");
}

}  // namespace clp::detail
