// SPDX-License-Identifier: MIT
// clp/synthesize.hpp: synthesize_rows against the double oracle on every layout and element
// type, at sizes spanning many blocks and panels, bit-identical for any thread count, tile
// budget and row split, its report, its edge cases and its errors.

#include "fixtures.hpp"

#include <clp/synthesize.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

using fixtures::error_of;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_synthesize {
namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double sentinel = 12345.0;  // output rows nobody may write keep it

/// One synthesis problem, in double; the values are whatever the element type under test
/// holds (see fixtures::rounded).
struct problem {
  oracle::matrix helper;  ///< #target by d_helper
  oracle::matrix source;  ///< #source by d_source
  clp::vocabulary_overlap overlap;
};

/// Random helper and source embeddings with `n_overlap` overlapping tokens spread over the
/// target ids. anisotropy > 0: mostly positive cosines; 0: about half of them negative.
problem make_problem(clp::Index target_rows, clp::Index source_rows, clp::Index n_overlap, clp::Index d_helper,
                     clp::Index d_source, double anisotropy, unsigned seed) {
  return {oracle::random_embeddings(target_rows, d_helper, anisotropy, seed),
          oracle::random_embeddings(source_rows, d_source, 0.5, seed + 1),
          fixtures::spread_overlap(n_overlap, target_rows, source_rows)};
}

template <class T>
problem rounded(const problem& p) {
  return {fixtures::rounded<T>(p.helper), fixtures::rounded<T>(p.source), p.overlap};
}

std::vector<oracle::result> oracle_results(const problem& p, const std::vector<clp::weighting>& policies,
                                           double ambiguity = 0) {
  std::vector<oracle::policy> ps;
  for (const auto& w : policies) ps.push_back(fixtures::oracle_policy(w));
  return oracle::synthesize(p.helper, p.overlap.target_ids, p.overlap.source_ids, p.overlap.missing_ids, p.source, ps,
                            ambiguity);
}

/// ambiguity: see oracle::result::ambiguous; 0 where ties are exact on purpose.
oracle::result oracle_result(const problem& p, const clp::weighting& policy, double ambiguity = 1e-5) {
  return std::move(oracle_results(p, {policy}, ambiguity)[0]);
}

/// Missing rows less the ambiguous ones.
std::vector<clp::Index> comparable_rows(const clp::vocabulary_overlap& overlap, const oracle::result& want) {
  std::vector<clp::Index> rows;
  std::set_difference(overlap.missing_ids.begin(), overlap.missing_ids.end(), want.ambiguous.begin(),
                      want.ambiguous.end(), std::back_inserter(rows));
  return rows;
}

/// The library's output and report against the oracle's: synthesised rows within `tolerance`
/// (relative row error), copied rows exact, counts equal.
void check_against(const oracle::matrix& got, const clp::synthesis_report& report, const problem& p,
                   const oracle::result& want, double tolerance) {
  clp::Index worst = -1;
  const double error = fixtures::max_relative_row_error(got, want.output, comparable_rows(p.overlap, want), &worst);
  INFO("worst row " << worst << " of " << p.overlap.missing_ids.size() << " missing; " << want.ambiguous.size()
                    << " ambiguous rows skipped");
  CHECK(error <= tolerance);
  std::size_t copy_mismatches = 0;
  for (std::size_t i = 0; i < p.overlap.target_ids.size(); ++i)
    for (clp::Index c = 0; c < got.cols; ++c)
      copy_mismatches += got(p.overlap.target_ids[i], c) != p.source(p.overlap.source_ids[i], c);
  CHECK(copy_mismatches == 0);
  CHECK(report.overlap == p.overlap.size());
  CHECK(report.copied_rows == p.overlap.size());
  CHECK(report.synthesized_rows == clp::Index(p.overlap.missing_ids.size()));
  CHECK(report.zero_norm_rows == want.zero_norm_rows);
  CHECK(report.fallback_rows == want.fallback_rows);
  CHECK(report.degenerate_rows() == want.zero_norm_rows + want.fallback_rows);
  CHECK(report.no_positive_rows == want.no_positive_rows);
  CHECK(report.inflated_rows == want.inflated_rows);
  CHECK(report.negative_sum_rows == want.negative_sum_rows);
}

/// Runs synthesize_rows on layout L (helper, source and output all of that layout); returns
/// the output as doubles.
template <class L>
oracle::matrix run(const problem& p, const clp::weighting& policy, const clp::synthesis_options& options,
                   clp::synthesis_report* report = nullptr) {
  auto helper = fixtures::make<L>(p.helper);
  auto source = fixtures::make<L>(p.source);
  L output(p.helper.rows, p.source.cols, sentinel);
  const auto r = clp::synthesize_rows(source.get(), helper.get(), p.overlap, output.get(), policy, options);
  if (report) *report = r;
  if constexpr (std::is_same_v<L, fixtures::eigen_block<typename L::scalar>>) {
    CHECK(output.border_intact());
    CHECK(helper.border_intact());
  }
  return fixtures::values_of(output, p.helper.rows, p.source.cols);
}

/// Float row-major output of synthesize_rows over float row-major inputs.
template <class Policy>
row_major synthesize(const row_major& helper, const clp::vocabulary_overlap& overlap, const row_major& source,
                     const Policy& policy, const clp::synthesis_options& options = {},
                     clp::synthesis_report* report = nullptr) {
  row_major output = row_major::Constant(helper.rows(), source.cols(), float(sentinel));
  const auto r = clp::synthesize_rows(source, helper, overlap, output, policy, options);
  if (report) *report = r;
  return output;
}

row_major to_eigen(const oracle::matrix& m) {
  row_major e(m.rows, m.cols);
  for (clp::Index r = 0; r < m.rows; ++r)
    for (clp::Index c = 0; c < m.cols; ++c) e(r, c) = static_cast<float>(m(r, c));
  return e;
}

oracle::matrix to_oracle(const row_major& e) {
  oracle::matrix m(e.rows(), e.cols());
  for (clp::Index r = 0; r < m.rows; ++r)
    for (clp::Index c = 0; c < m.cols; ++c) m(r, c) = e(r, c);
  return m;
}

/// The oracle's double mean row, rounded to float as the library stores it.
std::vector<float> float_mean(const problem& p) {
  const auto mean = oracle::mean_row(p.source, p.overlap.source_ids);
  return {mean.begin(), mean.end()};
}

bool row_is(const row_major& m, clp::Index r, const std::vector<float>& values) {
  for (clp::Index c = 0; c < m.cols(); ++c)
    if (m(r, c) != values[std::size_t(c)]) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Every layout, element type and policy against the oracle.

TEST_CASE_TEMPLATE("synthesize_rows: every policy matches the oracle on this layout", L, CLP_TEST_LAYOUTS) {
  // 700 target rows, 250 overlapping, 450 missing in blocks of 48 (a tiny tile budget).
  const auto policies = fixtures::every_policy();
  const auto options = fixtures::options(2, 64 << 10);
  for (double anisotropy : {1.0, 0.0}) {
    const problem p = rounded<typename L::scalar>(make_problem(700, 400, 250, 24, 40, anisotropy, 3));
    const auto want = oracle_results(p, policies, 1e-5);
    for (std::size_t i = 0; i < policies.size(); ++i) {
      // The paper's weights (both forms) need cosine sums away from zero: float32 and double
      // disagree where the sum cancels, and the guard's threshold may fall either way.
      if (anisotropy == 0 && (i == 0 || i == 5)) continue;
      CAPTURE(anisotropy);
      INFO("policy " << fixtures::name_of(policies[i]));
      clp::synthesis_report report;
      const oracle::matrix got = run<L>(p, policies[i], options, &report);
      check_against(got, report, p, want[i], 1e-5);
    }
  }
}

TEST_CASE_TEMPLATE("synthesize_rows: bfloat16 storage matches the oracle fed the rounded values", L,
                   CLP_TEST_BF16_LAYOUTS) {
  const auto policies = fixtures::every_policy();
  const auto options = fixtures::options(2, 64 << 10);
  const problem p = rounded<Eigen::bfloat16>(make_problem(500, 300, 200, 32, 24, 1.0, 17));
  const auto want = oracle_results(p, policies, 1e-5);
  for (std::size_t i = 0; i < policies.size(); ++i) {
    INFO("policy " << fixtures::name_of(policies[i]));
    // bfloat16 output: float32 results rounded once more, to 8 significant bits.
    clp::synthesis_report report;
    check_against(run<L>(p, policies[i], options, &report), report, p, want[i], std::ldexp(1.0, -8) + 1e-5);

    // bfloat16 inputs, float output: only float32 rounding.
    auto helper = fixtures::make<L>(p.helper);
    auto source = fixtures::make<L>(p.source);
    row_major output = row_major::Constant(p.helper.rows, p.source.cols, float(sentinel));
    report = clp::synthesize_rows(source.get(), helper.get(), p.overlap, output, policies[i], options);
    check_against(to_oracle(output), report, p, want[i], 1e-5);
  }
}

TEST_CASE("synthesize_rows: Eigen::half storage matches the oracle fed the rounded values") {
  using L = fixtures::eigen_row_major<Eigen::half>;
  const problem p = rounded<Eigen::half>(make_problem(300, 200, 120, 16, 20, 1.0, 19));
  const auto policies = fixtures::every_policy();
  const auto want = oracle_results(p, policies, 1e-5);
  for (std::size_t i = 0; i < policies.size(); ++i) {
    INFO("policy " << fixtures::name_of(policies[i]));
    clp::synthesis_report report;
    const oracle::matrix got = run<L>(p, policies[i], fixtures::options(2, 64 << 10), &report);
    check_against(got, report, p, want[i], std::ldexp(1.0, -11) + 1e-5);
  }
}

TEST_CASE("synthesize_rows: 3000 overlapping and 5000 missing rows, many blocks and panels, float32") {
  // d_helper 64, d_source 96; a 4 MB budget on 2 threads gives about a hundred blocks, and the
  // overlap makes 6 panels of 512 rows (the last one partial).
  const auto options = fixtures::options(2, std::size_t(4) << 20);
  struct data_set {
    double anisotropy;
    std::vector<clp::weighting> policies;
  };
  const data_set sets[] = {
      {1.0, {clp::paper_weights{}}},
      {0.0, {clp::clamped_weights{}, clp::top_k_weights{10}, clp::softmax_weights{10, 0.1f}, clp::sparsemax_weights{}}},
  };
  for (const auto& set : sets) {
    const problem p = make_problem(8000, 6000, 3000, 64, 96, set.anisotropy, 29);
    REQUIRE(p.overlap.missing_ids.size() == 5000);
    const row_major helper = to_eigen(p.helper);
    const row_major source = to_eigen(p.source);
    const auto want = oracle_results(p, set.policies, 2e-5);
    for (std::size_t i = 0; i < set.policies.size(); ++i) {
      CAPTURE(set.anisotropy);
      INFO("policy " << fixtures::name_of(set.policies[i]));
      clp::synthesis_report report;
      const row_major got = synthesize(helper, p.overlap, source, set.policies[i], options, &report);
      check_against(to_oracle(got), report, p, want[i], 1e-5);
      CHECK(want[i].ambiguous.size() <= 100);  // a handful of near-ties at the k-th neighbour

      // The report's summary statistics.
      std::vector<double> norms;
      for (clp::Index t : p.overlap.missing_ids) norms.push_back(oracle::norm(want[i].output.row(t), p.source.cols));
      CHECK(report.max_output_row_norm == doctest::Approx(*std::max_element(norms.begin(), norms.end())).epsilon(1e-4));
      std::vector<double> source_norms;
      for (clp::Index s : p.overlap.source_ids) source_norms.push_back(oracle::norm(p.source.row(s), p.source.cols));
      std::sort(source_norms.begin(), source_norms.end());
      CHECK(report.median_source_row_norm >= source_norms[source_norms.size() / 2 - 1] * (1 - 1e-6));
      CHECK(report.median_source_row_norm <= source_norms[source_norms.size() / 2] * (1 + 1e-6));
      if (want[i].ambiguous.empty()) {
        const auto& e = want[i].effective_neighbours;
        CHECK(report.effective_neighbours_min == doctest::Approx(*std::min_element(e.begin(), e.end())).epsilon(1e-3));
        CHECK(report.effective_neighbours_max == doctest::Approx(*std::max_element(e.begin(), e.end())).epsilon(1e-3));
      }
    }
  }
}

namespace {

/// paper_weights declaring a plain cosine row instead of scaled cosines: synthesis multiplies
/// its weights by the overlapping source rows instead of projecting through P = sum_j n_j a_j^T.
struct paper_weights_unprojected {
  static constexpr clp::weighting_input input = clp::weighting_input::cosine_row;
  clp::dense_weights operator()(float* cosines, clp::Index n, const clp::cosine_statistics& s) const {
    return clp::paper_weights{}(cosines, n, s);
  }
};

}  // namespace

TEST_CASE("synthesize_rows: paper weights through the projection agree with the weights applied row by row") {
  static_assert(clp::paper_weights::input == clp::weighting_input::scaled_cosines);
  static_assert(paper_weights_unprojected::input != clp::weighting_input::scaled_cosines);
  static_assert(clp::clamped_weights::input != clp::weighting_input::scaled_cosines);
  static_assert(clp::is_weighting_policy_v<paper_weights_unprojected>);
  // Three panels of the overlap; 1 MB gathers the panels per block, 64 MB shares them.
  const problem p = make_problem(2100, 1500, 1100, 64, 96, 1.0, 43);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  const auto want = oracle_result(p, clp::paper_weights{});
  for (std::size_t megabytes : {1, 64}) {
    CAPTURE(megabytes);
    clp::synthesis_report projected_report, direct_report;
    const row_major projected = synthesize(helper, p.overlap, source, clp::paper_weights{},
                                           fixtures::options(2, megabytes << 20), &projected_report);
    const row_major direct = synthesize(helper, p.overlap, source, paper_weights_unprojected{},
                                        fixtures::options(2, megabytes << 20), &direct_report);
    check_against(to_oracle(projected), projected_report, p, want, 1e-5);
    check_against(to_oracle(direct), direct_report, p, want, 1e-5);
    CHECK(projected_report.fallback_rows == direct_report.fallback_rows);
    CHECK(projected_report.inflated_rows == direct_report.inflated_rows);
  }
}

// ---------------------------------------------------------------------------------------------
// Determinism.

TEST_CASE("synthesize_rows: bit-identical for 1, 2 and 3 threads and any tile budget, every policy") {
  // 1100 overlapping rows (three panels of the overlap, the last one partial), 1000 missing
  // rows. With 1 MB the overlap panels are gathered by each block, with 4 and 64 MB once and
  // shared; the block heights range from 48 rows to all 1000 rows in one block.
  const problem p = make_problem(2100, 1500, 1100, 64, 96, 1.0, 41);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    const row_major reference = synthesize(helper, p.overlap, source, policy, fixtures::options(1, 1 << 20));
    for (int threads : {1, 2, 3})
      for (std::size_t megabytes : {1, 4, 64}) {
        CAPTURE(threads);
        CAPTURE(megabytes);
        const row_major again =
            synthesize(helper, p.overlap, source, policy, fixtures::options(threads, megabytes << 20));
        CHECK(fixtures::same_bits(again, reference));
      }
  }
}

TEST_CASE("synthesize_rows: a row range writes only its rows, consecutive ranges give the whole, bit for bit") {
  const problem p = make_problem(1500, 900, 500, 32, 48, 1.0, 43);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    const row_major whole = synthesize(helper, p.overlap, source, policy, fixtures::options(2, 256 << 10));
    // Ranges of one row (a single block) up to several blocks.
    row_major pieces = row_major::Constant(whole.rows(), whole.cols(), float(sentinel));
    const clp::Index cuts[] = {0, 1, 377, 701, 1499, 1500};
    for (std::size_t k = 0; k + 1 < std::size(cuts); ++k) {
      const clp::Index a = cuts[k], b = cuts[k + 1];
      CAPTURE(a);
      const auto report =
          clp::synthesize_rows(source, helper, p.overlap, pieces, policy, fixtures::options(2, 256 << 10, a, b));
      CHECK(report.copied_rows + report.synthesized_rows == b - a);
      CHECK(fixtures::same_bits(row_major(pieces.topRows(b)), row_major(whole.topRows(b))));
      CHECK((pieces.bottomRows(whole.rows() - b).array() == float(sentinel)).all());
    }
    CHECK(fixtures::same_bits(pieces, whole));

    // A range in the middle touches nothing outside it.
    row_major middle = row_major::Constant(whole.rows(), whole.cols(), float(sentinel));
    clp::synthesize_rows(source, helper, p.overlap, middle, policy, fixtures::options(1, 64 << 20, 300, 1100));
    CHECK((middle.topRows(300).array() == float(sentinel)).all());
    CHECK((middle.bottomRows(400).array() == float(sentinel)).all());
    CHECK(fixtures::same_bits(row_major(middle.middleRows(300, 800)), row_major(whole.middleRows(300, 800))));
  }

  // An empty range writes nothing; a range outside the rows is an error.
  row_major output = row_major::Constant(1500, 48, float(sentinel));
  const auto empty = clp::synthesize_rows(source, helper, p.overlap, output, clp::paper_weights{},
                                          fixtures::options(1, 1 << 20, 9, 9));
  CHECK(empty.copied_rows + empty.synthesized_rows == 0);
  CHECK((output.array() == float(sentinel)).all());
  const auto range = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_rows(source, helper, p.overlap, output, clp::paper_weights{}, fixtures::options(1, 1 << 20, 10, 9));
  });
  REQUIRE(range);
  CHECK(range->facts().context == "clp::synthesize_rows");
  CHECK(range->facts().argument == "options");
  CHECK(range->problem() == "row range [10, 9) is outside the 1500 target rows");
  CHECK_THROWS_AS(clp::synthesize_rows(source, helper, p.overlap, output, clp::paper_weights{},
                                       fixtures::options(1, 1 << 20, 0, 1501)),
                  clp::error);
  CHECK_THROWS_AS(clp::synthesize_rows(source, helper, p.overlap, output, clp::paper_weights{},
                                       fixtures::options(1, 1 << 20, -1, 5)),
                  clp::error);
}

