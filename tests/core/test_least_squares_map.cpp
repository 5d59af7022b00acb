// SPDX-License-Identifier: MIT
// clp::least_squares_map (<clp/weights.hpp>, fitted by <clp/detail/synthesis/linear_map.hpp>): the
// synthesised rows against the normal equations solved in double (tests/support/oracle.hpp), on
// every layout and element type; the GCV choice of lambda against GCV computed by brute force;
// rank-deficient and one-token overlaps, lambda = 0, untied heads, and bit-identity across
// thread counts and tile budgets.

#include "fixtures.hpp"

#include <clp/synthesize.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_least_squares_map {
namespace {

using clp::Index;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double sentinel = 12345.0;

struct problem {
  oracle::matrix helper, source;
  clp::vocabulary_overlap overlap;
};

problem make_problem(Index target_rows, Index source_rows, Index n_overlap, Index d_helper, Index d_source,
                     unsigned seed) {
  return {oracle::random_embeddings(target_rows, d_helper, 0.3, seed),
          oracle::random_embeddings(source_rows, d_source, 0.5, seed + 1),
          fixtures::spread_overlap(n_overlap, target_rows, source_rows)};
}

template <class T>
problem rounded(const problem& p) {
  return {fixtures::rounded<T>(p.helper), fixtures::rounded<T>(p.source), p.overlap};
}

/// The oracle's output: copies of the overlap, h_t W on the missing rows, for a relative lambda.
oracle::matrix oracle_output(const problem& p, const oracle::matrix& source, double relative_lambda) {
  const double lambda = relative_lambda * oracle::mean_eigenvalue(p.helper, p.overlap.target_ids);
  oracle::matrix w;
  REQUIRE(oracle::least_squares_map(p.helper, p.overlap.target_ids, source, p.overlap.source_ids, lambda, w));
  const oracle::matrix rows = oracle::apply_map(p.helper, p.overlap.missing_ids, w);
  oracle::matrix out(p.helper.rows, source.cols);
  for (std::size_t i = 0; i < p.overlap.target_ids.size(); ++i)
    std::copy(source.row(p.overlap.source_ids[i]), source.row(p.overlap.source_ids[i]) + source.cols,
              out.row(p.overlap.target_ids[i]));
  for (std::size_t i = 0; i < p.overlap.missing_ids.size(); ++i)
    std::copy(rows.row(Index(i)), rows.row(Index(i)) + source.cols, out.row(p.overlap.missing_ids[i]));
  return out;
}

/// The grid lambda (relative) with the least brute-force GCV.
double oracle_gcv_choice(const problem& p, const oracle::matrix& source) {
  const double mean = oracle::mean_eigenvalue(p.helper, p.overlap.target_ids);
  double best = -1, best_score = std::numeric_limits<double>::infinity();
  for (int e = -24; e <= 8; ++e) {
    const double relative = std::pow(10.0, e / 4.0);
    const double score = oracle::gcv(p.helper, p.overlap.target_ids, source, p.overlap.source_ids, relative * mean);
    if (std::isfinite(score) && score <= best_score) best = relative, best_score = score;
  }
  return best;
}

double max_error(const oracle::matrix& got, const oracle::matrix& want, const clp::vocabulary_overlap& overlap) {
  return fixtures::max_relative_row_error(got, want, overlap.missing_ids);
}

/// Runs the map on layout L and returns its output as doubles.
template <class L>
oracle::matrix run(const problem& p, const clp::least_squares_map& policy, clp::synthesis_report& report,
                   int threads = 2) {
  auto helper = fixtures::make<L>(p.helper);
  auto source = fixtures::make<L>(p.source);
  L output(p.helper.rows, p.source.cols, sentinel);
  report = clp::synthesize_rows(source.get(), helper.get(), p.overlap, output.get(), policy,
                                fixtures::options(threads, std::size_t(1) << 20));
  return fixtures::values_of(output, p.helper.rows, p.source.cols);
}

}  // namespace

