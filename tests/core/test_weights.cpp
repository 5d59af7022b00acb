// SPDX-License-Identifier: MIT
// clp/weights.hpp: each policy on hand-made and random cosine rows against the double oracle,
// the fallbacks, the tie rule, the temperature limits, and make_weighting.

#include "fixtures.hpp"

#include <clp/weights.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

using fixtures::error_of;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_weights {
namespace {

/// A dense policy's weights for `cosines` (its row times its scale, in double), or nothing
/// when it falls back. Also checks the weight sums it reports against the weights.
template <class Policy>
std::vector<double> dense(const Policy& policy, std::vector<float> cosines, bool* ok = nullptr) {
  const clp::Index n = clp::Index(cosines.size());
  const clp::dense_weights result = policy(cosines.data(), n, clp::statistics_of(cosines.data(), n));
  const bool weighted = result.scale != 0;
  if (ok) *ok = weighted;
  if (!weighted) return {};
  std::vector<double> w;
  double sum_abs = 0, sum_squares = 0;
  for (float c : cosines) {
    w.push_back(double(c) * result.scale);
    sum_abs += std::abs(w.back());
    sum_squares += w.back() * w.back();
  }
  CHECK(result.sum_abs == doctest::Approx(sum_abs).epsilon(1e-6));
  CHECK(result.sum_squares == doctest::Approx(sum_squares).epsilon(1e-6));
  return w;
}

/// A sparse policy's (overlap index, weight) pairs for `cosines`; empty when it falls back.
template <class Policy>
oracle::weights sparse(const Policy& policy, const std::vector<float>& cosines) {
  const clp::Index n = clp::Index(cosines.size());
  std::vector<clp::Index> neighbour(std::size_t(policy.max_neighbours(n)), -1);
  std::vector<float> weight(neighbour.size(), -1.0f);
  const clp::Index count = policy(cosines.data(), n, neighbour.data(), weight.data());
  REQUIRE(count >= 0);
  REQUIRE(count <= policy.max_neighbours(n));
  oracle::weights out;
  for (clp::Index i = 0; i < count; ++i) out.emplace_back(neighbour[std::size_t(i)], double(weight[std::size_t(i)]));
  return out;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

/// Oracle weights spread over all n entries.
std::vector<double> spread(const oracle::weights& w, std::size_t n) {
  std::vector<double> out(n, 0.0);
  for (const auto& [j, x] : w) out[std::size_t(j)] = x;
  return out;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Sparse results agree: the same neighbours in the same order, weights within tolerance.
void check_same_sparse(const oracle::weights& got, const oracle::weights& want, double tolerance = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].first == want[i].first);
    CHECK(std::abs(got[i].second - want[i].second) <= tolerance);
  }
}

double sum_of(const std::vector<double>& w) { return std::accumulate(w.begin(), w.end(), 0.0); }

std::vector<float> random_cosines(std::mt19937_64& engine, std::size_t n, double low, double high) {
  std::uniform_real_distribution<double> u(low, high);
  std::vector<float> c(n);
  for (float& x : c) x = static_cast<float>(u(engine));
  return c;
}

}  // namespace