TEST_CASE("synthesize_rows: progress reports every row once, in increasing counts") {
  const problem p = make_problem(1500, 900, 500, 32, 48, 1.0, 47);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    std::vector<std::pair<clp::Index, clp::Index>> calls;
    auto options = fixtures::options(threads, 256 << 10, 200, 1400);
    options.progress = [&](clp::Index done, clp::Index total) { calls.emplace_back(done, total); };
    row_major output(1500, 48);
    const auto report = clp::synthesize_rows(source, helper, p.overlap, output, clp::paper_weights{}, options);
    REQUIRE(calls.size() >= 2);  // several blocks
    for (std::size_t i = 0; i < calls.size(); ++i) {
      CHECK(calls[i].second == report.synthesized_rows);
      CHECK(calls[i].first > (i ? calls[i - 1].first : 0));
    }
    CHECK(calls.back().first == report.synthesized_rows);
  }
}

TEST_CASE("synthesize_rows: rows_finished hands out the finished rows in order, never written again, and rows_started "
          "leaves the rows above it untouched") {
  // The oracle is a plain run: what the callback saw of each stretch, as it was reported, must
  // be that run's rows bit for bit; the stretch is then overwritten with the sentinel, which
  // must survive the rest of the run (the engine never comes back to a finished row). When
  // rows_started reports an end, every row from the previous end on must still be the sentinel.
  const problem p = make_problem(1500, 900, 500, 32, 48, 1.0, 61);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    const row_major whole = synthesize(helper, p.overlap, source, policy, fixtures::options(1, 64 << 20));
    for (const auto& [threads, first, last] : {std::tuple{1, 0, 1500}, {3, 0, 1500}, {2, 377, 1101}, {3, 5, 6}}) {
      CAPTURE(threads);
      CAPTURE(first);
      row_major output = row_major::Constant(1500, 48, float(sentinel));
      row_major seen = row_major::Constant(1500, 48, float(sentinel));
      std::vector<clp::Index> ends, starts;
      bool untouched = true;      // at each rows_started call, every row from the previous end on unwritten
      bool started_first = true;  // no row reported finished before it was reported started
      auto options = fixtures::options(threads, 256 << 10, first, last);
      options.rows_started = [&](clp::Index end) {
        // No row at or above the previous end may have been written yet, and no worker writes
        // one while this call runs: reading them races with nothing.
        const clp::Index from = starts.empty() ? first : starts.back();
        starts.push_back(end);
        untouched = untouched && (output.middleRows(from, last - from).array() == float(sentinel)).all();
      };
      options.rows_finished = [&](clp::Index end) {
        const clp::Index from = ends.empty() ? first : ends.back();
        ends.push_back(end);
        started_first = started_first && !starts.empty() && end <= starts.back();
        if (end <= from) return;
        seen.middleRows(from, end - from) = output.middleRows(from, end - from);
        output.middleRows(from, end - from).setConstant(float(sentinel));
      };
      clp::synthesize_rows(source, helper, p.overlap, output, policy, options);
      REQUIRE(!ends.empty());
      CHECK(ends.back() == last);
      for (std::size_t i = 1; i < ends.size(); ++i) CHECK(ends[i] > ends[i - 1]);
      CHECK(untouched);
      CHECK(started_first);
      REQUIRE(!starts.empty());
      CHECK(starts.back() == last);
      for (std::size_t i = 1; i < starts.size(); ++i) CHECK(starts[i] > starts[i - 1]);
      if (threads == 1) CHECK(starts.size() >= 3);
      // Streamed, not reported once at the end: on one thread every block moves the prefix on
      // (on more, how far it moves depends on which finishes first).
      if (threads == 1) CHECK(ends.size() >= 3);
      CHECK(fixtures::same_bits(row_major(seen.middleRows(first, last - first)),
                                row_major(whole.middleRows(first, last - first))));
      CHECK((output.array() == float(sentinel)).all());
      CHECK((seen.topRows(first).array() == float(sentinel)).all());
    }
  }

  // Nothing to synthesise in the range: the copies, then one call.
  std::vector<clp::Index> ends, starts;
  auto options = fixtures::options(2, 1 << 20);
  options.rows_finished = [&](clp::Index end) { ends.push_back(end); };
  options.rows_started = [&](clp::Index end) { starts.push_back(end); };
  row_major output(1500, 48);
  const clp::Index copied = p.overlap.target_ids.front();
  options.first_row = copied;
  options.last_row = copied + 1;
  const auto report = clp::synthesize_rows(source, helper, p.overlap, output, clp::top_k_weights{}, options);
  CHECK(report.copied_rows == 1);
  CHECK(report.synthesized_rows == 0);
  CHECK(ends == std::vector<clp::Index>{copied + 1});
  CHECK(starts == std::vector<clp::Index>{copied + 1});
}