TEST_CASE_TEMPLATE("least_squares_map: matches the double normal equations on this layout", L, CLP_TEST_LAYOUTS) {
  using T = typename L::scalar;
  const problem p = rounded<T>(make_problem(700, 500, 260, 12, 20, 31));
  for (const double relative : {0.0, 0.01, 1.0}) {
    CAPTURE(relative);
    clp::synthesis_report report;
    const oracle::matrix got = run<L>(p, clp::least_squares_map{relative, 0}, report);
    CHECK(max_error(got, oracle_output(p, p.source, relative), p.overlap) < 2e-5);
    REQUIRE(report.maps.size() == 1);
    CHECK(report.maps[0].relative_lambda == doctest::Approx(relative));
    CHECK_FALSE(report.maps[0].automatic);
    CHECK(report.maps[0].rank == 12);
    CHECK(report.synthesized_rows == Index(p.overlap.missing_ids.size()));
    CHECK(report.effective_neighbours_median == doctest::Approx(double(p.overlap.size())));
    for (std::size_t i = 0; i < p.overlap.target_ids.size(); ++i)  // copies exact
      CHECK(got(p.overlap.target_ids[i], 3) == p.source(p.overlap.source_ids[i], 3));
  }
}

TEST_CASE_TEMPLATE("least_squares_map: bfloat16 storage matches the oracle to bfloat16 rounding", L,
                   CLP_TEST_BF16_LAYOUTS) {
  const problem p = rounded<Eigen::bfloat16>(make_problem(400, 300, 150, 10, 16, 41));
  clp::synthesis_report report;
  const oracle::matrix got = run<L>(p, clp::least_squares_map{0.1, 0}, report);
  CHECK(max_error(got, oracle_output(p, p.source, 0.1), p.overlap) < 1e-2);
}

TEST_CASE("least_squares_map: the automatic lambda is the grid's least GCV, computed by brute force") {
  // Few overlapping rows for the helper's width, so the fit needs shrinking.
  const problem p = make_problem(300, 200, 40, 16, 12, 51);
  clp::synthesis_report report;
  const oracle::matrix got =
      run<fixtures::eigen_row_major<double>>(p, clp::least_squares_map{clp::least_squares_map::automatic, 0}, report);
  REQUIRE(report.maps.size() == 1);
  CHECK(report.maps[0].automatic);
  const double want = oracle_gcv_choice(p, p.source);
  CHECK(report.maps[0].relative_lambda == doctest::Approx(want).epsilon(1e-9));
  CHECK(max_error(got, oracle_output(p, p.source, want), p.overlap) < 2e-5);
  CHECK(report.maps[0].degrees_of_freedom > 0);
  CHECK(report.maps[0].degrees_of_freedom < 16);
}

TEST_CASE("least_squares_map: rank-deficient overlaps (fewer rows than dimensions, duplicates) work with lambda > 0") {
  problem p = make_problem(120, 90, 6, 16, 10, 61);
  // Two overlapping helper rows made identical: the Gram matrix has rank 5 of 16.
  for (Index c = 0; c < p.helper.cols; ++c) p.helper(p.overlap.target_ids[1], c) = p.helper(p.overlap.target_ids[0], c);
  for (const double relative : {1e-3, 1.0}) {
    clp::synthesis_report report;
    const oracle::matrix got = run<fixtures::eigen_row_major<float>>(p, clp::least_squares_map{relative, 0}, report);
    CHECK(report.maps[0].rank == 5);
    CHECK(max_error(got, oracle_output(p, p.source, relative), p.overlap) < 1e-4);
  }
  clp::synthesis_report report;
  const oracle::matrix got =
      run<fixtures::eigen_row_major<float>>(p, clp::least_squares_map{clp::least_squares_map::automatic, 0}, report);
  CHECK(max_error(got, oracle_output(p, p.source, report.maps[0].relative_lambda), p.overlap) < 1e-4);
}

