// SPDX-License-Identifier: MIT
// clp/transfer.hpp: the one-call transfer is synthesize_rows over all rows, and an untied head
// gets exactly what a second synthesize_rows call would give it.

#include "fixtures.hpp"

#include <clp/transfer.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <string>
#include <type_traits>
#include <vector>

using fixtures::error_of;

namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using bf16_matrix = Eigen::Matrix<Eigen::bfloat16, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double sentinel = -4321.0;

struct transfer_problem {
  oracle::matrix helper = oracle::random_embeddings(600, 24, 1.0, 101);       ///< #target by d_helper
  oracle::matrix source = oracle::random_embeddings(500, 40, 0.5, 102);       ///< #source by d_source
  oracle::matrix source_head = oracle::random_embeddings(500, 28, 0.0, 103);  ///< #source by d_head
  clp::vocabulary_overlap overlap = fixtures::spread_overlap(230, 600, 500);
};

}  // namespace

TEST_CASE_TEMPLATE("transfer: equals synthesize_rows over all rows, and the oracle, on this layout", L,
                   CLP_TEST_LAYOUTS) {
  const transfer_problem p;
  const auto options = fixtures::options(2, 64 << 10);
  auto helper = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.helper));
  auto source = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.source));
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    L by_transfer(600, 40, sentinel), by_synthesis(600, 40, sentinel);
    const auto report = clp::transfer(source.get(), helper.get(), p.overlap, by_transfer.get(), policy, options);
    clp::synthesize_rows(source.get(), helper.get(), p.overlap, by_synthesis.get(), policy, options);
    const oracle::matrix got = fixtures::values_of(by_transfer, 600, 40);
    CHECK(got.values == fixtures::values_of(by_synthesis, 600, 40).values);
    CHECK(report.copied_rows == 230);
    CHECK(report.synthesized_rows == 370);

    const auto want = oracle::synthesize(p.helper, p.overlap.target_ids, p.overlap.source_ids, p.overlap.missing_ids,
                                         p.source, fixtures::oracle_policy(policy), 1e-5);
    std::vector<clp::Index> rows;
    for (clp::Index t = 0; t < 600; ++t)
      if (!std::binary_search(want.ambiguous.begin(), want.ambiguous.end(), t)) rows.push_back(t);
    CHECK(fixtures::max_relative_row_error(got, want.output, rows) <= 1e-5);
  }
}

TEST_CASE("transfer: a policy given as a clp::weighting or as its type gives the same rows") {
  const transfer_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  row_major typed(600, 40), chosen(600, 40);
  clp::transfer(source, helper, p.overlap, typed, clp::softmax_weights{5, 0.2f}, fixtures::options(1, 1 << 20));
  clp::transfer(source, helper, p.overlap, chosen, clp::make_weighting("softmax", 5, 0.2f), fixtures::options(1, 1 << 20));
  CHECK(fixtures::same_bits(typed, chosen));
  // The default policy is the paper's.
  row_major by_default(600, 40), paper(600, 40);
  clp::transfer(source, helper, p.overlap, by_default);
  clp::transfer(source, helper, p.overlap, paper, clp::paper_weights{});
  CHECK(fixtures::same_bits(by_default, paper));
}

