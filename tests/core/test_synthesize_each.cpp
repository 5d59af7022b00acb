// SPDX-License-Identifier: MIT
// clp/synthesize.hpp, synthesize_each: several weightings in one pass give each job what its own
// synthesize_rows call gives, bit for bit, whatever the jobs' order, sources, threads, tile budget
// and row range; a job without an output reports what it would have written; its refusals.
// (Its use of a caller's similarity product: test_similarity_product.cpp.)
#include "fixtures.hpp"

#include <clp/evaluate.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/synthesize.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_synthesize_each {
namespace {

using clp::Index;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr float sentinel = 12345.0f;  // output rows nobody may write keep it

row_major to_eigen(const oracle::matrix& m) {
  row_major e(m.rows, m.cols);
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c) e(r, c) = static_cast<float>(m(r, c));
  return e;
}

/// The weightings of a pass, in an order that puts jobs that rewrite their cosines (clamped,
/// sparsemax, a pursuit by products) before jobs that read them, so that a copy must protect
/// the later ones; each of the engine's inputs appears at least once.
std::vector<clp::weighting> mixed_weightings() {
  clp::omp_weights by_products{5};
  by_products.max_gram_bytes = 0;  // no Gram matrix: the pursuit forms its correlations in the cosines
  return {clp::clamped_weights{},        clp::top_k_weights{7},    by_products,
          clp::paper_weights{},          clp::sparsemax_weights{}, clp::least_squares_map{},
          clp::softmax_weights{7, 0.1f}, clp::omp_weights{5},      clp::guarded_paper_weights{},
          clp::least_squares_map{0.1, 0}};
}

void check_same_report(const clp::synthesis_report& got, const clp::synthesis_report& want) {
  CHECK(got.overlap == want.overlap);
  CHECK(got.copied_rows == want.copied_rows);
  CHECK(got.synthesized_rows == want.synthesized_rows);
  CHECK(got.padding_rows == want.padding_rows);
  CHECK(got.zero_norm_rows == want.zero_norm_rows);
  CHECK(got.fallback_rows == want.fallback_rows);
  CHECK(got.no_positive_rows == want.no_positive_rows);
  CHECK(got.negative_sum_rows == want.negative_sum_rows);
  CHECK(got.inflated_rows == want.inflated_rows);
  CHECK(got.effective_neighbours_min == want.effective_neighbours_min);
  CHECK(got.effective_neighbours_median == want.effective_neighbours_median);
  CHECK(got.effective_neighbours_max == want.effective_neighbours_max);
  CHECK(got.max_output_row_norm == want.max_output_row_norm);
  CHECK(got.median_output_row_norm == want.median_output_row_norm);
  CHECK(got.median_source_row_norm == want.median_source_row_norm);
  CHECK(got.similarity_product == want.similarity_product);
  REQUIRE(got.maps.size() == want.maps.size());
  for (std::size_t m = 0; m < got.maps.size(); ++m) CHECK(got.maps[m].lambda == want.maps[m].lambda);
}

}  // namespace

TEST_CASE("synthesize_each: every job's rows and report are its own synthesize_rows call's, bit for bit") {
  // 1100 overlapping rows (three panels, the last partial), 1000 missing; two sources of
  // different widths, alternating between the jobs. 1 MB: every panel gathered by each block;
  // 64 MB: the helper panels resident and shared by the jobs.
  const oracle::matrix helper_values = oracle::random_embeddings(2100, 64, 0.3, 41);
  const row_major helper = to_eigen(helper_values);
  const row_major wide = to_eigen(oracle::random_embeddings(1500, 96, 0.5, 42));
  const row_major narrow = to_eigen(oracle::random_embeddings(1500, 40, 0.5, 43));
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(1100, 2100, 1500);
  const std::vector<clp::weighting> weightings = mixed_weightings();
  struct setting {
    int threads;
    std::size_t bytes;
    Index first, last;
  };
  for (const setting s : {setting{1, 1 << 20, 0, -1}, setting{3, 64 << 20, 0, -1}, setting{2, 4 << 20, 317, 1650}}) {
    CAPTURE(s.threads);
    CAPTURE(s.bytes);
    CAPTURE(s.first);
    const clp::synthesis_options options = fixtures::options(s.threads, s.bytes, s.first, s.last);
    std::vector<row_major> outputs;
    std::vector<clp::synthesis_job> jobs;
    outputs.reserve(weightings.size());
    for (std::size_t j = 0; j < weightings.size(); ++j) {
      const row_major& source = j % 2 ? narrow : wide;
      outputs.push_back(row_major::Constant(helper.rows(), source.cols(), sentinel));
      jobs.emplace_back(weightings[j], source, outputs.back());
    }
    const std::vector<clp::synthesis_report> reports = clp::synthesize_each(helper, overlap, jobs, options);
    REQUIRE(reports.size() == weightings.size());
    for (std::size_t j = 0; j < weightings.size(); ++j) {
      CAPTURE(fixtures::name_of(weightings[j]));
      CAPTURE(j);
      const row_major& source = j % 2 ? narrow : wide;
      row_major alone = row_major::Constant(helper.rows(), source.cols(), sentinel);
      const clp::synthesis_report own = clp::synthesize_rows(source, helper, overlap, alone, weightings[j], options);
      CHECK(fixtures::same_bits(outputs[j], alone));
      check_same_report(reports[j], own);
    }
  }
}

