// SPDX-License-Identifier: MIT
// clp/adapters/eigen.hpp and clp/adapters/xtensor.hpp: what make_view sees in each Eigen and
// xtensor object, the layouts it refuses, and the test layouts themselves.

#include "fixtures.hpp"

#include <clp/adapters/eigen.hpp>
#include <clp/adapters/xtensor.hpp>
#include <clp/synthesize.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <string>
#include <type_traits>

using clp::storage_order;
using fixtures::error_of;

namespace {

template <class View>
void check_view(const View& v, const void* data, clp::Index rows, clp::Index cols, clp::Index outer_stride,
                storage_order order) {
  CHECK(static_cast<const void*>(v.data()) == data);
  CHECK(v.rows() == rows);
  CHECK(v.cols() == cols);
  CHECK(v.outer_stride() == outer_stride);
  CHECK(v.order() == order);
}

}  // namespace

TEST_CASE_TEMPLATE("test layouts: each one's view reads the values it was built from", L, CLP_TEST_LAYOUTS,
                   CLP_TEST_BF16_LAYOUTS) {
  const oracle::matrix m = oracle::random_embeddings(13, 6, 0.5, 131);
  auto l = fixtures::make<L>(m);
  auto object = l.get();  // a block is a temporary; make_view takes lvalues
  const auto v = clp::make_view(object);
  REQUIRE(v.rows() == 13);
  REQUIRE(v.cols() == 6);
  std::size_t differences = 0;
  for (clp::Index r = 0; r < 13; ++r)
    for (clp::Index c = 0; c < 6; ++c)
      differences +=
          fixtures::to_double(v(r, c)) != fixtures::to_double(fixtures::to_scalar<typename L::scalar>(m(r, c)));
  CHECK(differences == 0);
}

TEST_CASE("Eigen adapter: matrices, maps, blocks, refs and arrays, in both storage orders") {
  Eigen::MatrixXf col(5, 4);
  check_view(clp::make_view(col), col.data(), 5, 4, 5, storage_order::column_major);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row(5, 4);
  check_view(clp::make_view(row), row.data(), 5, 4, 4, storage_order::row_major);

  // Blocks keep the parent's outer stride.
  auto col_block = col.block(1, 2, 3, 2);
  check_view(clp::make_view(col_block), &col(1, 2), 3, 2, 5, storage_order::column_major);
  auto row_block = row.block(1, 2, 3, 2);
  check_view(clp::make_view(row_block), &row(1, 2), 3, 2, 4, storage_order::row_major);
  auto middle_rows = row.middleRows(2, 2);
  check_view(clp::make_view(middle_rows), &row(2, 0), 2, 4, 4, storage_order::row_major);
  auto one_column = col.col(3);
  const auto column_view = clp::make_view(one_column);
  CHECK(column_view.rows() == 5);
  CHECK(column_view.cols() == 1);
  CHECK(&column_view(4, 0) == &col(4, 3));

  // Maps, with and without an outer stride.
  float buffer[40] = {};
  Eigen::Map<Eigen::MatrixXf> map(buffer, 4, 5);
  check_view(clp::make_view(map), buffer, 4, 5, 4, storage_order::column_major);
  Eigen::Map<Eigen::MatrixXf, 0, Eigen::OuterStride<>> strided(buffer, 3, 5, Eigen::OuterStride<>(7));
  check_view(clp::make_view(strided), buffer, 3, 5, 7, storage_order::column_major);
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>
      const_rows(buffer, 3, 5, Eigen::OuterStride<>(8));
  const auto const_view = clp::make_view(const_rows);
  static_assert(std::is_same_v<decltype(const_view), const clp::matrix_view<const float>>);
  check_view(const_view, buffer, 3, 5, 8, storage_order::row_major);

  // Ref, Array, fixed sizes, and const objects giving read-only views.
  Eigen::Ref<Eigen::MatrixXf> ref = col_block;
  check_view(clp::make_view(ref), &col(1, 2), 3, 2, 5, storage_order::column_major);
  Eigen::ArrayXXf array(3, 3);
  check_view(clp::make_view(array), array.data(), 3, 3, 3, storage_order::column_major);
  Eigen::Matrix<float, 3, 2, Eigen::RowMajor> fixed;
  check_view(clp::make_view(fixed), fixed.data(), 3, 2, 2, storage_order::row_major);
  const Eigen::MatrixXf& constant = col;
  static_assert(std::is_same_v<decltype(clp::make_view(constant)), clp::matrix_view<const float>>);
  static_assert(std::is_same_v<decltype(clp::make_view(col)), clp::matrix_view<float>>);

  // Half and bfloat16 matrices.
  Eigen::Matrix<Eigen::half, Eigen::Dynamic, Eigen::Dynamic> half(2, 3);
  static_assert(std::is_same_v<decltype(clp::make_view(half)), clp::matrix_view<Eigen::half>>);
  Eigen::Matrix<Eigen::bfloat16, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> bf16(2, 3);
  check_view(clp::make_view(bf16), bf16.data(), 2, 3, 3, storage_order::row_major);
}

