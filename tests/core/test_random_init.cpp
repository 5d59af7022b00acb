// SPDX-License-Identifier: MIT
// clp/random_init.hpp: column statistics against the oracle on every layout, and random rows
// that depend only on (seed, row, column) and follow the statistics.

#include "fixtures.hpp"

#include <clp/random_init.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using fixtures::error_of;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_random_init {
namespace {

constexpr double sentinel = 999.0;

/// Per-column mean and population standard deviation in double, from the definition.
clp::column_statistics oracle_statistics(const oracle::matrix& m) {
  oracle::column_moments s = oracle::moments_of(m);
  return {std::move(s.mean), std::move(s.stddev)};
}

/// Statistics with a large mean in some columns (cancellation) and a zero deviation in one.
clp::column_statistics some_statistics() {
  return {{0.0, 1.5, -2.0, 1000.0, 0.25, -0.5, 3.0}, {1.0, 0.5, 2.0, 0.01, 0.0, 0.125, 4.0}};
}

}  // namespace

TEST_CASE_TEMPLATE("column_statistics_of: the oracle's mean and standard deviation, on this layout", L,
                   CLP_TEST_LAYOUTS) {
  // Columns with a large common offset: a one-pass variance would cancel badly here.
  oracle::matrix m = oracle::random_embeddings(301, 9, 0.0, 111);
  for (clp::Index r = 0; r < m.rows; ++r) m(r, 4) = double(static_cast<float>(1000 + m(r, 4) * 0.001));
  auto l = fixtures::make<L>(m);
  const auto got = clp::column_statistics_of(l.get());
  const auto want = oracle_statistics(m);
  REQUIRE(got.mean.size() == 9);
  REQUIRE(got.stddev.size() == 9);
  for (std::size_t c = 0; c < 9; ++c) {
    CHECK(got.mean[c] == doctest::Approx(want.mean[c]).epsilon(1e-12));
    CHECK(got.stddev[c] == doctest::Approx(want.stddev[c]).epsilon(1e-9));
  }
}

TEST_CASE("column_statistics_of: bfloat16 input and a matrix without rows") {
  const oracle::matrix m = fixtures::rounded<Eigen::bfloat16>(oracle::random_embeddings(50, 4, 1.0, 113));
  const auto got = clp::column_statistics_of(fixtures::make<fixtures::raw_buffer<Eigen::bfloat16>>(m).get());
  const auto want = oracle_statistics(m);
  for (std::size_t c = 0; c < 4; ++c) {
    CHECK(got.mean[c] == doctest::Approx(want.mean[c]).epsilon(1e-12));
    CHECK(got.stddev[c] == doctest::Approx(want.stddev[c]).epsilon(1e-9));
  }
  const Eigen::MatrixXf empty(0, 4);
  CHECK(error_of([&] { clp::column_statistics_of(empty); }) == "clp::column_statistics_of: 'matrix' has no rows");
}

TEST_CASE_TEMPLATE("random_rows: a value depends only on (seed, row, column), on this layout", L, CLP_TEST_LAYOUTS) {
  const auto stats = some_statistics();
  L together(40, 7, sentinel), apart(40, 7, sentinel), reordered(40, 7, sentinel), other_seed(40, 7, sentinel);
  clp::random_rows(stats, together.get(), {3, 7, 11, 39}, 2024);
  clp::random_rows(stats, apart.get(), {11}, 2024);
  clp::random_rows(stats, apart.get(), {39}, 2024);
  clp::random_rows(stats, apart.get(), {3, 7}, 2024);
  clp::random_rows(stats, reordered.get(), {39, 11, 7, 3}, 2024);
  clp::random_rows(stats, other_seed.get(), {3, 7, 11, 39}, 2025);
  const auto a = fixtures::values_of(together, 40, 7);
  CHECK(a.values == fixtures::values_of(apart, 40, 7).values);
  CHECK(a.values == fixtures::values_of(reordered, 40, 7).values);

  // Every layout and element type holds the same float32 draws: compare with a float buffer.
  std::vector<float> reference(40 * 7, float(sentinel));
  clp::random_rows(stats, clp::make_view(reference, 40, 7), {3, 7, 11, 39}, 2024);
  std::size_t differences = 0, same_as_other_seed = 0, untouched = 0;
  for (clp::Index r = 0; r < 40; ++r)
    for (clp::Index c = 0; c < 7; ++c) {
      differences +=
          a(r, c) != fixtures::to_double(fixtures::to_scalar<typename L::scalar>(reference[std::size_t(r * 7 + c)]));
      const bool drawn = r == 3 || r == 7 || r == 11 || r == 39;
      untouched += !drawn && a(r, c) == sentinel;
      same_as_other_seed += drawn && stats.stddev[std::size_t(c)] > 0 && a(r, c) == other_seed.at(r, c);
    }
  CHECK(differences == 0);
  CHECK(untouched == 36 * 7);
  CHECK(same_as_other_seed == 0);
  // A column with zero deviation is its mean.
  CHECK(a(7, 4) == 0.25);
}