TEST_CASE("synthesize_each: a job without an output reports what it would have written") {
  const row_major helper = to_eigen(oracle::random_embeddings(900, 24, 0.3, 51));
  const row_major source = to_eigen(oracle::random_embeddings(700, 32, 0.5, 52));
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(300, 900, 700);
  row_major written = row_major::Constant(helper.rows(), source.cols(), sentinel);
  const std::vector<clp::synthesis_job> jobs{
      {clp::least_squares_map{}, source, written}, {clp::least_squares_map{}, source}, {clp::paper_weights{}, source}};
  const std::vector<clp::synthesis_report> reports =
      clp::synthesize_each(helper, overlap, jobs, fixtures::options(2, 1 << 20));
  check_same_report(reports[1], reports[0]);
  row_major paper = row_major::Constant(helper.rows(), source.cols(), sentinel);
  check_same_report(reports[2], clp::synthesize_rows(source, helper, overlap, paper, clp::paper_weights{}));
  CHECK(reports[1].max_output_row_norm > 0);
}

TEST_CASE("synthesize_each: progress once per block for all jobs, up to every missing row") {
  const row_major helper = to_eigen(oracle::random_embeddings(1200, 16, 0.3, 61));
  const row_major source = to_eigen(oracle::random_embeddings(800, 16, 0.5, 62));
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(300, 1200, 800);
  clp::synthesis_options options = fixtures::options(1, 1 << 20);
  std::vector<Index> calls;
  options.progress = [&](Index done, Index total) {
    CHECK(total == Index(overlap.missing_ids.size()));
    calls.push_back(done);
  };
  clp::synthesize_each(helper, overlap, {{clp::top_k_weights{}, source}, {clp::sparsemax_weights{}, source}}, options);
  REQUIRE(calls.size() > 1);
  CHECK(std::is_sorted(calls.begin(), calls.end()));
  CHECK(calls.back() == Index(overlap.missing_ids.size()));
}

TEST_CASE("synthesize_each: refusals name the job") {
  const row_major helper = to_eigen(oracle::random_embeddings(100, 8, 0.3, 71));
  const row_major source = to_eigen(oracle::random_embeddings(80, 8, 0.5, 72));
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(30, 100, 80);
  const auto empty = fixtures::thrown<clp::invalid_argument>(
      [&] { clp::synthesize_each(helper, overlap, std::vector<clp::synthesis_job>{}); });
  REQUIRE(empty);
  CHECK(std::string(empty->what()) == "clp::synthesize_each: 'jobs' is empty");
  row_major short_output(99, 8);
  const auto mismatch = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_each(helper, overlap,
                         {{clp::top_k_weights{}, source}, {clp::paper_weights{}, source, short_output}});
  });
  REQUIRE(mismatch);
  CHECK(mismatch->facts().argument == "jobs[1] output");
  row_major nan_source = source;
  nan_source(overlap.source_ids[3], 2) = std::nanf("");
  const auto nan = fixtures::thrown<clp::non_finite_input>([&] {
    clp::synthesize_each(helper, overlap, {{clp::top_k_weights{}, source}, {clp::top_k_weights{}, nan_source}});
  });
  REQUIRE(nan);
  CHECK(nan->facts().argument == "jobs[1] source");
}

TEST_CASE(
    "synthesize_each and evaluate_each with a cache: the same bits, omp's Gram matrix and the maps' moments shared") {
  const row_major helper = to_eigen(oracle::random_embeddings(1400, 24, 0.3, 81));
  const row_major source = to_eigen(oracle::random_embeddings(900, 32, 0.5, 82));
  const clp::vocabulary_overlap overlap = fixtures::spread_overlap(600, 1400, 900);
  const std::vector<clp::weighting> weightings{clp::omp_weights{6}, clp::least_squares_map{}, clp::top_k_weights{5}};
  const auto cache = std::make_shared<clp::overlap_cache>();
  clp::evaluation_options e;
  e.splits = 2;
  e.threads = 2;
  const auto alone = clp::evaluate_each(source, helper, overlap, weightings, e);
  e.cache = cache;
  const auto cached = clp::evaluate_each(source, helper, overlap, weightings, e);
  for (std::size_t j = 0; j < weightings.size(); ++j)
    for (std::size_t s = 0; s < 2; ++s) CHECK(cached[j][s].scores[0].cosine == alone[j][s].scores[0].cosine);
  // The missing rows: the cache now holds the whole overlap's Gram matrix and moments.
  clp::synthesis_options options = fixtures::options(2, 1 << 20);
  std::vector<row_major> with(weightings.size(), row_major::Zero(helper.rows(), source.cols()));
  std::vector<row_major> without = with;
  std::vector<clp::synthesis_job> cached_jobs, own_jobs;
  for (std::size_t j = 0; j < weightings.size(); ++j) {
    cached_jobs.emplace_back(weightings[j], source, with[j]);
    own_jobs.emplace_back(weightings[j], source, without[j]);
  }
  const auto own = clp::synthesize_each(helper, overlap, own_jobs, options);
  options.cache = cache;
  const auto shared = clp::synthesize_each(helper, overlap, cached_jobs, options);
  for (std::size_t j = 0; j < weightings.size(); ++j) {
    CAPTURE(fixtures::name_of(weightings[j]));
    CHECK(fixtures::same_bits(with[j], without[j]));
    check_same_report(shared[j], own[j]);
  }
  // Another overlap through the same cache: its own entries, the same results as without.
  const clp::vocabulary_overlap other = fixtures::spread_overlap(500, 1400, 900);
  row_major a = row_major::Zero(helper.rows(), source.cols()), b = a;
  clp::synthesize_each(helper, other, {{clp::omp_weights{6}, source, a}}, options);
  options.cache = nullptr;
  clp::synthesize_each(helper, other, {{clp::omp_weights{6}, source, b}}, options);
  CHECK(fixtures::same_bits(a, b));
}

}  // namespace test_synthesize_each