TEST_CASE("least_squares_map: lambda = 0 on a singular Gram matrix is refused before anything is written") {
  const problem p = make_problem(120, 90, 6, 16, 10, 71);
  auto helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper);
  auto source = fixtures::make<fixtures::eigen_row_major<float>>(p.source);
  fixtures::eigen_row_major<float> output(p.helper.rows, p.source.cols, sentinel);
  const auto e = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_rows(source.get(), helper.get(), p.overlap, output.get(), clp::least_squares_map{0.0, 0});
  });
  REQUIRE(e);
  CHECK(e->facts().argument == "lambda");
  CHECK(e->facts().context == "clp::synthesize_rows");
  CHECK(std::string(e->what()).find("singular (rank 6 of 16)") != std::string::npos);
  CHECK((output.m.array() == float(sentinel)).all());
  CHECK(fixtures::error_of([&] {
          clp::synthesize_rows(source.get(), helper.get(), p.overlap, output.get(),
                               clp::least_squares_map{std::numeric_limits<double>::quiet_NaN()});
        }).find("'lambda' must be finite") != std::string::npos);
}

TEST_CASE("least_squares_map: an overlap of one token maps every row along it") {
  const problem p = make_problem(50, 40, 1, 8, 6, 81);
  for (const double relative : {-1.0, 0.5}) {
    clp::synthesis_report report;
    const oracle::matrix got = run<fixtures::eigen_row_major<double>>(p, clp::least_squares_map{relative, 0}, report);
    CHECK(report.maps[0].rank == 1);
    CHECK(max_error(got, oracle_output(p, p.source, report.maps[0].relative_lambda), p.overlap) < 2e-5);
  }
}

TEST_CASE("least_squares_map: an untied head and matrix pairs get their own map and lambda") {
  const problem p = make_problem(400, 300, 120, 10, 14, 91);
  const oracle::matrix head_values = oracle::random_embeddings(300, 6, 0.0, 93);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const row_major head = fixtures::make<fixtures::eigen_row_major<float>>(head_values).m;
  row_major output(400, 14), new_head(400, 6);
  const clp::synthesis_report report =
      clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{head, new_head},
                           clp::least_squares_map{clp::least_squares_map::automatic, 0});
  REQUIRE(report.maps.size() == 2);
  const problem with_head{p.helper, head_values, p.overlap};
  fixtures::eigen_row_major<float> got_head(400, 6, 0.0);
  got_head.m = new_head;
  fixtures::eigen_row_major<float> got(400, 14, 0.0);
  got.m = output;
  CHECK(max_error(fixtures::values_of(got, 400, 14), oracle_output(p, p.source, report.maps[0].relative_lambda),
                  p.overlap) < 2e-5);
  CHECK(max_error(fixtures::values_of(got_head, 400, 6),
                  oracle_output(with_head, head_values, report.maps[1].relative_lambda), p.overlap) < 2e-5);
  CHECK(report.maps[0].relative_lambda == doctest::Approx(oracle_gcv_choice(p, p.source)).epsilon(1e-9));
  CHECK(report.maps[1].relative_lambda == doctest::Approx(oracle_gcv_choice(with_head, head_values)).epsilon(1e-9));
}

TEST_CASE("least_squares_map: bit-identical for 1, 2 and 3 threads and any tile budget") {
  const problem p = make_problem(1500, 900, 1100, 24, 70, 101);  // several overlap panels
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  row_major first;
  double first_lambda = 0;
  for (const int threads : {1, 2, 3})
    for (const std::size_t tile : {std::size_t(64) << 10, std::size_t(256) << 20}) {
      row_major output(1500, 70);
      const clp::synthesis_report report = clp::synthesize_rows(
          source, helper, p.overlap, output, clp::least_squares_map{clp::least_squares_map::automatic, 0},
          fixtures::options(threads, tile));
      if (first.size() == 0) {
        first = output;
        first_lambda = report.maps[0].lambda;
      }
      CAPTURE(threads);
      CAPTURE(tile);
      CHECK(fixtures::same_bits(output, first));
      CHECK(report.maps[0].lambda == first_lambda);
    }
}