TEST_CASE("paper_weights: cos / sum cos, as published") {
  const std::vector<float> c{0.5f, 0.25f, -0.125f, 0.375f};
  bool ok = false;
  const auto w = dense(clp::paper_weights{}, c, &ok);
  REQUIRE(ok);
  CHECK(max_abs_difference(w, spread(oracle::paper(as_double(c)), c.size())) <= 1e-7);
  CHECK(w[2] < 0);  // negative cosines keep their sign, as in eq. 4
  CHECK(sum_of(w) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("paper_weights: a negative cosine sum divides too, as published, only a zero sum falls back") {
  bool ok = false;
  // All negative: positive weights adding up to one.
  const std::vector<float> negative{-0.5f, -0.25f, -0.25f};
  const auto w = dense(clp::paper_weights{}, negative, &ok);
  REQUIRE(ok);
  CHECK(max_abs_difference(w, spread(oracle::paper(as_double(negative)), 3)) <= 1e-7);
  CHECK(max_abs_difference(w, {0.5, 0.25, 0.25}) <= 1e-7);
  // Mixed, negative sum: the weights flip sign against the cosines.
  const auto flipped = dense(clp::paper_weights{}, {0.25f, -0.5f}, &ok);
  REQUIRE(ok);
  CHECK(max_abs_difference(flipped, {-1.0, 2.0}) <= 1e-7);
  // A tiny sum inflates the row but stays finite.
  const auto inflated = dense(clp::paper_weights{}, {0.5f, -0.49996f}, &ok);
  REQUIRE(ok);
  CHECK(std::abs(inflated[0]) > 1e4);
  CHECK(max_abs_difference(inflated, spread(oracle::paper({0.5, double(-0.49996f)}), 2)) <=
        1e-3 * std::abs(inflated[0]));
  // Nothing similar at all, or a sum of exactly zero: the fallback.
  dense(clp::paper_weights{}, {0.0f, 0.0f, 0.0f}, &ok);
  CHECK_FALSE(ok);
  dense(clp::paper_weights{}, {0.25f, -0.25f}, &ok);
  CHECK_FALSE(ok);
  CHECK(oracle::paper({0.25, -0.25}).empty());
}

TEST_CASE("guarded_paper_weights: the guard falls back when the cosine sum is not safely positive") {
  bool ok = true;
  dense(clp::guarded_paper_weights{}, {0.25f, -0.5f}, &ok);  // negative sum
  CHECK_FALSE(ok);
  dense(clp::guarded_paper_weights{}, {0.0f, 0.0f, 0.0f}, &ok);  // nothing similar at all
  CHECK_FALSE(ok);
  dense(clp::guarded_paper_weights{}, {0.5f, -0.49996f}, &ok);  // sum 4e-5 <= 1e-4 * sum |cos|
  CHECK_FALSE(ok);
  CHECK(oracle::paper_guarded({0.5, double(-0.49996f)}).empty());
  dense(clp::guarded_paper_weights{}, {0.5f, -0.4998f}, &ok);  // sum 2e-4 > 1e-4 * sum |cos|: weights of about 5000
  CHECK(ok);
  dense(clp::guarded_paper_weights{0.5}, {0.5f, -0.2f}, &ok);  // a stricter ratio: 0.3 <= 0.5 * 0.7
  CHECK_FALSE(ok);
  dense(clp::guarded_paper_weights{0.2}, {0.5f, -0.2f}, &ok);
  CHECK(ok);
  // Where the sum is safely positive it is the published computation.
  const std::vector<float> c{0.5f, 0.25f, -0.125f, 0.375f};
  CHECK(max_abs_difference(dense(clp::guarded_paper_weights{}, c), dense(clp::paper_weights{}, c)) == 0.0);
}

TEST_CASE("clamped_weights: negative cosines get no weight, no positive cosine falls back") {
  const std::vector<float> c{0.5f, -0.25f, 0.25f, -1.0f, 0.0f};
  bool ok = false;
  const auto w = dense(clp::clamped_weights{}, c, &ok);
  REQUIRE(ok);
  CHECK(w[1] == 0.0);
  CHECK(w[3] == 0.0);
  CHECK(w[4] == 0.0);
  CHECK(max_abs_difference(w, spread(oracle::clamped(as_double(c)), c.size())) <= 1e-7);

  dense(clp::clamped_weights{}, {-0.5f, -0.25f, 0.0f}, &ok);
  CHECK_FALSE(ok);
  CHECK(oracle::clamped({-0.5, -0.25, 0.0}).empty());

  // Without negative cosines it is the paper's weighting.
  const std::vector<float> positive{0.5f, 0.125f, 0.25f};
  CHECK(max_abs_difference(dense(clp::clamped_weights{}, positive), dense(clp::paper_weights{}, positive)) == 0.0);
}

TEST_CASE("top_k_weights: the k most similar, clamped and renormalised") {
  const std::vector<float> c{0.1f, 0.7f, -0.3f, 0.4f, 0.6f, 0.2f};
  const auto w = sparse(clp::top_k_weights{3}, c);
  check_same_sparse(w, oracle::top_k(as_double(c), 3));
  REQUIRE(w.size() == 3);
  CHECK(w[0].first == 1);
  CHECK(w[1].first == 4);
  CHECK(w[2].first == 3);
  CHECK(w[0].second + w[1].second + w[2].second == doctest::Approx(1.0));

  // A negative cosine among the k gets weight 0 but stays listed.
  const auto mixed = sparse(clp::top_k_weights{3}, {0.5f, -0.1f, -0.2f, -0.9f});
  check_same_sparse(mixed, oracle::top_k({0.5, double(-0.1f), double(-0.2f), double(-0.9f)}, 3));
  CHECK(mixed[0].second == 1.0);
  CHECK(mixed[1].second == 0.0);
}

TEST_CASE("top_k_weights: no positive cosine among the k falls back, k past the overlap means all") {
  CHECK(sparse(clp::top_k_weights{2}, {-0.5f, -0.25f, -0.75f}).empty());
  CHECK(clp::top_k_weights{50}.max_neighbours(4) == 4);
  const std::vector<float> c{0.25f, 0.5f, 0.125f, 0.0625f};
  const auto w = sparse(clp::top_k_weights{50}, c);
  check_same_sparse(w, oracle::top_k(as_double(c), 50));
  CHECK(w.size() == 4);
  // With all cosines positive and k >= n it equals the clamped (and the paper's) weights.
  const auto all = dense(clp::clamped_weights{}, c);
  for (const auto& [j, x] : w) CHECK(std::abs(x - all[std::size_t(j)]) <= 1e-7);
}

TEST_CASE("top_k_weights and softmax_weights: ties at the k-th neighbour go to the lower index") {
  //                          0      1     2      3      4     5      6
  const std::vector<float> c{0.25f, 0.5f, 0.25f, 0.75f, 0.5f, 0.25f, 0.125f};
  const auto two = sparse(clp::top_k_weights{2}, c);
  REQUIRE(two.size() == 2);
  CHECK(two[0].first == 3);
  CHECK(two[1].first == 1);  // 1 and 4 tie: 1 wins
  const auto four = sparse(clp::top_k_weights{4}, c);
  REQUIRE(four.size() == 4);
  CHECK(four[2].first == 4);
  CHECK(four[3].first == 0);  // 0, 2 and 5 tie: 0 wins
  const auto soft = sparse(clp::softmax_weights{5, 0.1f}, c);
  check_same_sparse(soft, oracle::softmax(as_double(c), 5, 0.1));
  CHECK(soft[4].first == 2);

  // Many ties, random order: the same neighbours as the oracle's stable sort, every time.
  std::mt19937_64 engine(7);
  for (int trial = 0; trial < 200; ++trial) {
    auto row = random_cosines(engine, 300, -1, 1);
    for (float& x : row) x = std::round(x * 8) / 8;  // 17 distinct values
    const clp::Index k = 1 + trial % 40;
    check_same_sparse(sparse(clp::top_k_weights{k}, row), oracle::top_k(as_double(row), k));
    check_same_sparse(sparse(clp::softmax_weights{k, 0.5f}, row), oracle::softmax(as_double(row), k, 0.5));
    // Deterministic: the same call twice gives the same answer.
    CHECK(sparse(clp::top_k_weights{k}, row) == sparse(clp::top_k_weights{k}, row));
  }
}

TEST_CASE("top_k_weights and softmax_weights: random rows match the oracle") {
  std::mt19937_64 engine(11);
  for (int trial = 0; trial < 100; ++trial) {
    const auto row = random_cosines(engine, 2000, trial % 2 ? -1.0 : -0.2, 1.0);
    const clp::Index k = 1 + trial % 25;
    check_same_sparse(sparse(clp::top_k_weights{k}, row), oracle::top_k(as_double(row), k));
    check_same_sparse(sparse(clp::softmax_weights{k, 0.1f}, row), oracle::softmax(as_double(row), k, 0.1));
  }
}

TEST_CASE("softmax_weights: never falls back, temperature limits") {
  const std::vector<float> negative{-0.5f, -0.25f, -0.75f, -0.9f};
  const auto w = sparse(clp::softmax_weights{3, 0.1f}, negative);
  REQUIRE(w.size() == 3);
  check_same_sparse(w, oracle::softmax(as_double(negative), 3, 0.1));
  CHECK(w[0].first == 1);
  CHECK(w[0].second + w[1].second + w[2].second == doctest::Approx(1.0));

  const std::vector<float> c{0.3f, 0.9f, 0.5f, 0.89f, 0.1f};
  // A tiny temperature: the single nearest neighbour.
  const auto cold = sparse(clp::softmax_weights{3, 1e-6f}, c);
  REQUIRE(cold.size() == 3);
  CHECK(cold[0] == std::pair<clp::Index, double>(1, 1.0));
  CHECK(cold[1].second == 0.0);
  CHECK(cold[2].second == 0.0);
  // ... and an exact tie at the top splits evenly.
  const auto tied = sparse(clp::softmax_weights{3, 1e-6f}, {0.2f, 0.8f, 0.8f});
  CHECK(tied[0] == std::pair<clp::Index, double>(1, 0.5));
  CHECK(tied[1] == std::pair<clp::Index, double>(2, 0.5));
  // A huge temperature: equal weights over the k.
  const auto hot = sparse(clp::softmax_weights{3, 1e6f}, c);
  REQUIRE(hot.size() == 3);
  for (const auto& [j, x] : hot) CHECK(x == doctest::Approx(1.0 / 3).epsilon(1e-6));
  CHECK(hot[2].first == 2);
}

TEST_CASE("sparsemax_weights: sums to one and matches the sorting oracle") {
  std::mt19937_64 engine(5);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + std::size_t(trial) * 7 % 900;
    const double scale = trial % 3 == 0 ? 0.05 : trial % 3 == 1 ? 1.0 : 3.0;  // wide and narrow supports
    const auto row = random_cosines(engine, n, -scale, scale);
    const auto w = dense(clp::sparsemax_weights{}, row);
    REQUIRE(w.size() == n);
    CHECK(sum_of(w) == doctest::Approx(1.0).epsilon(1e-5));
    for (double x : w) CHECK(x >= 0);
    CHECK(max_abs_difference(w, spread(oracle::sparsemax(as_double(row)), n)) <= 1e-6);
  }
}

TEST_CASE("sparsemax_weights: all-negative rows, one clear winner, equal cosines") {
  const std::vector<float> negative{-0.5f, -0.25f, -2.0f};
  const auto w = dense(clp::sparsemax_weights{}, negative);
  CHECK(max_abs_difference(w, spread(oracle::sparsemax(as_double(negative)), 3)) <= 1e-7);
  CHECK(w == std::vector<double>{0.375, 0.625, 0.0});            // tau = -0.875
  const std::vector<float> wide{-0.5f, -0.75f, -0.625f, -0.9f};  // every entry in the support
  const auto all = dense(clp::sparsemax_weights{}, wide);
  CHECK(max_abs_difference(all, spread(oracle::sparsemax(as_double(wide)), 4)) <= 1e-7);
  CHECK(sum_of(all) == doctest::Approx(1.0));
  for (double x : all) CHECK(x > 0);
  CHECK(dense(clp::sparsemax_weights{}, {0.9f, -0.2f, -0.5f}) == std::vector<double>{1.0, 0.0, 0.0});
  CHECK(dense(clp::sparsemax_weights{}, {0.5f, 0.5f, 0.5f, 0.5f}) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
  CHECK(dense(clp::sparsemax_weights{}, {-0.3f}) == std::vector<double>{1.0});
  bool ok = true;
  dense(clp::sparsemax_weights{}, {}, &ok);
  CHECK_FALSE(ok);
}

TEST_CASE("make_weighting: names, parameters and errors") {
  CHECK(std::holds_alternative<clp::paper_weights>(clp::make_weighting("paper")));
  CHECK(std::holds_alternative<clp::guarded_paper_weights>(clp::make_weighting("paper-guarded")));
  CHECK(std::holds_alternative<clp::clamped_weights>(clp::make_weighting("clamped")));
  CHECK(std::holds_alternative<clp::sparsemax_weights>(clp::make_weighting("sparsemax")));
  const auto top = clp::make_weighting("top-k", 25);
  REQUIRE(std::holds_alternative<clp::top_k_weights>(top));
  CHECK(std::get<clp::top_k_weights>(top).k == 25);
  const auto soft = clp::make_weighting("softmax", 4, 0.5f);
  REQUIRE(std::holds_alternative<clp::softmax_weights>(soft));
  CHECK(std::get<clp::softmax_weights>(soft).k == 4);
  CHECK(std::get<clp::softmax_weights>(soft).temperature == 0.5f);
  // Defaults: WECHSEL's k = 10, temperature 0.1.
  CHECK(std::get<clp::softmax_weights>(clp::make_weighting("softmax")).k == 10);
  CHECK(std::get<clp::softmax_weights>(clp::make_weighting("softmax")).temperature == 0.1f);

  const std::string unknown = error_of([] { clp::make_weighting("cosine"); });
  CHECK(unknown.find("clp::make_weighting: unknown weighting 'cosine'") == 0);
  // One name for the map; the name it is also known by says which.
  CHECK(error_of([] { clp::make_weighting("ridge"); }).find("is named 'least-squares'") != std::string::npos);
  const auto k = fixtures::thrown<clp::invalid_argument>([] { clp::make_weighting("top-k", 0); });
  REQUIRE(k);
  CHECK(k->facts().context == "clp::make_weighting");
  CHECK(k->problem() == "k must be at least 1, got 0");
  CHECK_THROWS_AS(clp::make_weighting("softmax", 10, 0.0f), clp::error);
  CHECK_THROWS_AS(clp::make_weighting("softmax", 10, -1.0f), clp::error);
  CHECK_THROWS_AS(clp::make_weighting("softmax", 10, INFINITY), clp::error);
  CHECK_THROWS_AS(clp::make_weighting("softmax", 10, NAN), clp::error);
}

}  // namespace test_weights