// ---------------------------------------------------------------------------------------------
// Edge cases.

TEST_CASE("synthesize_rows: an overlap of one token") {
  problem p = make_problem(40, 10, 1, 8, 6, 0.0, 51);
  p.overlap = fixtures::make_overlap({7}, {3}, 40, 10);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, {}, &report);
    // The published paper weights now divide by a negative cosine too (c / c instead of the
    // mean): through the projection q^T P a small |c| costs a few float32 roundings more.
    const double tolerance = std::holds_alternative<clp::paper_weights>(policy) ? 1e-5 : 1e-6;
    // Whatever the weights, every row becomes source row 3: its own weight, or the mean of one row.
    for (clp::Index t = 0; t < 40; ++t)
      for (clp::Index c = 0; c < 6; ++c) CHECK(got(t, c) == doctest::Approx(source(3, c)).epsilon(tolerance));
    check_against(to_oracle(got), report, p, oracle_result(p, policy), tolerance);
    CHECK(report.copied_rows == 1);
    CHECK(report.synthesized_rows == 39);
  }
}

TEST_CASE("synthesize_rows: every target token overlapping, nothing to synthesise") {
  problem p = make_problem(30, 50, 30, 8, 6, 1.0, 53);
  std::vector<clp::Index> targets, sources;
  for (clp::Index t = 0; t < 30; ++t) {
    targets.push_back(t);
    sources.push_back(49 - t);
  }
  p.overlap = fixtures::make_overlap(targets, sources, 30, 50);
  REQUIRE(p.overlap.missing_ids.empty());
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, {}, &report);
    CHECK(fixtures::same_bits(got, row_major(source.colwise().reverse().topRows(30))));
    CHECK(report.copied_rows == 30);
    CHECK(report.synthesized_rows == 0);
    CHECK(report.degenerate_rows() == 0);
  }
}