TEST_CASE("random_rows: sample mean and deviation approach the statistics") {
  const auto stats = some_statistics();
  const clp::Index n = 20000;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> drawn(n, 7);
  std::vector<clp::Index> rows(static_cast<std::size_t>(n));
  for (clp::Index r = 0; r < n; ++r) rows[std::size_t(r)] = r;
  clp::random_rows(stats, drawn, rows, 7);
  const auto sample = clp::column_statistics_of(drawn);
  for (std::size_t c = 0; c < 7; ++c) {
    CAPTURE(c);
    const double sigma = stats.stddev[c];
    // Five standard errors: sigma / sqrt(n) for the mean, about sigma / sqrt(2 n) for the deviation.
    CHECK(std::abs(sample.mean[c] - stats.mean[c]) <= 5 * sigma / std::sqrt(double(n)));
    CHECK(std::abs(sample.stddev[c] - sigma) <= 5 * sigma / std::sqrt(2.0 * double(n)) + 1e-12);
  }
  // Standard normal shape: about 68.27 % within one deviation, 95.45 % within two.
  std::size_t within_one = 0, within_two = 0;
  for (clp::Index r = 0; r < n; ++r) {
    const double z = (drawn(r, 0) - stats.mean[0]) / stats.stddev[0];
    within_one += std::abs(z) < 1;
    within_two += std::abs(z) < 2;
  }
  CHECK(double(within_one) / double(n) == doctest::Approx(0.6827).epsilon(0.02));
  CHECK(double(within_two) / double(n) == doctest::Approx(0.9545).epsilon(0.01));
}

TEST_CASE("random_rows: the copy-and-draw baseline keeps the copied rows") {
  // The paper's "transfer without a helper": overlapping rows copied, the others drawn.
  const oracle::matrix m = oracle::random_embeddings(100, 6, 0.5, 127);
  const Eigen::MatrixXf source = fixtures::make<fixtures::eigen_col_major<float>>(m).m;
  const auto overlap = fixtures::spread_overlap(30, 80, 100);
  Eigen::MatrixXf output = Eigen::MatrixXf::Constant(80, 6, float(sentinel));
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i)
    output.row(overlap.target_ids[i]) = source.row(overlap.source_ids[i]);
  clp::random_rows(clp::column_statistics_of(source), output, overlap.missing_ids, 1);
  CHECK(output.allFinite());
  CHECK((output.array() != float(sentinel)).all());
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i)
    CHECK(output.row(overlap.target_ids[i]) == source.row(overlap.source_ids[i]));
}

TEST_CASE("random_rows: errors") {
  const auto stats = some_statistics();
  Eigen::MatrixXf output(10, 6);
  CHECK(error_of([&] {
          clp::random_rows(stats, output, {0}, 1);
        }).find("clp::random_rows: 'output' has 6 columns but the statistics have 7") == 0);
  Eigen::MatrixXf fits(10, 7);
  const auto outside = fixtures::thrown<clp::invalid_argument>([&] { clp::random_rows(stats, fits, {2, 10}, 1); });
  REQUIRE(outside);
  CHECK(outside->facts().context == "clp::random_rows");
  CHECK(outside->facts().argument == "rows");
  CHECK(outside->facts().row == 10);
  CHECK(outside->problem() == "is outside the 10 rows of 'output'");
  CHECK_THROWS_AS(clp::random_rows(stats, fits, {-1}, 1), clp::error);
  auto lopsided = stats;
  lopsided.stddev.pop_back();
  CHECK_THROWS_AS(clp::random_rows(lopsided, fits, {0}, 1), clp::error);
}

}  // namespace test_random_init
