// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// clp::matrix_traits for xtensor containers: `xt::xtensor<T, 2>` and 2-D `xt::xarray<T>`, in
/// row- or column-major layout. Include this header yourself; the core never needs xtensor.
/// A layout that cannot be viewed without a copy (not 2-D, no unit stride) is a
/// clp::unsupported_layout. Works with the flat header layout of xtensor 0.24 (Debian 12) and the split layout of
/// xtensor 0.26 and later.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#if __has_include(<xtensor/containers/xtensor.hpp>)
#include <xtensor/containers/xarray.hpp>
#include <xtensor/containers/xtensor.hpp>
#else
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>
#endif

#include <string>
#include <type_traits>

namespace clp {
namespace detail {

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

}  // namespace detail

template <class EC, std::size_t N, xt::layout_type L, class Tag>
struct matrix_traits<xt::xtensor_container<EC, N, L, Tag>> {
  static_assert(N == 2, "clp: only 2-D xtensor containers are matrices");
  using container = xt::xtensor_container<EC, N, L, Tag>;
  using T = typename container::value_type;
  static matrix_view<const T> view(const container& m) { return detail::view_xtensor<const T>(m); }
  static matrix_view<T> view(container& m) { return detail::view_xtensor<T>(m); }
};

template <class EC, xt::layout_type L, class SC, class Tag>
struct matrix_traits<xt::xarray_container<EC, L, SC, Tag>> {
  using container = xt::xarray_container<EC, L, SC, Tag>;
  using T = typename container::value_type;
  static matrix_view<const T> view(const container& m) { return detail::view_xtensor<const T>(m); }
  static matrix_view<T> view(container& m) { return detail::view_xtensor<T>(m); }
};

}  // namespace clp