TEST_CASE("synthesize_rows: zero-norm helper rows, missing and overlapping") {
  problem p = make_problem(300, 200, 100, 16, 12, 1.0, 59);
  const clp::Index zero_missing[] = {p.overlap.missing_ids[0], p.overlap.missing_ids[57], p.overlap.missing_ids.back()};
  const clp::Index zero_overlapping = p.overlap.target_ids[10];
  for (clp::Index t : zero_missing)
    for (clp::Index c = 0; c < 16; ++c) p.helper(t, c) = 0;
  for (clp::Index c = 0; c < 16; ++c) p.helper(zero_overlapping, c) = 0;
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  const std::vector<float> mean = float_mean(p);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, fixtures::options(2, 64 << 10), &report);
    CHECK(got.allFinite());
    CHECK(report.zero_norm_rows == 3);
    CHECK(report.fallback_rows == 0);
    for (clp::Index t : zero_missing) CHECK(row_is(got, t, mean));
    // The zero overlapping row is similar to nothing; everything else is as usual.
    check_against(to_oracle(got), report, p, oracle_result(p, policy), 1e-5);
  }
}

TEST_CASE("synthesize_rows: padding rows are written as before but counted apart from the weighting's diagnostics") {
  // 40 missing rows are padding: 30 with zero helper rows (the usual padding), 10 with random
  // ones. Their values are those of any missing row; only the report tells them apart.
  problem p = make_problem(300, 200, 100, 16, 12, 1.0, 71);
  const std::vector<clp::Index> zero_padding(p.overlap.missing_ids.end() - 30, p.overlap.missing_ids.end());
  for (clp::Index t : zero_padding)
    for (clp::Index c = 0; c < 16; ++c) p.helper(t, c) = 0;
  clp::vocabulary_overlap padded = p.overlap;
  for (std::size_t i = 0; i < 10; ++i) padded.unnamed_ids.push_back(p.overlap.missing_ids[7 * i + 3]);
  padded.unnamed_ids.insert(padded.unnamed_ids.end(), zero_padding.begin(), zero_padding.end());
  std::vector<clp::Index> named;  // the missing rows a token names
  std::set_difference(padded.missing_ids.begin(), padded.missing_ids.end(), padded.unnamed_ids.begin(),
                      padded.unnamed_ids.end(), std::back_inserter(named));
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    clp::synthesis_report report, unpadded_report;
    const row_major got = synthesize(helper, padded, source, policy, fixtures::options(2, 64 << 10), &report);
    const row_major unpadded =
        synthesize(helper, p.overlap, source, policy, fixtures::options(2, 64 << 10), &unpadded_report);
    CHECK(fixtures::same_bits(got, unpadded));
    CHECK(unpadded_report.padding_rows == 0);
    CHECK(unpadded_report.zero_norm_rows == 30);
    CHECK(report.padding_rows == 40);
    CHECK(report.synthesized_rows == 200);
    CHECK(report.zero_norm_rows == 0);
    // The oracle over the named rows only.
    const auto want = oracle::synthesize(p.helper, p.overlap.target_ids, p.overlap.source_ids, named, p.source,
                                         fixtures::oracle_policy(policy));
    CHECK(report.fallback_rows == want.fallback_rows);
    CHECK(report.no_positive_rows == want.no_positive_rows);
    CHECK(report.inflated_rows == want.inflated_rows);
    const auto [least, most] = std::minmax_element(want.effective_neighbours.begin(), want.effective_neighbours.end());
    CHECK(report.effective_neighbours_min == doctest::Approx(*least).epsilon(1e-4));
    CHECK(report.effective_neighbours_max == doctest::Approx(*most).epsilon(1e-4));
    CHECK(report.effective_neighbours_max < 100);  // no padding row counted as the mean
    double max_norm = 0;
    for (clp::Index t : named) max_norm = std::max(max_norm, double(got.row(t).norm()));
    CHECK(report.max_output_row_norm == doctest::Approx(max_norm).epsilon(1e-6));
  }
  // Unnamed ids must be missing ids.
  clp::vocabulary_overlap wrong = padded;
  wrong.unnamed_ids = {p.overlap.target_ids[0]};
  row_major output(300, 12);
  const auto unnamed =
      fixtures::thrown<clp::invalid_argument>([&] { clp::synthesize_rows(source, helper, wrong, output); });
  REQUIRE(unnamed);
  CHECK(unnamed->facts().argument == "overlap");
  CHECK(unnamed->problem() == "has unnamed ids that are not missing ids");
  // Only padding in the row range: counted, no statistics.
  clp::synthesis_report only_padding;
  synthesize(helper, padded, source, clp::top_k_weights{5},
             fixtures::options(1, 1 << 20, zero_padding.front(), zero_padding.back() + 1), &only_padding);
  CHECK(only_padding.padding_rows == 30);
  CHECK(only_padding.effective_neighbours_max == 0);
}

