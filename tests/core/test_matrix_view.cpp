// SPDX-License-Identifier: MIT
// clp/matrix_view.hpp: the raw-buffer view, its checks, and make_view for std::vector.

#include "fixtures.hpp"

#include <clp/detail/erased_view.hpp>
#include <clp/matrix_view.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

using clp::matrix_view;
using clp::storage_order;

using fixtures::error_of;

TEST_CASE("matrix_view: element addressing in both storage orders, with an outer stride") {
  std::vector<float> buffer(40);
  std::iota(buffer.begin(), buffer.end(), 0.0f);

  const matrix_view<float> rows(buffer.data(), 3, 4, 10, storage_order::row_major);
  CHECK(rows.rows() == 3);
  CHECK(rows.cols() == 4);
  CHECK(rows.outer_stride() == 10);
  CHECK(rows.row_stride() == 10);
  CHECK(rows.col_stride() == 1);
  CHECK(rows(0, 0) == 0.0f);
  CHECK(rows(2, 3) == 23.0f);
  CHECK(rows(1, 2) == 12.0f);

  const matrix_view<float> cols(buffer.data(), 4, 3, 10, storage_order::column_major);
  CHECK(cols.row_stride() == 1);
  CHECK(cols.col_stride() == 10);
  CHECK(cols(3, 2) == 23.0f);
  CHECK(cols(2, 1) == 12.0f);

  // Writes go to the caller's memory.
  rows(2, 0) = -1.0f;
  CHECK(buffer[20] == -1.0f);
}

TEST_CASE("matrix_view: a contiguous buffer's outer stride is its inner size") {
  std::vector<double> buffer(6);
  CHECK(matrix_view<double>(buffer.data(), 2, 3).outer_stride() == 3);
  CHECK(matrix_view<double>(buffer.data(), 2, 3).order() == storage_order::row_major);
  CHECK(matrix_view<double>(buffer.data(), 2, 3, storage_order::column_major).outer_stride() == 2);
}

TEST_CASE("matrix_view: a mutable view converts to a read-only one, not the other way") {
  std::vector<float> buffer(12, 1.0f);
  const matrix_view<float> writable(buffer.data(), 3, 4, 4, storage_order::column_major);
  const matrix_view<const float> readable = writable;
  CHECK(readable.data() == buffer.data());
  CHECK(readable.rows() == 3);
  CHECK(readable.cols() == 4);
  CHECK(readable.outer_stride() == 4);
  CHECK(readable.order() == storage_order::column_major);
  static_assert(std::is_convertible_v<matrix_view<float>, matrix_view<const float>>);
  static_assert(!std::is_convertible_v<matrix_view<const float>, matrix_view<float>>);
}

TEST_CASE("matrix_view: every element type the algorithms accept") {
  static_assert(clp::is_scalar_v<float> && clp::is_scalar_v<double> && clp::is_scalar_v<Eigen::half> &&
                clp::is_scalar_v<Eigen::bfloat16>);
  static_assert(!clp::is_scalar_v<int> && !clp::is_scalar_v<long double>);
  std::vector<Eigen::bfloat16> buffer(4, Eigen::bfloat16(0.5f));
  const matrix_view<Eigen::bfloat16> view(buffer.data(), 2, 2);
  CHECK(static_cast<float>(view(1, 1)) == 0.5f);
}

TEST_CASE("matrix_view: shapes and strides it cannot describe are clp::error") {
  std::vector<float> buffer(20);
  float* p = buffer.data();
  const std::string negative = error_of([&] { matrix_view<float>(p, -1, 3, 3, storage_order::row_major); });
  CHECK(negative.find("negative shape -1 x 3") != std::string::npos);
  CHECK_THROWS_AS(matrix_view<float>(p, 2, -3, 3, storage_order::row_major), clp::error);

  const std::string stride = error_of([&] { matrix_view<float>(p, 2, 5, 4, storage_order::row_major); });
  CHECK(stride.find("outer stride 4") != std::string::npos);
  CHECK(stride.find("inner size 5") != std::string::npos);
  CHECK_THROWS_AS(matrix_view<float>(p, 5, 2, 4, storage_order::column_major), clp::error);

  const std::string null = error_of([&] { matrix_view<float>(nullptr, 2, 2, 2, storage_order::row_major); });
  CHECK(null.find("null data for a 2 x 2 matrix") != std::string::npos);

  // A clp::error is a std::invalid_argument.
  CHECK_THROWS_AS(matrix_view<float>(nullptr, 1, 1, 1, storage_order::row_major), std::invalid_argument);
}