TEST_CASE("Eigen adapter: an inner stride other than one is a clp::unsupported_layout, not a copy") {
  float buffer[256] = {};
  using strided_map = Eigen::Map<Eigen::MatrixXf, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  strided_map every_other(buffer, 4, 4, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(8, 2));
  const std::string message = error_of([&] { clp::make_view(every_other); });
  CHECK(message == "clp::make_view: an Eigen object with inner stride 2 cannot be viewed without a copy");
  const auto layout = fixtures::thrown<clp::unsupported_layout>([&] { clp::make_view(every_other); });
  REQUIRE(layout);
  CHECK(layout->kind() == clp::error_kind::unsupported_layout);
  CHECK(layout->facts().context == "clp::make_view");

  // A row of a column-major matrix: its elements are an outer stride apart.
  Eigen::MatrixXf col(5, 4);
  auto row = col.row(1);
  CHECK(error_of([&] { clp::make_view(row); }).find("inner stride 5") != std::string::npos);

  // Handed to an algorithm, as any argument: the same error, nothing written.
  const oracle::matrix m = oracle::random_embeddings(16, 4, 1.0, 137);
  const Eigen::MatrixXf helper = fixtures::make<fixtures::eigen_col_major<float>>(m).m;
  const auto overlap = fixtures::make_overlap({0, 5, 9}, {0, 1, 2}, 16, 4);
  Eigen::MatrixXf source = Eigen::MatrixXf::Ones(4, 4);
  Eigen::MatrixXf output = Eigen::MatrixXf::Zero(16, 4);
  const strided_map strided_source(buffer, 4, 4, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(8, 2));
  CHECK_THROWS_AS(clp::synthesize_rows(strided_source, helper, overlap, output), clp::unsupported_layout);
  strided_map strided_output(buffer, 16, 4, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(1, 16));
  CHECK_THROWS_AS(clp::synthesize_rows(source, helper, overlap, strided_output), clp::unsupported_layout);
  CHECK((output.array() == 0).all());
}

TEST_CASE("xtensor adapter: xtensor and xarray, row- and column-major, degenerate shapes") {
  xt::xtensor<float, 2> row_major(std::array<std::size_t, 2>{3, 4});
  check_view(clp::make_view(row_major), row_major.data(), 3, 4, 4, storage_order::row_major);
  xt::xtensor<double, 2, xt::layout_type::column_major> col_major(std::array<std::size_t, 2>{3, 4});
  check_view(clp::make_view(col_major), col_major.data(), 3, 4, 3, storage_order::column_major);
  xt::xarray<float> array(std::vector<std::size_t>{5, 2});
  check_view(clp::make_view(array), array.data(), 5, 2, 2, storage_order::row_major);
  xt::xarray<float, xt::layout_type::column_major> col_array(std::vector<std::size_t>{5, 2});
  check_view(clp::make_view(col_array), col_array.data(), 5, 2, 5, storage_order::column_major);

  // xtensor gives extent-1 dimensions a stride of 0; the view still addresses every element.
  xt::xtensor<float, 2> one_row(std::array<std::size_t, 2>{1, 6});
  const auto row_view = clp::make_view(one_row);
  CHECK(row_view.rows() == 1);
  CHECK(&row_view(0, 5) == &one_row(0, 5));
  xt::xtensor<float, 2, xt::layout_type::column_major> one_column(std::array<std::size_t, 2>{6, 1});
  const auto column_view = clp::make_view(one_column);
  CHECK(&column_view(5, 0) == &one_column(5, 0));
  xt::xtensor<float, 2> single(std::array<std::size_t, 2>{1, 1});
  CHECK(clp::make_view(single).data() == single.data());

  // Read-only views of const containers.
  const xt::xtensor<float, 2>& constant = row_major;
  static_assert(std::is_same_v<decltype(clp::make_view(constant)), clp::matrix_view<const float>>);

  // An xarray that is not a matrix.
  xt::xarray<float> cube(std::vector<std::size_t>{2, 3, 4});
  const auto cube_layout = fixtures::thrown<clp::unsupported_layout>([&] { clp::make_view(cube); });
  REQUIRE(cube_layout);
  CHECK(cube_layout->problem() == "an xtensor container of dimension 3 is not a matrix");
}

TEST_CASE("every layout mixes with every other in one call") {
  // Helper in xtensor, source in a raw bfloat16 buffer, output in an Eigen block of doubles.
  const oracle::matrix helper_values = oracle::random_embeddings(120, 16, 1.0, 139);
  const oracle::matrix source_values = fixtures::rounded<Eigen::bfloat16>(oracle::random_embeddings(90, 10, 0.5, 140));
  const auto overlap = fixtures::spread_overlap(40, 120, 90);
  auto helper = fixtures::make<fixtures::xtensor_matrix<float>>(helper_values);
  auto source = fixtures::make<fixtures::raw_buffer<Eigen::bfloat16>>(source_values);
  fixtures::eigen_block<double> output(120, 10, 0.0);
  clp::synthesize_rows(source.get(), helper.get(), overlap, output.get(), clp::sparsemax_weights{});
  CHECK(output.border_intact());
  const auto want = oracle::synthesize(helper_values, overlap.target_ids, overlap.source_ids, overlap.missing_ids,
                                       source_values, oracle::policy{oracle::kind::sparsemax});
  std::vector<clp::Index> all(120);
  for (clp::Index t = 0; t < 120; ++t) all[std::size_t(t)] = t;
  CHECK(fixtures::max_relative_row_error(fixtures::values_of(output, 120, 10), want.output, all) <= 1e-5);
}
