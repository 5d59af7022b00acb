// SPDX-License-Identifier: MIT
// clp/knn_overlap.hpp: the overlap against the brute-force double oracle, determinism over
// threads and tile budgets, the sampled overload, every error, and every kind of input matrix.
// (The neighbour search itself: test_nearest_neighbours.cpp.)
#include "knn_fixtures.hpp"

#include <clp/adapters/eigen.hpp>
#include <clp/adapters/xtensor.hpp>
#include <clp/knn_overlap.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace knn_fixtures;

TEST_CASE("knn_overlap matches the oracle's overlap and is identical for any threads and tile budget") {
  const row_major a = random_matrix(700, 24, 7);
  const row_major b = related_matrix(a, 40, 8);
  const oracle oa(a), ob(b);
  const clp::Index k = 10;
  clp::Index expected_total = 0, slack = 0;
  std::vector<float> expected(700);
  for (clp::Index v = 0; v < 700; ++v) {
    std::vector<clp::Index> na(oa.order[v].begin(), oa.order[v].begin() + k);
    std::vector<clp::Index> nb(ob.order[v].begin(), ob.order[v].begin() + k);
    std::sort(na.begin(), na.end());
    std::sort(nb.begin(), nb.end());
    std::vector<clp::Index> shared;
    std::set_intersection(na.begin(), na.end(), nb.begin(), nb.end(), std::back_inserter(shared));
    expected_total += clp::Index(shared.size());
    expected[v] = float(double(shared.size()) / double(k));
    slack += oa.ambiguous(v, k) || ob.ambiguous(v, k);
  }

  const clp::knn_overlap_result reference = clp::knn_overlap(a, b, clp::knn_options{k, 1, std::size_t(64) << 20});
  CHECK(reference.tokens == 700);
  CHECK(reference.k == k);
  REQUIRE(reference.per_token.size() == 700);
  clp::Index mismatches = 0;
  for (clp::Index v = 0; v < 700; ++v) mismatches += reference.per_token[v] != expected[v];
  CHECK(mismatches <= slack);
  CHECK(std::abs(reference.mean_overlap - double(expected_total) / (700.0 * k)) <= double(slack) / 700);
  // The related matrices share part of their neighbourhoods: well above chance, below 1.
  CHECK(reference.mean_overlap > 0.1);
  CHECK(reference.mean_overlap < 0.9);

  for (std::size_t tile : {std::size_t(1), std::size_t(500) << 10, std::size_t(2) << 20})
    for (int threads : {1, 2, 3}) {
      const auto r = clp::knn_overlap(a, b, clp::knn_options{k, threads, tile});
      CHECK(r.per_token == reference.per_token);
      CHECK(r.mean_overlap == reference.mean_overlap);
    }
}

TEST_CASE("identical matrices overlap fully, unrelated ones about k / (#vocab - 1)") {
  const row_major a = random_matrix(700, 24, 11);
  const auto same = clp::knn_overlap(a, a);
  CHECK(same.mean_overlap == 1.0);
  CHECK(std::all_of(same.per_token.begin(), same.per_token.end(), [](float x) { return x == 1.0f; }));
  // A copy scaled by a power of two, in column-major xtensor: the same normalised rows.
  xt::xtensor<float, 2, xt::layout_type::column_major> scaled({700, 24});
  for (clp::Index r = 0; r < 700; ++r)
    for (clp::Index c = 0; c < 24; ++c) scaled(r, c) = 4.0f * a(r, c);
  CHECK(clp::knn_overlap(a, scaled, clp::knn_options{5}).mean_overlap == 1.0);

  const row_major unrelated = random_matrix(700, 40, 12);
  const auto chance = clp::knn_overlap(a, unrelated);
  CHECK(std::abs(chance.mean_overlap - 10.0 / 699) < 0.01);
}

TEST_CASE("the sampled overload searches all rows and keeps query order") {
  const row_major a = random_matrix(700, 24, 21);
  const row_major b = related_matrix(a, 40, 22);
  const auto whole = clp::knn_overlap(a, b, clp::knn_options{7});
  const std::vector<clp::Index> queries{699, 3, 512, 511, 3, 0, 250};
  const auto sample = clp::knn_overlap(a, b, queries, clp::knn_options{7, 2, std::size_t(1)});
  CHECK(sample.tokens == 7);
  CHECK(sample.k == 7);
  double sum = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    CHECK(sample.per_token[i] == whole.per_token[queries[i]]);
    sum += whole.per_token[queries[i]] * 7.0;
  }
  CHECK(sample.mean_overlap == doctest::Approx(sum / (7.0 * 7)));
}