TEST_CASE("synthesize_rows: negative similarity sums and rows without a positive cosine") {
  // Anisotropic data, and five missing helper rows pointing against the shared direction: all
  // their cosines are negative.
  problem p = make_problem(300, 200, 100, 16, 12, 3.0, 61);
  std::vector<double> direction(16, 0.0);
  for (clp::Index t : p.overlap.target_ids)
    for (clp::Index c = 0; c < 16; ++c) direction[std::size_t(c)] += p.helper(t, c);
  const std::vector<clp::Index> against(p.overlap.missing_ids.begin() + 20, p.overlap.missing_ids.begin() + 25);
  for (clp::Index t : against)
    for (clp::Index c = 0; c < 16; ++c) p.helper(t, c) = double(static_cast<float>(-direction[std::size_t(c)] / 100));
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  const std::vector<float> mean = float_mean(p);

  struct expectation {
    clp::weighting policy;
    bool falls_back;
  };
  // The published paper weights divide by the negative sum: an all-negative row gets positive
  // weights adding up to one, no fallback. The guarded form falls back.
  const expectation cases[] = {
      {clp::guarded_paper_weights{}, true},   {clp::clamped_weights{}, true},    {clp::top_k_weights{5}, true},
      {clp::softmax_weights{5, 0.1f}, false}, {clp::sparsemax_weights{}, false}, {clp::paper_weights{}, false},
  };
  for (const auto& [policy, falls_back] : cases) {
    INFO("policy " << fixtures::name_of(policy));
    const auto want = oracle_result(p, policy);
    REQUIRE(want.no_positive_rows == 5);
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, {}, &report);
    CHECK(report.no_positive_rows == 5);
    CHECK(report.negative_sum_rows == 5);
    CHECK(report.fallback_rows == (falls_back ? 5 : 0));
    CHECK(report.zero_norm_rows == 0);
    for (clp::Index t : against) CHECK(row_is(got, t, mean) == falls_back);
    check_against(to_oracle(got), report, p, want, 1e-5);
  }
}

