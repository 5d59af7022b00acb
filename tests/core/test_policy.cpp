// SPDX-License-Identifier: MIT
// clp/policy.hpp: what a weighting policy is. statistics_of against a plain double loop; which
// shapes is_weighting_policy admits (by what a policy declares it needs, never by name); and
// policies of one's own, of each admitted shape, run by the engine exactly as the shipped ones.

#include "fixtures.hpp"

#include <clp/policy.hpp>
#include <clp/synthesize.hpp>
#include <clp/weights.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_policy {
namespace {

std::vector<float> random_cosines(std::mt19937_64& engine, std::size_t n, double low, double high) {
  std::uniform_real_distribution<double> u(low, high);
  std::vector<float> c(n);
  for (float& x : c) x = static_cast<float>(u(engine));
  return c;
}

}  // namespace

TEST_CASE("statistics_of: max and sums of a row against a plain double loop") {
  std::mt19937_64 engine(3);
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(9), std::size_t(1001)}) {
    const auto row = random_cosines(engine, n, -1.0, 0.5);
    const clp::cosine_statistics s = clp::statistics_of(row.data(), clp::Index(n));
    double max = -INFINITY, sum = 0, sum_abs = 0, sum_squares = 0, sum_positive = 0;
    for (float x : row) {
      max = std::max(max, double(x));
      sum += x;
      sum_abs += std::abs(double(x));
      sum_squares += double(x) * x;
      sum_positive += std::max(double(x), 0.0);
    }
    CHECK(s.max == max);
    CHECK(s.sum == doctest::Approx(sum).epsilon(1e-12));
    CHECK(s.sum_abs == doctest::Approx(sum_abs).epsilon(1e-12));
    CHECK(s.sum_squares == doctest::Approx(sum_squares).epsilon(1e-12));
    CHECK(s.sum_positive == doctest::Approx(sum_positive).epsilon(1e-12));
  }
  const clp::cosine_statistics empty = clp::statistics_of(nullptr, 0);
  CHECK(empty.max == -INFINITY);
  CHECK(empty.sum == 0);
}

namespace {
// Shapes that are not policies: no declaration, the old names (is_sparse, then
// returns_neighbours), the wrong call operator for what the policy declares, a neighbour policy
// without max_neighbours, and a pursuit without its tolerance.
struct undeclared {
  clp::dense_weights operator()(float*, clp::Index, const clp::cosine_statistics&) const { return {}; }
};
struct old_name {
  static constexpr bool is_sparse = false;
  clp::dense_weights operator()(float*, clp::Index, const clp::cosine_statistics&) const { return {}; }
};
struct older_name {
  static constexpr bool returns_neighbours = true;
  clp::Index max_neighbours(clp::Index n) const { return n; }
  clp::Index operator()(const float*, clp::Index, clp::Index*, float*) const { return 0; }
};
struct declares_dense_returns_neighbours {
  static constexpr clp::weighting_input input = clp::weighting_input::cosine_row;
  clp::Index operator()(const float*, clp::Index, clp::Index*, float*) const { return 0; }
};
struct neighbours_without_count {
  static constexpr clp::weighting_input input = clp::weighting_input::nearest_cosines;
  clp::Index operator()(const float*, clp::Index, clp::Index*, float*) const { return 0; }
};
struct pursuit_without_tolerance {
  static constexpr clp::weighting_input input = clp::weighting_input::helper_rows;
  std::size_t max_gram_bytes = 0;
  clp::Index max_neighbours(clp::Index n) const { return n; }
};
struct custom_neighbours {
  static constexpr clp::weighting_input input = clp::weighting_input::nearest_cosines;
  clp::Index max_neighbours(clp::Index n) const { return n; }
  clp::Index operator()(const float*, clp::Index, clp::Index*, float*) const { return 0; }
};
// A pursuit of one's own: admitted by its shape (what the engine's pursuit reads), not by name.
struct custom_pursuit {
  static constexpr clp::weighting_input input = clp::weighting_input::helper_rows;
  double tolerance = 1e-3;
  std::size_t max_gram_bytes = 0;
  clp::Index max_neighbours(clp::Index n) const { return std::min<clp::Index>(2, n); }
};
}  // namespace

