// SPDX-License-Identifier: MIT
// clp/evaluate.hpp: the split (its rule written out again here, the same for every thread
// count), the held-out rows against the double oracle's synthesis from the kept overlap, the
// scores against scores computed here in double, untied heads, and its refusals.

#include "fixtures.hpp"

#include <clp/evaluate.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_evaluate {
namespace {

using clp::Index;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct problem {
  oracle::matrix helper, source;
  clp::vocabulary_overlap overlap;
};

problem make_problem(Index target_rows, Index source_rows, Index n_overlap, Index d_helper, Index d_source,
                     unsigned seed) {
  return {oracle::random_embeddings(target_rows, d_helper, 0.5, seed),
          oracle::random_embeddings(source_rows, d_source, 0.5, seed + 1),
          fixtures::spread_overlap(n_overlap, target_rows, source_rows)};
}

/// The split rule, written out: SplitMix64 of (SplitMix64(seed) xor target id), the smallest
/// round(share * n) hashes held out.
std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<Index> expected_split(const clp::vocabulary_overlap& overlap, double share, std::uint64_t seed) {
  std::vector<std::pair<std::uint64_t, Index>> keyed;
  for (Index j = 0; j < overlap.size(); ++j)
    keyed.emplace_back(splitmix(splitmix(seed) ^ std::uint64_t(overlap.target_ids[std::size_t(j)])), j);
  std::sort(keyed.begin(), keyed.end());
  const auto count = std::size_t(std::llround(share * double(overlap.size())));
  std::vector<Index> held;
  for (std::size_t i = 0; i < count; ++i) held.push_back(keyed[i].second);
  std::sort(held.begin(), held.end());
  return held;
}

/// The oracle's held-out rows (#held by d_source) for a policy, from the kept overlap.
oracle::matrix oracle_held_rows(const problem& p, const std::vector<Index>& held, const clp::weighting& policy) {
  std::vector<Index> kept_t, kept_s, held_t;
  for (Index j = 0, h = 0; j < p.overlap.size(); ++j) {
    if (h < Index(held.size()) && held[std::size_t(h)] == j) {
      held_t.push_back(p.overlap.target_ids[std::size_t(j)]);
      ++h;
    } else {
      kept_t.push_back(p.overlap.target_ids[std::size_t(j)]);
      kept_s.push_back(p.overlap.source_ids[std::size_t(j)]);
    }
  }
  oracle::matrix rows(Index(held_t.size()), p.source.cols);
  if (const auto* map = std::get_if<clp::least_squares_map>(&policy)) {
    oracle::matrix w;
    REQUIRE(oracle::least_squares_map(p.helper, kept_t, p.source, kept_s,
                                      map->lambda * oracle::mean_eigenvalue(p.helper, kept_t), w));
    return oracle::apply_map(p.helper, held_t, w);
  }
  const oracle::result r = oracle::synthesize(p.helper, kept_t, kept_s, held_t, p.source,
                                              std::vector<oracle::policy>{fixtures::oracle_policy(policy)})[0];
  for (std::size_t i = 0; i < held_t.size(); ++i)
    std::copy(r.output.row(held_t[i]), r.output.row(held_t[i]) + p.source.cols, rows.row(Index(i)));
  return rows;
}

}  // namespace

TEST_CASE("evaluate: the split is the hash rule, the same for every seed's thread count, and differs by seed") {
  const problem p = make_problem(900, 700, 400, 12, 16, 7);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  for (const std::uint64_t seed : {0ULL, 1ULL, 12345ULL}) {
    std::vector<clp::evaluation> runs;
    for (const int threads : {1, 2, 3}) {
      clp::evaluation_options o;
      o.threads = threads;
      o.seed = seed;
      runs.push_back(clp::evaluate(source, helper, p.overlap, clp::top_k_weights{5}, o));
    }
    CHECK(runs[0].held_out == expected_split(p.overlap, 0.1, seed));
    CHECK(runs[0].held_out.size() == 40);
    CHECK(runs[0].kept == 360);
    for (const clp::evaluation& e : runs) {
      CHECK(e.held_out == runs[0].held_out);
      CHECK(e.scores[0].cosine == runs[0].scores[0].cosine);  // bit-identical
    }
  }
  clp::evaluation_options a, b;
  b.seed = 1;
  CHECK(clp::evaluate(source, helper, p.overlap, clp::top_k_weights{5}, a).held_out !=
        clp::evaluate(source, helper, p.overlap, clp::top_k_weights{5}, b).held_out);
}