TEST_CASE("synthesize_rows: a small positive cosine sum inflates the paper's row, and the report says so") {
  // Overlap helper rows (1, 0) and (-0.75, 0.5); the missing row (1, 0) has cosines 1 and
  // -0.832: sum 0.168, weights 5.95 and -4.95.
  problem p;
  p.helper = oracle::matrix(3, 2);
  p.helper(0, 0) = 1;
  p.helper(1, 0) = -0.75;
  p.helper(1, 1) = 0.5;
  p.helper(2, 0) = 1;
  p.source = oracle::random_embeddings(2, 5, 0.0, 67);
  p.overlap = fixtures::make_overlap({0, 1}, {0, 1}, 3, 2);
  const auto want = oracle_result(p, clp::paper_weights{});
  REQUIRE(want.inflated_rows == 1);
  clp::synthesis_report report;
  const row_major got =
      synthesize(to_eigen(p.helper), p.overlap, to_eigen(p.source), clp::paper_weights{}, {}, &report);
  check_against(to_oracle(got), report, p, want, 1e-5);
  CHECK(report.inflated_rows == 1);
  CHECK(report.effective_neighbours_min == doctest::Approx(want.effective_neighbours[0]).epsilon(1e-5));
  CHECK(report.max_output_row_norm > 4 * report.median_source_row_norm);
  // Clamping removes the inflation: the row is source row 0.
  const row_major clamped =
      synthesize(to_eigen(p.helper), p.overlap, to_eigen(p.source), clp::clamped_weights{}, {}, &report);
  CHECK(report.inflated_rows == 0);
  CHECK(row_is(clamped, 2, {clamped.row(0).data(), clamped.row(0).data() + 5}));
}

TEST_CASE("synthesize_rows: ties at the k-th neighbour, k past the overlap, temperature limits") {
  // Exact helper rows, so float32 cosines tie exactly: overlap rows e0, e1, e0, e0, e2, (1,1,1,1)
  // (norm 2) and missing rows e0 and e3.
  problem p;
  p.helper = oracle::matrix(8, 4);
  const int ones[][2] = {{0, 0}, {1, 1}, {2, 0}, {3, 0}, {4, 2}, {6, 0}, {7, 3}};
  for (const auto& [r, c] : ones) p.helper(r, c) = 1;
  for (clp::Index c = 0; c < 4; ++c) p.helper(5, c) = 1;
  p.source = oracle::random_embeddings(6, 5, 0.0, 71);
  p.overlap = fixtures::make_overlap({0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, 8, 6);
  REQUIRE(p.overlap.missing_ids == std::vector<clp::Index>{6, 7});
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  auto synthesized_row = [&](const clp::weighting& policy, clp::Index t, int threads = 1) {
    const row_major out = synthesize(helper, p.overlap, source, policy, fixtures::options(threads, 1 << 20));
    return std::vector<double>(out.row(t).data(), out.row(t).data() + 5);
  };
  auto source_mix = [&](std::vector<std::pair<clp::Index, double>> parts) {
    std::vector<double> row(5, 0.0);
    for (const auto& [s, w] : parts)
      for (clp::Index c = 0; c < 5; ++c) row[std::size_t(c)] += w * float(p.source(s, c));
    return row;
  };
  auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::abs(a[i] - b[i]) > 1e-6 * (1 + std::abs(b[i]))) return false;
    return true;
  };
  // Row 6 = e0: cosines 1, 0, 1, 1, 0, 0.5. Top-2 are overlap 0 and 2 (3 ties with them, loses).
  CHECK(close(synthesized_row(clp::top_k_weights{2}, 6), source_mix({{0, 0.5}, {2, 0.5}})));
  CHECK(close(synthesized_row(clp::top_k_weights{2}, 6, 3), source_mix({{0, 0.5}, {2, 0.5}})));
  CHECK(close(synthesized_row(clp::top_k_weights{4}, 6),
              source_mix({{0, 1 / 3.5}, {2, 1 / 3.5}, {3, 1 / 3.5}, {5, 0.5 / 3.5}})));
  // Softmax with a tiny temperature: the nearest neighbours only, here a three-way tie.
  CHECK(close(synthesized_row(clp::softmax_weights{2, 1e-6f}, 6), source_mix({{0, 0.5}, {2, 0.5}})));
  CHECK(close(synthesized_row(clp::softmax_weights{6, 1e-6f}, 6),
              source_mix({{0, 1 / 3.0}, {2, 1 / 3.0}, {3, 1 / 3.0}})));
  // ... and a huge one: uniform over the k.
  CHECK(close(synthesized_row(clp::softmax_weights{4, 1e6f}, 6),
              source_mix({{0, 0.25}, {2, 0.25}, {3, 0.25}, {5, 0.25}})));
  // k past the overlap: the whole overlap; top-k is then the clamped weighting.
  CHECK(close(synthesized_row(clp::top_k_weights{50}, 6), synthesized_row(clp::clamped_weights{}, 6)));
  CHECK(close(synthesized_row(clp::softmax_weights{50, 1e6f}, 6),
              source_mix({{0, 1 / 6.0}, {1, 1 / 6.0}, {2, 1 / 6.0}, {3, 1 / 6.0}, {4, 1 / 6.0}, {5, 1 / 6.0}})));
  // Row 7 = e3: cosines 0, 0, 0, 0, 0, 0.5. Top-1 is overlap 5; top-3 ties among zeros go to 0, 1.
  CHECK(close(synthesized_row(clp::top_k_weights{3}, 7), source_mix({{5, 1.0}})));
  CHECK(
      close(synthesized_row(clp::softmax_weights{3, 1e6f}, 7), source_mix({{5, 1 / 3.0}, {0, 1 / 3.0}, {1, 1 / 3.0}})));
  // Sparsemax on row 6: support {0, 2, 3} (the 0.5 is not within tau = 2/3), a third each.
  CHECK(close(synthesized_row(clp::sparsemax_weights{}, 6), source_mix({{0, 1 / 3.0}, {2, 1 / 3.0}, {3, 1 / 3.0}})));
  for (const auto& policy : fixtures::every_policy()) {
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, {}, &report);
    check_against(to_oracle(got), report, p, oracle_result(p, policy, 0), 1e-6);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors: every one is reported before any output row is written.