TEST_CASE("matrix_view: single rows or columns and empty matrices need no stride") {
  std::vector<float> buffer(5);
  CHECK_NOTHROW(matrix_view<float>(buffer.data(), 1, 5, 0, storage_order::row_major));
  CHECK_NOTHROW(matrix_view<float>(buffer.data(), 5, 1, 0, storage_order::column_major));
  CHECK_NOTHROW(matrix_view<float>(nullptr, 0, 7, 7, storage_order::row_major));
  CHECK_NOTHROW(matrix_view<float>(nullptr, 3, 0, 0, storage_order::column_major));
  const matrix_view<float> empty;
  CHECK(empty.rows() == 0);
  CHECK(empty.cols() == 0);
  CHECK(empty.data() == nullptr);
}

TEST_CASE("make_view: a matrix_view is its own view") {
  std::vector<float> buffer(6);
  const matrix_view<float> v(buffer.data(), 2, 3);
  const auto same = clp::make_view(v);
  static_assert(std::is_same_v<decltype(same), const matrix_view<float>>);
  CHECK(same.data() == v.data());
  CHECK(same.rows() == 2);
}

TEST_CASE("make_view: a std::vector with a shape") {
  std::vector<float> buffer(12);
  std::iota(buffer.begin(), buffer.end(), 0.0f);
  const auto rows = clp::make_view(buffer, 3, 4);
  static_assert(std::is_same_v<decltype(rows), const matrix_view<float>>);
  CHECK(rows(2, 1) == 9.0f);
  const auto cols = clp::make_view(buffer, 3, 4, storage_order::column_major);
  CHECK(cols(2, 1) == 5.0f);

  const std::vector<float>& constant = buffer;
  const auto readable = clp::make_view(constant, 4, 3);
  static_assert(std::is_same_v<decltype(readable), const matrix_view<const float>>);
  CHECK(readable(3, 2) == 11.0f);

  const std::string message = error_of([&] { clp::make_view(buffer, 5, 3); });
  CHECK(message.find("std::vector of 12 elements cannot be viewed as 5 x 3") != std::string::npos);
  CHECK_THROWS_AS(clp::make_view(constant, -3, -4), clp::error);
  CHECK_THROWS_AS(clp::make_view(buffer, 0, 12), clp::error);
}

TEST_CASE("widen_bf16 and narrow_bf16: bit for bit Eigen's scalar conversions") {
  // Every bfloat16 pattern widens to what Eigen's conversion gives (NaNs included, by bits).
  std::vector<Eigen::bfloat16> all(65536);
  for (std::uint32_t bits = 0; bits < 65536; ++bits)
    all[bits] = Eigen::numext::bit_cast<Eigen::bfloat16>(std::uint16_t(bits));
  std::vector<float> wide(all.size());
  clp::detail::widen_bf16(all.data(), clp::Index(all.size()), wide.data());
  std::size_t widen_mismatches = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    widen_mismatches += Eigen::numext::bit_cast<std::uint32_t>(wide[i]) !=
                        Eigen::numext::bit_cast<std::uint32_t>(static_cast<float>(all[i]));
  CHECK(widen_mismatches == 0);
  // Narrowing: every upper half with lower halves at and around the rounding tie, so every
  // exponent, both signs, infinities, NaNs (quiet and signalling) and subnormals are met.
  std::vector<float> floats;
  for (std::uint32_t high = 0; high < 65536; ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      floats.push_back(Eigen::numext::bit_cast<float>((high << 16) | low));
  std::vector<Eigen::bfloat16> narrow(floats.size());
  clp::detail::narrow_bf16(floats.data(), clp::Index(floats.size()), narrow.data());
  std::size_t narrow_mismatches = 0;
  for (std::size_t i = 0; i < floats.size(); ++i)
    narrow_mismatches += narrow[i].value != Eigen::bfloat16(floats[i]).value;
  CHECK(narrow_mismatches == 0);
}