TEST_CASE("every caller error is a typed clp::error with its facts and a one-line message") {
  const row_major a = random_matrix(20, 4, 31);
  const row_major b = random_matrix(20, 6, 32);
  const row_major short_b = random_matrix(19, 6, 33);
  const row_major empty(0, 4), no_columns(20, 0);
  auto one_line = [](const std::string& s) { return s.find('\n') == std::string::npos; };

  std::string m = error_of([&] { clp::knn_overlap(a, short_b); });
  CHECK(m == "clp::knn_overlap: 'b' has 19 rows but 'a' has 20 (both must hold the same vocabulary)");
  m = error_of([&] { clp::knn_overlap(a, b, clp::knn_options{0}); });
  CHECK(m == "clp::knn_overlap: 'k' must be at least 1, got 0");
  const auto too_many = thrown<clp::invalid_argument>([&] { clp::knn_overlap(a, b, clp::knn_options{20}); });
  REQUIRE(too_many);
  CHECK(too_many->facts().context == "clp::knn_overlap");
  CHECK(too_many->facts().argument == "k");
  CHECK(too_many->problem() == "is 20 but must be smaller than the 20 rows (a token is not its own neighbour)");
  CHECK(clp::knn_overlap(a, b, clp::knn_options{19}).mean_overlap == 1.0);  // k = #vocab - 1: everyone
  m = error_of([&] { clp::knn_overlap(empty, empty); });
  CHECK(m == "clp::knn_overlap: 'a' is empty (0 x 4)");
  m = error_of([&] { clp::knn_overlap(a, no_columns); });
  CHECK(m == "clp::knn_overlap: 'b' is empty (20 x 0)");
  m = error_of([&] { clp::knn_overlap(a, b, std::vector<clp::Index>{3, 20}); });
  CHECK(m == "clp::knn_overlap: 'queries' id 20 at position 1 is outside the 20 rows");
  const auto negative = thrown<clp::invalid_argument>([&] { clp::knn_overlap(a, b, std::vector<clp::Index>{-1}); });
  REQUIRE(negative);
  CHECK(negative->facts().argument == "queries");
  CHECK(negative->problem() == "id -1 at position 0 is outside the 20 rows");
  m = error_of([&] { clp::knn_overlap(a, b, std::vector<clp::Index>{}); });
  CHECK(m == "clp::knn_overlap: 'queries' is empty");
  row_major bad = b;
  bad(13, 5) = std::nanf("");
  m = error_of([&] { clp::knn_overlap(a, bad); });
  CHECK(m == "clp::knn_overlap: 'b' row 13 column 5 is NaN or infinite");
  bad = a;
  bad(2, 1) = std::numeric_limits<float>::infinity();
  const auto infinite = thrown<clp::non_finite_input>(
      [&] { clp::knn_overlap(bad, b, std::vector<clp::Index>{0}); });  // a non-query row counts too
  REQUIRE(infinite);
  CHECK(infinite->facts().argument == "a");
  CHECK(infinite->facts().row == 2);
  CHECK(infinite->facts().column == 1);
  CHECK(one_line(infinite->what()));
}

TEST_CASE("Eigen, xtensor and raw buffers of every element type give the same result") {
  const row_major a = random_matrix(300, 24, 41);
  const row_major b = related_matrix(a, 40, 42);
  const clp::knn_options options{6, 2, std::size_t(200) << 10};
  const auto reference = clp::knn_overlap(a, b, options);

  const Eigen::MatrixXf a_column_major = a;
  const Eigen::MatrixXd b_double = b.cast<double>();
  CHECK(clp::knn_overlap(a_column_major, b_double, options).per_token == reference.per_token);

  xt::xtensor<float, 2> a_xt({300, 24});
  xt::xarray<double, xt::layout_type::column_major> b_xt = xt::zeros<double>({300, 40});
  for (clp::Index r = 0; r < 300; ++r) {
    for (clp::Index c = 0; c < 24; ++c) a_xt(r, c) = a(r, c);
    for (clp::Index c = 0; c < 40; ++c) b_xt(r, c) = b(r, c);
  }
  CHECK(clp::knn_overlap(a_xt, b_xt, options).per_token == reference.per_token);

  // A raw buffer with a padded row stride, and a std::vector.
  std::vector<float> padded(300 * 32, -7.0f);
  for (clp::Index r = 0; r < 300; ++r)
    for (clp::Index c = 0; c < 24; ++c) padded[r * 32 + c] = a(r, c);
  const clp::matrix_view<const float> a_raw(padded.data(), 300, 24, 32, clp::storage_order::row_major);
  const std::vector<float> b_vector(b.data(), b.data() + b.size());
  CHECK(clp::knn_overlap(a_raw, clp::make_view(b_vector, 300, 40), options).per_token == reference.per_token);

  // Half and bfloat16 round the values; float copies of the rounded values give the same answer.
  const Eigen::Matrix<Eigen::half, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> a_half = a.cast<Eigen::half>();
  const Eigen::Matrix<Eigen::bfloat16, Eigen::Dynamic, Eigen::Dynamic> b_bf16 = b.cast<Eigen::bfloat16>();
  const row_major a_rounded = a_half.cast<float>();
  const row_major b_rounded = b_bf16.cast<float>();
  const auto rounded = clp::knn_overlap(a_half, b_bf16, options);
  CHECK(rounded.per_token == clp::knn_overlap(a_rounded, b_rounded, options).per_token);
  CHECK(std::abs(rounded.mean_overlap - reference.mean_overlap) < 0.05);
}