TEST_CASE("is_weighting_policy: every shipped policy and a custom one, and not the shapes that are not") {
  static_assert(clp::is_weighting_policy_v<clp::paper_weights>);
  static_assert(clp::is_weighting_policy_v<clp::guarded_paper_weights>);
  static_assert(clp::is_weighting_policy_v<clp::clamped_weights>);
  static_assert(clp::is_weighting_policy_v<clp::top_k_weights>);
  static_assert(clp::is_weighting_policy_v<clp::softmax_weights>);
  static_assert(clp::is_weighting_policy_v<clp::sparsemax_weights>);
  static_assert(clp::is_weighting_policy_v<clp::omp_weights>);
  static_assert(clp::is_weighting_policy_v<custom_neighbours>);
  static_assert(clp::is_weighting_policy_v<custom_pursuit>);
  static_assert(!clp::is_weighting_policy_v<clp::weighting>);
  static_assert(!clp::is_weighting_policy_v<int>);
  static_assert(!clp::is_weighting_policy_v<undeclared>);
  static_assert(!clp::is_weighting_policy_v<old_name>);
  static_assert(!clp::is_weighting_policy_v<older_name>);
  static_assert(!clp::is_weighting_policy_v<pursuit_without_tolerance>);
  static_assert(!clp::is_weighting_policy_v<declares_dense_returns_neighbours>);
  static_assert(!clp::is_weighting_policy_v<neighbours_without_count>);
  // What each shipped policy returns.
  CHECK(clp::top_k_weights::input == clp::weighting_input::nearest_cosines);
  CHECK(clp::softmax_weights::input == clp::weighting_input::nearest_cosines);
  CHECK(clp::paper_weights::input == clp::weighting_input::scaled_cosines);
  CHECK(clp::guarded_paper_weights::input == clp::weighting_input::scaled_cosines);
  CHECK(clp::clamped_weights::input == clp::weighting_input::cosine_row);
  CHECK(clp::sparsemax_weights::input == clp::weighting_input::cosine_row);
  CHECK(clp::omp_weights::input == clp::weighting_input::helper_rows);
}

namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A synthesis of 400 target rows (150 overlapping) with `policy`, on 2 threads.
template <class Policy>
row_major synthesised(const Policy& policy) {
  const oracle::matrix helper = oracle::random_embeddings(400, 16, 1.0, 5);
  const oracle::matrix source = oracle::random_embeddings(300, 12, 0.5, 6);
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(150, 400, 300);
  const row_major h = fixtures::make<fixtures::eigen_row_major<float>>(helper).m;
  const row_major s = fixtures::make<fixtures::eigen_row_major<float>>(source).m;
  row_major out = row_major::Zero(400, 12);
  clp::synthesize_rows(s, h, overlap, out, policy, fixtures::options(2, std::size_t(1) << 20));
  return out;
}

/// top_k_weights{1} in a policy of one's own: the nearest overlapping token, weight 1 when its
/// cosine is positive.
struct nearest_token {
  static constexpr clp::weighting_input input = clp::weighting_input::nearest_cosines;
  clp::Index max_neighbours(clp::Index n) const { return std::min<clp::Index>(1, n); }
  clp::Index operator()(const float* cosines, clp::Index n, clp::Index* neighbour, float* weight) const {
    if (clp::select_top_k(cosines, n, 1, neighbour) == 0 || !(cosines[neighbour[0]] > 0)) return 0;
    weight[0] = 1.0f;
    return 1;
  }
};

/// omp_weights{3}'s pursuit in a policy of one's own.
struct pursuit_of_three {
  static constexpr clp::weighting_input input = clp::weighting_input::helper_rows;
  double tolerance = 1e-5;
  std::size_t max_gram_bytes = std::size_t(1) << 30;
  clp::Index max_neighbours(clp::Index n) const { return std::min<clp::Index>(3, n); }
};

/// paper_weights' rule in a policy of one's own.
struct scaled_like_paper {
  static constexpr clp::weighting_input input = clp::weighting_input::scaled_cosines;
  clp::dense_weights operator()(float* cosines, clp::Index n, const clp::cosine_statistics& s) const {
    return clp::paper_weights{}(cosines, n, s);
  }
};

}  // namespace

TEST_CASE("policies of one's own run through the engine as the shipped ones with the same rule") {
  // A neighbour list.
  CHECK(fixtures::same_bits(synthesised(nearest_token{}), synthesised(clp::top_k_weights{1})));
  // A pursuit: the engine's pursuit, run with the policy's k, tolerance and Gram budget.
  CHECK(fixtures::same_bits(synthesised(pursuit_of_three{}), synthesised(clp::omp_weights{3})));
  // Scaled cosines: paper_weights' rule declared as such.
  CHECK(fixtures::same_bits(synthesised(scaled_like_paper{}), synthesised(clp::paper_weights{})));
}

}  // namespace test_policy