TEST_CASE("least_squares_map: a zero helper row falls back to the mean, and R^2 of an exact map is 1") {
  problem p = make_problem(200, 150, 80, 6, 9, 111);
  // Source rows that are exactly a linear map of the helper rows: R^2 = 1 at lambda = 0.
  oracle::matrix map(6, 9);
  for (Index i = 0; i < 6; ++i)
    for (Index c = 0; c < 9; ++c) map(i, c) = std::sin(double(i * 9 + c));
  const oracle::matrix mapped = oracle::apply_map(p.helper, p.overlap.target_ids, map);
  for (std::size_t j = 0; j < p.overlap.source_ids.size(); ++j)
    for (Index c = 0; c < 9; ++c) p.source(p.overlap.source_ids[j], c) = mapped(Index(j), c);
  const Index zero_row = p.overlap.missing_ids[5];
  for (Index c = 0; c < 6; ++c) p.helper(zero_row, c) = 0;
  clp::synthesis_report report;
  const oracle::matrix got = run<fixtures::eigen_row_major<double>>(p, clp::least_squares_map{0.0, 0}, report);
  CHECK(report.maps[0].r_squared == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(report.zero_norm_rows == 1);
  const std::vector<double> mean = oracle::mean_row(p.source, p.overlap.source_ids);
  for (Index c = 0; c < 9; ++c) CHECK(got(zero_row, c) == doctest::Approx(mean[std::size_t(c)]).epsilon(1e-6));
}

using neighbour_norm = clp::least_squares_map::neighbour_norm;

/// The oracle's output with neighbour norms: the map's rows, each rescaled to the norm of the
/// oracle's top-k row of the same token, or (neighbour_norm::mean) to its top-k weights applied
/// to the source rows' norms, that is top-k's row of a one-column source holding each row's norm.
/// Rows whose k-th and (k+1)-th cosines nearly tie (float may pick either neighbour) are left
/// out of `checked`.
oracle::matrix oracle_neighbour_norms(const problem& p, const oracle::matrix& source, double relative_lambda, Index k,
                                      std::vector<Index>& checked, neighbour_norm rule = neighbour_norm::of_top_k_row) {
  oracle::matrix out = oracle_output(p, source, relative_lambda);
  oracle::policy top_k;
  top_k.which = oracle::kind::top_k;
  top_k.k = k;
  oracle::matrix norms(source.rows, 1);
  for (Index r = 0; r < source.rows; ++r) norms(r, 0) = oracle::norm(source.row(r), source.cols);
  const bool mean = rule == neighbour_norm::mean;
  const oracle::result neighbours = oracle::synthesize(p.helper, p.overlap.target_ids, p.overlap.source_ids,
                                                       p.overlap.missing_ids, mean ? norms : source, top_k, 1e-6);
  for (const Index t : p.overlap.missing_ids) {
    const double want = mean ? neighbours.output(t, 0) : oracle::norm(neighbours.output.row(t), source.cols);
    const double have = oracle::norm(out.row(t), source.cols);
    for (Index c = 0; c < source.cols; ++c) out(t, c) *= want / have;
    if (std::find(neighbours.ambiguous.begin(), neighbours.ambiguous.end(), t) == neighbours.ambiguous.end())
      checked.push_back(t);
  }
  return out;
}

TEST_CASE_TEMPLATE("least_squares_map: neighbour norms keep the map's direction and take the norm the oracle gives", L,
                   CLP_TEST_LAYOUTS) {
  using T = typename L::scalar;
  const problem p = rounded<T>(make_problem(700, 500, 260, 12, 20, 37));
  double smallest = INFINITY, largest = 0;
  for (const Index s : p.overlap.source_ids) {
    smallest = std::min(smallest, oracle::norm(p.source.row(s), p.source.cols));
    largest = std::max(largest, oracle::norm(p.source.row(s), p.source.cols));
  }
  for (const neighbour_norm rule : {neighbour_norm::of_top_k_row, neighbour_norm::mean})
    for (const Index k : {1, 10}) {
      CAPTURE(int(rule));
      CAPTURE(k);
      clp::least_squares_map policy{0.1, k};
      policy.norm_rule = rule;
      clp::synthesis_report report;
      const oracle::matrix got = run<L>(p, policy, report);
      std::vector<Index> checked;
      const oracle::matrix want = oracle_neighbour_norms(p, p.source, 0.1, k, checked, rule);
      CHECK(checked.size() > p.overlap.missing_ids.size() * 9 / 10);
      CHECK(fixtures::max_relative_row_error(got, want, checked) < 2e-5);
      CHECK(report.maps.size() == 1);
      CHECK(report.fallback_rows == 0);
      CHECK(report.effective_neighbours_median == doctest::Approx(double(p.overlap.size())));
      if (rule != neighbour_norm::mean) continue;
      // A weighted mean of norms: no row below the smallest overlapping row's norm or above the largest.
      for (const Index t : p.overlap.missing_ids) {
        const double norm = oracle::norm(got.row(t), got.cols);
        CHECK(norm >= smallest * (1 - 1e-5));
        CHECK(norm <= largest * (1 + 1e-5));
      }
    }
}

TEST_CASE("least_squares_map: neighbour norms per source (untied head), bit-identical for any threads and tiles") {
  const problem p = make_problem(1500, 900, 1100, 24, 70, 103);  // several overlap panels
  const oracle::matrix head_values = oracle::random_embeddings(900, 9, 0.2, 105);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const row_major head = fixtures::make<fixtures::eigen_row_major<float>>(head_values).m;
  for (const neighbour_norm rule : {neighbour_norm::of_top_k_row, neighbour_norm::mean}) {
    CAPTURE(int(rule));
    clp::least_squares_map policy{0.1, 10};
    policy.norm_rule = rule;
    row_major first, first_head;
    for (const int threads : {1, 2, 3})
      for (const std::size_t tile : {std::size_t(64) << 10, std::size_t(256) << 20}) {
        row_major output(1500, 70), new_head(1500, 9);
        clp::synthesis_options options = fixtures::options(threads, tile);
        clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{head, new_head}, policy, options);
        if (first.size() == 0) {
          first = output;
          first_head = new_head;
          // The head's rows take the norms of the head's own neighbours.
          std::vector<Index> checked;
          const problem with_head{p.helper, head_values, p.overlap};
          const oracle::matrix want = oracle_neighbour_norms(with_head, head_values, 0.1, 10, checked, rule);
          fixtures::eigen_row_major<float> got_head(1500, 9, 0.0);
          got_head.m = new_head;
          CHECK(fixtures::max_relative_row_error(fixtures::values_of(got_head, 1500, 9), want, checked) < 2e-5);
        }
        CAPTURE(threads);
        CAPTURE(tile);
        CHECK(fixtures::same_bits(output, first));
        CHECK(fixtures::same_bits(new_head, first_head));
      }
  }
}

TEST_CASE("least_squares_map: a policy, chosen by name with its lambda") {
  static_assert(clp::is_weighting_policy_v<clp::least_squares_map>);
  CHECK(clp::least_squares_map::input == clp::weighting_input::linear_map);
  const clp::weighting automatic = clp::make_weighting("least-squares");
  REQUIRE(std::holds_alternative<clp::least_squares_map>(automatic));
  CHECK(std::get<clp::least_squares_map>(automatic).lambda < 0);
  CHECK(std::get<clp::least_squares_map>(clp::make_weighting("least-squares", std::nullopt, 0.1f, 0.5)).lambda == 0.5);
  CHECK(fixtures::error_of([] {
          clp::make_weighting("least-squares", std::nullopt, 0.1f, INFINITY);
        }).find("lambda must be finite") != std::string::npos);
}

}  // namespace test_least_squares_map
