// SPDX-License-Identifier: MIT
// clp/baselines.hpp: the copy of the overlapping rows against the oracle on every layout, and
// the paper's two random baselines: copied rows exact, drawn rows following the oracle's column
// statistics of the source, the same draws as random_rows, and every caller error.

#include "fixtures.hpp"

#include <clp/baselines.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

using fixtures::error_of;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_baselines {
namespace {

constexpr double sentinel = 999.0;

/// The drawn rows' sample moments are within five standard errors of the source's moments.
void check_drawn_moments(const oracle::matrix& got, const std::vector<clp::Index>& drawn,
                         const oracle::matrix& source) {
  const oracle::column_moments want = oracle::moments_of(source);
  const oracle::column_moments sample = oracle::moments_of(got, drawn);
  const double n = double(drawn.size());
  for (std::size_t c = 0; c < want.mean.size(); ++c) {
    CAPTURE(c);
    const double sigma = want.stddev[c];
    // float32 draws: a little slack on top of the standard errors.
    CHECK(std::abs(sample.mean[c] - want.mean[c]) <= 5 * sigma / std::sqrt(n) + 1e-5);
    CHECK(std::abs(sample.stddev[c] - sigma) <= 5 * sigma / std::sqrt(2 * n) + 1e-5);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("copy_overlap_rows: the oracle's copies, other rows untouched, on this layout", L,
                   CLP_TEST_LAYOUTS) {
  const oracle::matrix source = oracle::random_embeddings(60, 7, 0.5, 211);
  const auto overlap = fixtures::spread_overlap(15, 40, 60);
  L output(40, 7, sentinel);
  auto from = fixtures::make<L>(source);
  clp::copy_overlap_rows(from.get(), overlap, output.get());
  oracle::matrix want(40, 7, sentinel);
  oracle::copy_overlap(source, overlap.target_ids, overlap.source_ids, want);
  CHECK(fixtures::values_of(output, 40, 7).values == want.values);
}

TEST_CASE("copy_overlap_rows: an exact copy for every element type, nothing for an empty overlap") {
  const oracle::matrix m = fixtures::rounded<Eigen::bfloat16>(oracle::random_embeddings(30, 5, 0.5, 212));
  auto source = fixtures::make<fixtures::raw_buffer<Eigen::bfloat16>>(m);
  fixtures::eigen_row_major<Eigen::bfloat16> output(20, 5, sentinel);
  const auto overlap = fixtures::spread_overlap(8, 20, 30);
  clp::copy_overlap_rows(source.get(), overlap, output.get());
  oracle::matrix want(20, 5, fixtures::to_double(fixtures::to_scalar<Eigen::bfloat16>(sentinel)));
  oracle::copy_overlap(m, overlap.target_ids, overlap.source_ids, want);
  CHECK(fixtures::values_of(output, 20, 5).values == want.values);

  Eigen::MatrixXf untouched = Eigen::MatrixXf::Constant(20, 5, float(sentinel));
  clp::copy_overlap_rows(Eigen::MatrixXf(m.rows, m.cols), clp::vocabulary_overlap{}, untouched);
  CHECK((untouched.array() == float(sentinel)).all());
}

TEST_CASE("copy_overlap_rows: errors name the argument") {
  const Eigen::MatrixXf source = Eigen::MatrixXf::Ones(30, 5);
  Eigen::MatrixXf output(20, 5), narrow(20, 4);
  const auto overlap = fixtures::spread_overlap(8, 20, 30);
  CHECK(error_of([&] { clp::copy_overlap_rows(source, overlap, narrow); }) ==
        "clp::copy_overlap_rows: 'output' has 4 columns but 'source' has 5");
  const auto few_sources =
      fixtures::thrown<clp::invalid_argument>([&] { clp::copy_overlap_rows(source.topRows(10), overlap, output); });
  REQUIRE(few_sources);
  CHECK(few_sources->facts().context == "clp::copy_overlap_rows");
  CHECK(few_sources->facts().argument == "overlap source");
  CHECK(few_sources->facts().row >= 10);
  CHECK(few_sources->problem() == "is outside the 10 rows of 'source'");
  const auto few_targets =
      fixtures::thrown<clp::invalid_argument>([&] { clp::copy_overlap_rows(source, overlap, output.topRows(10)); });
  REQUIRE(few_targets);
  CHECK(few_targets->facts().argument == "overlap target");
  CHECK(few_targets->facts().row >= 10);
  auto lopsided = overlap;
  lopsided.source_ids.pop_back();
  CHECK(error_of([&] { clp::copy_overlap_rows(source, lopsided, output); }) ==
        "clp::copy_overlap_rows: 'overlap' has 8 target ids but 7 source ids");
}

TEST_CASE_TEMPLATE("overlap_random: overlap copied, missing rows drawn from the source's columns, on this layout", L,
                   CLP_TEST_LAYOUTS) {
  const oracle::matrix source = oracle::random_embeddings(300, 6, 0.5, 213);
  const auto overlap = fixtures::spread_overlap(100, 3000, 300);
  auto from = fixtures::make<L>(source);
  L output(3000, 6, sentinel), again(3000, 6, sentinel), other_seed(3000, 6, sentinel);
  clp::overlap_random(from.get(), overlap, output.get(), 42);
  clp::overlap_random(from.get(), overlap, again.get(), 42);
  clp::overlap_random(from.get(), overlap, other_seed.get(), 43);
  const oracle::matrix got = fixtures::values_of(output, 3000, 6);

  // Overlapping rows: the oracle's copies.
  oracle::matrix copies = got;
  oracle::copy_overlap(source, overlap.target_ids, overlap.source_ids, copies);
  CHECK(got.values == copies.values);
  // Missing rows: the draws of random_rows from the source's statistics, and they follow them.
  L drawn(3000, 6, sentinel);
  clp::copy_overlap_rows(from.get(), overlap, drawn.get());
  clp::random_rows(clp::column_statistics_of(from.get()), drawn.get(), overlap.missing_ids, 42);
  CHECK(got.values == fixtures::values_of(drawn, 3000, 6).values);
  check_drawn_moments(got, overlap.missing_ids, source);
  CHECK(got.values == fixtures::values_of(again, 3000, 6).values);
  CHECK(got.values != fixtures::values_of(other_seed, 3000, 6).values);
}

TEST_CASE("overlap_random: errors name the argument") {
  const Eigen::MatrixXf source = Eigen::MatrixXf::Ones(30, 5);
  Eigen::MatrixXf output(20, 5), narrow(20, 4);
  const auto overlap = fixtures::spread_overlap(8, 20, 30);
  CHECK(error_of([&] { clp::overlap_random(source, overlap, narrow, 1); }) ==
        "clp::overlap_random: 'output' has 4 columns but 'source' has 5");
  auto far = overlap;
  far.missing_ids.push_back(20);
  CHECK(error_of([&] { clp::overlap_random(source, far, output, 1); }) ==
        "clp::overlap_random: 'missing target' row 20 is outside the 20 rows of 'output'");
}

TEST_CASE_TEMPLATE("random_init: every row drawn from the source's columns, on this layout", L, CLP_TEST_LAYOUTS) {
  const oracle::matrix source = oracle::random_embeddings(200, 5, 1.0, 214);
  auto from = fixtures::make<L>(source);
  L output(2500, 5, sentinel), drawn(2500, 5, sentinel);
  clp::random_init(from.get(), output.get(), 7);
  std::vector<clp::Index> all(2500);
  std::iota(all.begin(), all.end(), clp::Index(0));
  clp::random_rows(clp::column_statistics_of(from.get()), drawn.get(), all, 7);
  const oracle::matrix got = fixtures::values_of(output, 2500, 5);
  CHECK(got.values == fixtures::values_of(drawn, 2500, 5).values);
  check_drawn_moments(got, all, source);
}

TEST_CASE("random_init: errors name the argument") {
  const Eigen::MatrixXf source = Eigen::MatrixXf::Ones(30, 5), empty(0, 5);
  Eigen::MatrixXf output(20, 5), narrow(20, 4);
  CHECK(error_of([&] { clp::random_init(source, narrow, 1); }) ==
        "clp::random_init: 'output' has 4 columns but 'source' has 5");
  CHECK(error_of([&] { clp::random_init(empty, output, 1); }) == "clp::random_init: 'source' has no rows");
  const auto no_rows = fixtures::thrown<clp::invalid_argument>([&] { clp::overlap_random(empty, {}, output, 1); });
  REQUIRE(no_rows);
  CHECK(no_rows->facts().context == "clp::overlap_random");
  CHECK(no_rows->facts().argument == "source");
}

TEST_CASE("the baselines take views whose element type is a run-time value") {
  const Eigen::MatrixXf source =
      fixtures::make<fixtures::eigen_col_major<float>>(oracle::random_embeddings(30, 5, 1.0, 215)).m;
  const auto overlap = fixtures::spread_overlap(8, 20, 30);
  const clp::matrix_view<const void> in = clp::make_view(source);
  Eigen::MatrixXd typed = Eigen::MatrixXd::Constant(20, 5, sentinel), untyped = typed;
  const clp::matrix_view<void> out = clp::make_view(untyped);
  clp::copy_overlap_rows(source, overlap, typed);
  clp::copy_overlap_rows(in, overlap, out);
  CHECK(typed == untyped);
  clp::overlap_random(source, overlap, typed, 3);
  clp::overlap_random(in, overlap, out, 3);
  CHECK(typed == untyped);
  clp::random_init(source, typed, 4);
  clp::random_init(in, out, 4);
  CHECK(typed == untyped);
}

}  // namespace test_baselines