TEST_CASE("evaluate: held-out rows and scores match the double oracle") {
  const problem p = make_problem(900, 700, 400, 12, 16, 17);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  for (const clp::weighting& policy : std::vector<clp::weighting>{
           clp::top_k_weights{7}, clp::sparsemax_weights{}, clp::paper_weights{}, clp::least_squares_map{0.1, 0}}) {
    CAPTURE(fixtures::name_of(policy));
    clp::evaluation_options o;
    o.held_out_share = 0.2;
    o.seed = 3;
    const clp::evaluation e = clp::evaluate(source, helper, p.overlap, policy, o);
    REQUIRE(e.scores.size() == 1);
    const oracle::matrix want = oracle_held_rows(p, e.held_out, policy);
    double mean_cosine = 0, mean_error = 0;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < e.held_out.size(); ++i) {
      const double* truth = p.source.row(p.overlap.source_ids[std::size_t(e.held_out[i])]);
      const double* got = want.row(Index(i));
      std::vector<double> diff(std::size_t(p.source.cols));
      for (Index c = 0; c < p.source.cols; ++c) diff[std::size_t(c)] = got[c] - truth[c];
      const double cosine = oracle::cosine(got, truth, p.source.cols);
      const double error = oracle::norm(diff.data(), p.source.cols) / oracle::norm(truth, p.source.cols);
      const double ratio = oracle::norm(got, p.source.cols) / oracle::norm(truth, p.source.cols);
      CHECK(e.scores[0].cosine[i] == doctest::Approx(cosine).epsilon(1e-4));
      CHECK(e.scores[0].relative_error[i] == doctest::Approx(error).epsilon(1e-4));
      CHECK(e.scores[0].norm_ratio[i] == doctest::Approx(ratio).epsilon(1e-4));
      mean_cosine += cosine / double(e.held_out.size());
      mean_error += error / double(e.held_out.size());
      ratios.push_back(ratio);
    }
    std::sort(ratios.begin(), ratios.end());
    CHECK(e.scores[0].mean_cosine == doctest::Approx(mean_cosine).epsilon(1e-5));
    CHECK(e.scores[0].mean_relative_error == doctest::Approx(mean_error).epsilon(1e-5));
    CHECK(e.scores[0].median_norm_ratio == doctest::Approx(ratios[ratios.size() / 2]).epsilon(1e-4));
    CHECK(e.scores[0].cosine_p10 <= e.scores[0].median_cosine);
    CHECK(e.scores[0].median_cosine <= e.scores[0].cosine_p90);
    CHECK(e.report.synthesized_rows == 80);
    CHECK(e.report.copied_rows == 0);
  }
}

TEST_CASE("evaluate: an untied head is scored with the same weights, from bfloat16 and double inputs") {
  const problem p = make_problem(500, 400, 200, 10, 12, 27);
  const oracle::matrix head_values = fixtures::rounded<Eigen::bfloat16>(oracle::random_embeddings(400, 6, 0.2, 29));
  const auto helper = fixtures::make<fixtures::eigen_col_major<double>>(p.helper);
  auto helper_copy = helper;
  const auto source = fixtures::make<fixtures::eigen_row_major<float>>(p.source);
  const auto head = fixtures::make<fixtures::raw_buffer<Eigen::bfloat16>>(head_values);
  auto head_copy = head;
  const clp::evaluation e = clp::evaluate(source.m, helper_copy.get(), p.overlap,
                                          clp::scored_matrices{{"lm_head", head_copy.get()}}, clp::top_k_weights{5});
  REQUIRE(e.scores.size() == 2);
  CHECK(e.scores[1].name == "lm_head");
  const problem with_head{p.helper, head_values, p.overlap};
  const oracle::matrix want = oracle_held_rows(with_head, e.held_out, clp::top_k_weights{5});
  for (std::size_t i = 0; i < e.held_out.size(); ++i)
    CHECK(e.scores[1].cosine[i] ==
          doctest::Approx(
              oracle::cosine(want.row(Index(i)), head_values.row(p.overlap.source_ids[std::size_t(e.held_out[i])]), 6))
              .epsilon(1e-4));
}