TEST_CASE("synthesize_rows: NaN or infinity in the inputs is an error naming the row") {
  const problem p = make_problem(200, 150, 60, 8, 6, 1.0, 73);
  const clp::Index missing = p.overlap.missing_ids[17];
  const clp::Index overlapping = p.overlap.target_ids[5];
  const clp::Index source_row = p.overlap.source_ids[9];
  struct poison {
    bool in_helper;
    clp::Index row, column;
    float value;
    std::string message;
  };
  const poison cases[] = {
      {true, missing, 3, NAN, "'helper' row " + std::to_string(missing) + " column 3 is NaN or infinite"},
      {true, overlapping, 0, INFINITY, "'helper' row " + std::to_string(overlapping) + " column 0 is NaN or infinite"},
      {false, source_row, 5, -INFINITY, "'source' row " + std::to_string(source_row) + " column 5 is NaN or infinite"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    row_major helper = to_eigen(p.helper);
    row_major source = to_eigen(p.source);
    (c.in_helper ? helper : source)(c.row, c.column) = c.value;
    row_major output = row_major::Constant(200, 6, float(sentinel));
    for (const auto& policy : fixtures::every_policy()) {
      const auto e = fixtures::thrown([&] { clp::synthesize_rows(source, helper, p.overlap, output, policy); });
      REQUIRE(e);
      CHECK(e->kind() == clp::error_kind::non_finite_input);
      CHECK(e->facts().context == "clp::synthesize_rows");
      CHECK(e->facts().argument == (c.in_helper ? "helper" : "source"));
      CHECK(e->facts().row == c.row);
      CHECK(e->facts().column == c.column);
      CHECK(std::string(e->what()) == "clp::synthesize_rows: " + c.message);  // as a user reads it
    }
    CHECK((output.array() == float(sentinel)).all());
  }
  // A non-finite value the synthesis never reads is no error: a source row outside the overlap.
  row_major source = to_eigen(p.source);
  clp::Index unused = 0;
  while (std::find(p.overlap.source_ids.begin(), p.overlap.source_ids.end(), unused) != p.overlap.source_ids.end())
    ++unused;
  source(unused, 0) = NAN;
  row_major output(200, 6);
  CHECK_NOTHROW(clp::synthesize_rows(source, to_eigen(p.helper), p.overlap, output, clp::paper_weights{}));
  CHECK(output.allFinite());
}

TEST_CASE("synthesize_rows: mismatched sizes, ids outside the matrices and an empty overlap are errors") {
  const problem p = make_problem(200, 150, 60, 8, 6, 1.0, 79);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  row_major output = row_major::Constant(200, 6, float(sentinel));
  // The refusal of each call: which argument, which row, what is wrong.
  struct refusal {
    std::string argument;
    clp::Index row;
    std::string problem;
  };
  auto refused = [&](const clp::vocabulary_overlap& overlap, const row_major& h, const row_major& s, row_major& o,
                     const refusal& want) {
    const auto e =
        fixtures::thrown<clp::invalid_argument>([&] { clp::synthesize_rows(s, h, overlap, o, clp::paper_weights{}); });
    REQUIRE(e);
    INFO(e->what());
    CHECK(e->facts().context == "clp::synthesize_rows");
    CHECK(e->facts().argument == want.argument);
    CHECK(e->facts().row == want.row);
    CHECK(e->problem() == want.problem);
  };

  row_major short_output(199, 6);
  refused(p.overlap, helper, source, short_output, {"output", -1, "has 199 rows but 'helper' has 200"});
  CHECK(error_of([&] { clp::synthesize_rows(source, helper, p.overlap, short_output); }) ==
        "clp::synthesize_rows: 'output' has 199 rows but 'helper' has 200");
  row_major narrow_output(200, 5);
  refused(p.overlap, helper, source, narrow_output, {"output", -1, "has 5 columns but 'source' has 6"});
  row_major no_columns(200, 0);
  refused(p.overlap, no_columns, source, output, {"helper", -1, "has no columns"});

  clp::vocabulary_overlap o = p.overlap;
  o.target_ids.back() = 200;
  refused(o, helper, source, output, {"overlap target", 200, "is outside the 200 rows of 'helper'"});
  CHECK(error_of([&] { clp::synthesize_rows(source, helper, o, output); }) ==
        "clp::synthesize_rows: 'overlap target' row 200 is outside the 200 rows of 'helper'");
  o = p.overlap;
  o.missing_ids.back() = 250;
  refused(o, helper, source, output, {"missing target", 250, "is outside the 200 rows of 'helper'"});
  o = p.overlap;
  o.source_ids[4] = 150;
  refused(o, helper, source, output, {"overlap source", 150, "is outside the 150 rows of 'source'"});
  o = p.overlap;
  o.source_ids[4] = -1;
  refused(o, helper, source, output, {"overlap source", -1, "id -1 is negative: not a row of 'source'"});
  o = p.overlap;
  std::swap(o.target_ids[2], o.target_ids[3]);
  refused(o, helper, source, output, {"overlap target", -1, "ids are not strictly ascending at position 3"});
  o = p.overlap;
  o.source_ids.pop_back();
  refused(o, helper, source, output, {"overlap", -1, "has 60 target ids but 59 source ids"});
  o = p.overlap;
  o.target_ids.clear();
  o.source_ids.clear();
  refused(o, helper, source, output, {"overlap", -1, "is empty"});
  CHECK((output.array() == float(sentinel)).all());
}

// ---------------------------------------------------------------------------------------------
// Orthogonal matching pursuit.

TEST_CASE_TEMPLATE("synthesize_rows: omp_weights matches the double oracle on this layout", L, CLP_TEST_LAYOUTS) {
  // 700 target rows, 250 overlapping, 450 missing in blocks of 48 (a tiny tile budget, the
  // overlap panels gathered by every block) and in shared panels.
  for (double anisotropy : {1.0, 0.0})
    for (clp::Index k : {1, 4, 8}) {
      CAPTURE(anisotropy);
      CAPTURE(k);
      const problem p = rounded<typename L::scalar>(make_problem(700, 400, 250, 24, 40, anisotropy, 83));
      clp::omp_weights policy{k};
      const auto want = oracle_result(p, policy, 1e-5);
      CHECK(want.ambiguous.size() <= 5);
      // Batch-OMP (the Gram matrix fits) and one product per step (it may not).
      for (std::size_t gram_bytes : {std::size_t(1) << 30, std::size_t(0)})
        for (std::size_t tile : {std::size_t(64) << 10, std::size_t(8) << 20}) {
          CAPTURE(gram_bytes);
          policy.max_gram_bytes = gram_bytes;
          clp::synthesis_report report;
          const oracle::matrix got = run<L>(p, policy, fixtures::options(2, tile), &report);
          check_against(got, report, p, want, 1e-5);
        }
    }
}

TEST_CASE("synthesize_rows: omp_weights is bit-identical for 1, 2 and 3 threads and any tile budget") {
  const problem p = make_problem(2100, 1500, 1100, 64, 96, 1.0, 89);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (std::size_t gram_bytes : {std::size_t(1) << 30, std::size_t(0)}) {
    CAPTURE(gram_bytes);
    clp::omp_weights policy{6};
    policy.max_gram_bytes = gram_bytes;
    const row_major reference = synthesize(helper, p.overlap, source, policy, fixtures::options(1, 1 << 20));
    for (int threads : {1, 2, 3})
      for (std::size_t megabytes : {1, 4, 64}) {
        CAPTURE(threads);
        CAPTURE(megabytes);
        CHECK(fixtures::same_bits(
            synthesize(helper, p.overlap, source, policy, fixtures::options(threads, megabytes << 20)), reference));
      }
    // Row ranges give the same rows.
    row_major pieces = row_major::Constant(reference.rows(), reference.cols(), float(sentinel));
    for (auto [a, b] : {std::pair<clp::Index, clp::Index>{0, 777}, {777, 2100}})
      clp::synthesize_rows(source, helper, p.overlap, pieces, policy, fixtures::options(2, 256 << 10, a, b));
    CHECK(fixtures::same_bits(pieces, reference));
  }
}

TEST_CASE("synthesize_rows: omp_weights reconstructs a helper row in the span of overlapping rows exactly") {
  // Overlapping helper rows (raw): 2 e0, e1, e1 again (a duplicate: never chosen twice, the
  // lower index wins the tie), e2 + e3, 0 (zero: never chosen). Missing rows: 3 e1 - 2 e0
  // = 1.5 (2 e0)... with coefficients of the raw rows, and e3 (not in the span of fewer than
  // all of them), and a row orthogonal to every overlapping row (falls back).
  problem p;
  p.helper = oracle::matrix(9, 5);
  p.helper(0, 0) = 2;                       // overlap 0
  p.helper(1, 1) = 1;                       // overlap 1
  p.helper(2, 1) = 1;                       // overlap 2, same as 1
  p.helper(3, 2) = 1, p.helper(3, 3) = 1;   // overlap 3
  /* row 4 stays zero */                    // overlap 4
  p.helper(5, 0) = -2, p.helper(5, 1) = 3;  // missing: -1 * (2 e0) + 3 * e1
  p.helper(6, 3) = 1;                       // missing: e3, only partly reachable
  p.helper(7, 4) = 1;                       // missing: orthogonal to the overlap
  p.helper(8, 2) = 2, p.helper(8, 3) = 2;   // missing: 2 (e2 + e3)
  p.source = oracle::random_embeddings(5, 6, 0.0, 97);
  p.overlap = fixtures::make_overlap({0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}, 9, 5);
  const row_major helper = to_eigen(p.helper);
  const row_major source = to_eigen(p.source);
  for (std::size_t gram_bytes : {std::size_t(1) << 30, std::size_t(0)}) {  // Batch-OMP, products
    CAPTURE(gram_bytes);
    clp::omp_weights policy{3};
    policy.max_gram_bytes = gram_bytes;
    clp::synthesis_report report;
    const row_major got = synthesize(helper, p.overlap, source, policy, {}, &report);
    const auto expect_row = [&](clp::Index t, std::vector<std::pair<clp::Index, double>> terms) {
      for (clp::Index c = 0; c < 6; ++c) {
        double want = 0;
        for (const auto& [j, w] : terms) want += w * double(source(j, c));
        CHECK(double(got(t, c)) == doctest::Approx(want).epsilon(1e-6).scale(1));
      }
    };
    expect_row(5, {{0, -1.0}, {1, 3.0}});
    expect_row(6, {{3, 0.5}});  // the projection of e3 on e2 + e3
    expect_row(8, {{3, 2.0}});
    CHECK(report.fallback_rows == 1);  // row 7
    const std::vector<float> mean = float_mean(p);
    CHECK(row_is(got, 7, mean));
    check_against(to_oracle(got), report, p, oracle_result(p, clp::omp_weights{3}, 0), 1e-6);
  }
}

TEST_CASE("make_weighting and is_weighting_policy: omp") {
  static_assert(clp::is_weighting_policy_v<clp::omp_weights>);
  const auto omp = clp::make_weighting("omp");
  REQUIRE(std::holds_alternative<clp::omp_weights>(omp));
  CHECK(std::get<clp::omp_weights>(omp).k == 8);  // tokensurgeon's default
  CHECK(std::get<clp::omp_weights>(clp::make_weighting("omp", 3)).k == 3);
  CHECK(std::get<clp::top_k_weights>(clp::make_weighting("top-k")).k == 10);
  CHECK(clp::omp_weights::input == clp::weighting_input::helper_rows);
}

}  // namespace test_synthesize