TEST_CASE_TEMPLATE("transfer with an untied head: two synthesize_rows calls, bit for bit", L, CLP_TEST_LAYOUTS) {
  const transfer_problem p;
  auto helper = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.helper));
  auto source = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.source));
  auto source_head = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.source_head));
  // Several blocks on two threads (one thread: the next test case).
  const auto options = fixtures::options(2, 64 << 10);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    L output(600, 40, sentinel), output_head(600, 28, sentinel);
    const auto report = clp::transfer(source.get(), helper.get(), p.overlap, output.get(),
                                      clp::untied_head{source_head.get(), output_head.get()}, policy, options);
    L alone(600, 40, sentinel), alone_head(600, 28, sentinel);
    const auto report_alone = clp::synthesize_rows(source.get(), helper.get(), p.overlap, alone.get(), policy, options);
    clp::synthesize_rows(source_head.get(), helper.get(), p.overlap, alone_head.get(), policy, options);
    CHECK(fixtures::values_of(output, 600, 40).values == fixtures::values_of(alone, 600, 40).values);
    CHECK(fixtures::values_of(output_head, 600, 28).values == fixtures::values_of(alone_head, 600, 28).values);
    // The report describes the first output, as the single call's does.
    CHECK(report.copied_rows == report_alone.copied_rows);
    CHECK(report.synthesized_rows == report_alone.synthesized_rows);
    CHECK(report.fallback_rows == report_alone.fallback_rows);
    CHECK(report.max_output_row_norm == report_alone.max_output_row_norm);
    CHECK(report.median_source_row_norm == report_alone.median_source_row_norm);
  }
}

TEST_CASE("transfer with an untied head of another element type, a row range and one thread") {
  const transfer_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const bf16_matrix source_head =
      fixtures::make<fixtures::eigen_row_major<Eigen::bfloat16>>(fixtures::rounded<Eigen::bfloat16>(p.source_head)).m;
  const auto options = fixtures::options(1, 1 << 20, 100, 450);
  row_major output = row_major::Constant(600, 40, float(sentinel));
  bf16_matrix output_head = bf16_matrix::Constant(600, 28, Eigen::bfloat16(float(sentinel)));
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    clp::transfer(source, helper, p.overlap, output, clp::untied_head{source_head, output_head}, policy, options);
    row_major alone = row_major::Constant(600, 40, float(sentinel));
    bf16_matrix alone_head = bf16_matrix::Constant(600, 28, Eigen::bfloat16(float(sentinel)));
    clp::synthesize_rows(source, helper, p.overlap, alone, policy, options);
    clp::synthesize_rows(source_head, helper, p.overlap, alone_head, policy, options);
    CHECK(fixtures::same_bits(output, alone));
    CHECK(fixtures::same_bits(output_head, alone_head));
  }
  const float rounded_sentinel = static_cast<float>(Eigen::bfloat16(float(sentinel)));
  CHECK(static_cast<float>(output_head(99, 0)) == rounded_sentinel);
  CHECK(static_cast<float>(output_head(450, 27)) == rounded_sentinel);
}

TEST_CASE("transfer: errors name the call and the sizes, and write nothing") {
  const transfer_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const row_major source_head = fixtures::make<fixtures::eigen_row_major<float>>(p.source_head).m;
  row_major output = row_major::Constant(600, 40, float(sentinel));
  row_major short_head = row_major::Constant(599, 28, float(sentinel));
  const std::string rows = error_of([&] {
    clp::transfer(source, helper, p.overlap, output, clp::untied_head{source_head, short_head});
  });
  CHECK(rows.find("clp::transfer") == 0);
  CHECK(rows.find("has 599 rows but 'helper' has 600") != std::string::npos);
  row_major wide_head = row_major::Constant(600, 29, float(sentinel));
  const std::string cols = error_of([&] {
    clp::transfer(source, helper, p.overlap, output, clp::untied_head{source_head, wide_head});
  });
  CHECK(cols.find("'output_head' has 29 columns but 'source_head' has 28") != std::string::npos);
  const row_major few_head_rows = source_head.topRows(100);
  row_major head = row_major::Constant(600, 28, float(sentinel));
  const std::string ids = error_of([&] {
    clp::transfer(source, helper, p.overlap, output, clp::untied_head{few_head_rows, head});
  });
  CHECK(ids.find("is outside the 100 rows of 'source_head'") != std::string::npos);
  CHECK((output.array() == float(sentinel)).all());
  CHECK((head.array() == float(sentinel)).all());
  row_major narrow = row_major::Constant(600, 39, float(sentinel));
  CHECK(error_of([&] { clp::transfer(source, helper, p.overlap, narrow); }).find("clp::synthesize_rows") == 0);
}