TEST_CASE("evaluate_each: every weighting on every split, each result evaluate's for that weighting and seed") {
  const problem p = make_problem(900, 700, 400, 12, 16, 19);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const row_major head = fixtures::make<fixtures::eigen_row_major<float>>(oracle::random_embeddings(700, 6, 0.2, 21)).m;
  clp::omp_weights by_products{4};
  by_products.max_gram_bytes = 0;
  const std::vector<clp::weighting> policies{clp::sparsemax_weights{}, clp::top_k_weights{7},    by_products,
                                             clp::paper_weights{},     clp::least_squares_map{}, clp::omp_weights{6},
                                             clp::clamped_weights{}};
  clp::evaluation_options o;
  o.held_out_share = 0.2;
  o.seed = 5;
  o.splits = 2;
  o.threads = 2;
  o.tile_bytes = 1 << 20;
  std::vector<clp::Index> progress;
  o.progress = [&](clp::Index done, clp::Index total) {
    CHECK(total == 160);
    progress.push_back(done);
  };
  const clp::scored_matrices more{{"lm_head", head}};
  const std::vector<std::vector<clp::evaluation>> each =
      clp::evaluate_each(source, helper, p.overlap, more, policies, o);
  CHECK(std::is_sorted(progress.begin(), progress.end()));
  CHECK(progress.back() == 160);  // 80 held-out rows per split
  REQUIRE(each.size() == policies.size());
  for (std::size_t j = 0; j < policies.size(); ++j) {
    CAPTURE(fixtures::name_of(policies[j]));
    REQUIRE(each[j].size() == 2);
    for (int split = 0; split < 2; ++split) {
      CAPTURE(split);
      clp::evaluation_options one = o;
      one.splits = 1;
      one.seed = o.seed + std::uint64_t(split);
      one.progress = nullptr;
      const clp::evaluation alone = clp::evaluate(source, helper, p.overlap, more, policies[j], one);
      const clp::evaluation& got = each[j][std::size_t(split)];
      CHECK(got.held_out == alone.held_out);
      CHECK(got.kept == alone.kept);
      REQUIRE(got.scores.size() == 2);
      for (std::size_t s = 0; s < 2; ++s) {
        CHECK(got.scores[s].name == alone.scores[s].name);
        CHECK(got.scores[s].cosine == alone.scores[s].cosine);
        CHECK(got.scores[s].relative_error == alone.scores[s].relative_error);
        CHECK(got.scores[s].norm_ratio == alone.scores[s].norm_ratio);
      }
      CHECK(got.report.inflated_rows == alone.report.inflated_rows);
      CHECK(got.report.effective_neighbours_median == alone.report.effective_neighbours_median);
    }
  }
  CHECK(each[0][0].held_out != each[0][1].held_out);
  CHECK(fixtures::error_of([&] { clp::evaluate_each(source, helper, p.overlap, std::vector<clp::weighting>{}); }) ==
        "clp::evaluate_each: 'policies' is empty");
  CHECK(fixtures::error_of([&] {
          clp::evaluate(source, helper, p.overlap, clp::top_k_weights{}, o);
        }).find("clp::evaluate: 'splits' must be 1") == 0);
}

TEST_CASE("evaluate: refusals") {
  const problem p = make_problem(50, 40, 1, 4, 5, 37);
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const auto too_small =
      fixtures::thrown<clp::invalid_argument>([&] { clp::evaluate(source, helper, p.overlap, clp::top_k_weights{}); });
  REQUIRE(too_small);
  CHECK(too_small->facts().argument == "overlap");
  CHECK(std::string(too_small->what()) ==
        "clp::evaluate: 'overlap' has 1 token(s): at least 2 are needed to hold one out and synthesise it from the "
        "rest");
  const problem q = make_problem(50, 40, 10, 4, 5, 39);
  for (const double share : {0.0, 1.0, -0.5, std::nan("")}) {
    clp::evaluation_options o;
    o.held_out_share = share;
    CHECK(fixtures::error_of([&] {
            clp::evaluate(source, helper, q.overlap, clp::top_k_weights{}, o);
          }).find("'held_out_share' must be between 0 and 1") != std::string::npos);
  }
  // Two tokens: one held out, one kept.
  const clp::vocabulary_overlap two = fixtures::spread_overlap(2, 50, 40);
  CHECK(clp::evaluate(source, helper, two, clp::top_k_weights{}).held_out.size() == 1);
}

}  // namespace test_evaluate
