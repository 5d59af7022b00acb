// SPDX-License-Identifier: MIT
// clp/matrix_view.hpp: the raw-buffer view, its checks, and make_view for std::vector.

#include "fixtures.hpp"

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

  // The kind of error, and where: a caller branches on these, not on the message.
  try {
    matrix_view<float>(nullptr, 1, 1, 1, storage_order::row_major);
    FAIL("no error");
  } catch (const clp::invalid_argument& e) {
    CHECK(e.kind() == clp::error_kind::invalid_argument);
    CHECK(e.facts().context == "clp::matrix_view");
    CHECK(e.problem() == "null data for a 1 x 1 matrix");
  }
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
  CHECK(message == "clp::make_view: std::vector of 12 elements cannot be viewed as 5 x 3");
  const auto refused = fixtures::thrown<clp::invalid_argument>([&] { clp::make_view(buffer, 5, 3); });
  REQUIRE(refused);
  CHECK(refused->kind() == clp::error_kind::invalid_argument);
  CHECK(refused->facts().context == "clp::make_view");
  CHECK_THROWS_AS(clp::make_view(constant, -3, -4), clp::error);
  CHECK_THROWS_AS(clp::make_view(buffer, 0, 12), clp::error);
}

TEST_CASE("matrix_view<const void>: a view whose element type is known at run time") {
  std::vector<Eigen::bfloat16> buffer(12);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = Eigen::bfloat16(float(i));
  const matrix_view<Eigen::bfloat16> typed(buffer.data(), 3, 4, storage_order::row_major);
  const matrix_view<const void> untyped = typed;  // a typed view converts
  CHECK(untyped.type() == clp::element_type::bfloat16);
  CHECK(untyped.rows() == 3);
  CHECK(untyped.cols() == 4);
  CHECK(untyped.as<Eigen::bfloat16>()(2, 3) == Eigen::bfloat16(11.0f));
  CHECK_THROWS_AS(untyped.as<float>(), clp::invalid_argument);

  // visit: the one dispatch on the run-time type, with the typed view.
  const float sum = clp::visit(untyped, [](auto v) {
    float total = 0;
    for (clp::Index r = 0; r < v.rows(); ++r)
      for (clp::Index c = 0; c < v.cols(); ++c) total += static_cast<float>(v(r, c));
    return total;
  });
  CHECK(sum == 66.0f);

  // A writable one is written through its typed view, and converts to a read-only one.
  std::vector<double> out(6, 0.0);
  const matrix_view<void> writable(out.data(), clp::element_type::float64, 2, 3, 2, storage_order::column_major);
  clp::visit(writable, [](auto v) { v(1, 2) = static_cast<typename decltype(v)::value_type>(5.0f); });
  CHECK(out[5] == 5.0);
  const matrix_view<const void> read_only = writable;
  CHECK(read_only.order() == storage_order::column_major);

  // The shape checks of the typed view.
  CHECK_THROWS_AS(matrix_view<const void>(nullptr, clp::element_type::float32, 2, 2, 2, storage_order::row_major),
                  clp::invalid_argument);
  CHECK_THROWS_AS(
      matrix_view<const void>(buffer.data(), clp::element_type::bfloat16, 3, 4, 3, storage_order::row_major),
      clp::invalid_argument);
}
