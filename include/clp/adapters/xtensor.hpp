// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// clp::matrix_traits for xtensor containers: `xt::xtensor<T, 2>` and 2-D `xt::xarray<T>`, in
/// row- or column-major layout. Include this header yourself; the core never needs xtensor.
/// A layout that cannot be viewed without a copy (not 2-D, no unit stride) is a
/// clp::unsupported_layout. Works with the flat header layout of xtensor 0.24 (Debian 12) and the split layout of
/// xtensor 0.26 and later.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/adapters/xtensor_view.hpp>
#include <clp/matrix_view.hpp>

#if __has_include(<xtensor/containers/xtensor.hpp>)
#include <xtensor/containers/xarray.hpp>
#include <xtensor/containers/xtensor.hpp>
#else
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>
#endif

#include <cstddef>

namespace clp {

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
