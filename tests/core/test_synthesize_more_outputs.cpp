// SPDX-License-Identifier: MIT
// clp/synthesize.hpp, synthesize_rows with further outputs after `output` (an untied head,
// matrix_pairs): each gets exactly what its own synthesize_rows call would give it; and the
// policy's forms (a type, a clp::weighting, none).

#include "fixtures.hpp"

#include <clp/synthesize.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

using fixtures::error_of;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_synthesize_more_outputs {
namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using bf16_matrix = Eigen::Matrix<Eigen::bfloat16, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double sentinel = -4321.0;

struct outputs_problem {
  oracle::matrix helper = oracle::random_embeddings(600, 24, 1.0, 101);       ///< #target by d_helper
  oracle::matrix source = oracle::random_embeddings(500, 40, 0.5, 102);       ///< #source by d_source
  oracle::matrix source_head = oracle::random_embeddings(500, 28, 0.0, 103);  ///< #source by d_head
  clp::vocabulary_overlap overlap = fixtures::spread_overlap(230, 600, 500);
};

}  // namespace

TEST_CASE("synthesize_rows: a policy given as a clp::weighting, as its type or not at all") {
  const outputs_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  row_major typed(600, 40), chosen(600, 40);
  clp::synthesize_rows(source, helper, p.overlap, typed, clp::softmax_weights{5, 0.2f}, fixtures::options(1, 1 << 20));
  clp::synthesize_rows(source, helper, p.overlap, chosen, clp::make_weighting("softmax", 5, 0.2f),
                       fixtures::options(1, 1 << 20));
  CHECK(fixtures::same_bits(typed, chosen));
  // The default policy is default_weighting, the map with its neighbours' mean norms (k 10),
  // for every entry point; make_weighting("least-squares") names it too.
  static_assert(std::is_same_v<clp::default_weighting, clp::least_squares_map>);
  CHECK(clp::least_squares_map{}.norm_neighbours == 10);
  CHECK(clp::least_squares_map{}.norm_rule == clp::least_squares_map::neighbour_norm::mean);
  row_major by_default(600, 40), named(600, 40), by_name(600, 40);
  clp::synthesize_rows(source, helper, p.overlap, by_default);
  clp::synthesize_rows(source, helper, p.overlap, named, clp::least_squares_map{clp::least_squares_map::automatic, 10});
  clp::synthesize_rows(source, helper, p.overlap, by_name, clp::make_weighting("least-squares"));
  CHECK(fixtures::same_bits(by_default, named));
  CHECK(fixtures::same_bits(by_default, by_name));
}

TEST_CASE_TEMPLATE("synthesize_rows with an untied head: two synthesize_rows calls, bit for bit", L, CLP_TEST_LAYOUTS) {
  const outputs_problem p;
  auto helper = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.helper));
  auto source = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.source));
  auto source_head = fixtures::make<L>(fixtures::rounded<typename L::scalar>(p.source_head));
  // Several blocks on two threads (one thread: the next test case).
  const auto options = fixtures::options(2, 64 << 10);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    L output(600, 40, sentinel), output_head(600, 28, sentinel);
    const auto report = clp::synthesize_rows(source.get(), helper.get(), p.overlap, output.get(),
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

TEST_CASE("synthesize_rows with an untied head of another element type, a row range and one thread") {
  const outputs_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const bf16_matrix source_head =
      fixtures::make<fixtures::eigen_row_major<Eigen::bfloat16>>(fixtures::rounded<Eigen::bfloat16>(p.source_head)).m;
  const auto options = fixtures::options(1, 1 << 20, 100, 450);
  row_major output = row_major::Constant(600, 40, float(sentinel));
  bf16_matrix output_head = bf16_matrix::Constant(600, 28, Eigen::bfloat16(float(sentinel)));
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{source_head, output_head}, policy,
                         options);
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

TEST_CASE("synthesize_rows with an untied head: errors name the call and the sizes, and write nothing") {
  const outputs_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const row_major source_head = fixtures::make<fixtures::eigen_row_major<float>>(p.source_head).m;
  row_major output = row_major::Constant(600, 40, float(sentinel));
  row_major short_head = row_major::Constant(599, 28, float(sentinel));
  const std::string rows = error_of([&] {
    clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{source_head, short_head});
  });
  CHECK(rows == "clp::synthesize_rows: 'output_head' has 599 rows but 'helper' has 600");
  row_major wide_head = row_major::Constant(600, 29, float(sentinel));
  const auto cols = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{source_head, wide_head});
  });
  REQUIRE(cols);
  CHECK(cols->facts().argument == "output_head");
  CHECK(cols->problem() == "has 29 columns but 'source_head' has 28");
  const row_major few_head_rows = source_head.topRows(100);
  row_major head = row_major::Constant(600, 28, float(sentinel));
  const auto ids = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_rows(source, helper, p.overlap, output, clp::untied_head{few_head_rows, head});
  });
  REQUIRE(ids);
  CHECK(ids->facts().argument == "overlap source");
  CHECK(ids->facts().row >= 100);
  CHECK(ids->problem() == "is outside the 100 rows of 'source_head'");
  CHECK((output.array() == float(sentinel)).all());
  CHECK((head.array() == float(sentinel)).all());
}

TEST_CASE("synthesize_rows with matrix_pairs: a 1-column pair and pairs of three element types, against the oracle") {
  // An F16 embedding (the first output) with an F32 head, a double per-token bias (#vocab by 1)
  // and a bfloat16 tied copy in a padded column-major buffer: one weighting for all of them.
  const outputs_problem p;
  using half_matrix = Eigen::Matrix<Eigen::half, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const oracle::matrix source_values = fixtures::rounded<Eigen::half>(p.source);
  const oracle::matrix head_values = fixtures::rounded<float>(p.source_head);
  const oracle::matrix bias_values = oracle::random_embeddings(500, 1, 0.3, 104);
  const oracle::matrix copy_values = fixtures::rounded<Eigen::bfloat16>(oracle::random_embeddings(500, 9, 0.2, 105));
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const half_matrix source = fixtures::make<fixtures::eigen_row_major<Eigen::half>>(source_values).m;
  const row_major head = fixtures::make<fixtures::eigen_row_major<float>>(head_values).m;
  const Eigen::VectorXd bias = Eigen::Map<const Eigen::VectorXd>(bias_values.values.data(), 500);
  auto copy = fixtures::make<fixtures::raw_buffer<Eigen::bfloat16>>(copy_values);
  const auto options = fixtures::options(2, 64 << 10);
  for (const auto& policy : fixtures::every_policy()) {
    INFO("policy " << fixtures::name_of(policy));
    half_matrix output = half_matrix::Constant(600, 40, Eigen::half(float(sentinel)));
    row_major output_head = row_major::Constant(600, 28, float(sentinel));
    Eigen::VectorXd output_bias = Eigen::VectorXd::Constant(600, sentinel);
    fixtures::raw_buffer<Eigen::bfloat16> output_copy(600, 9, sentinel);
    const auto report = clp::synthesize_rows(source, helper, p.overlap, output,
                                             clp::matrix_pairs{{"lm_head", head, output_head},
                                                               {"bias", bias, output_bias},
                                                               {"encoder copy", copy.get(), output_copy.get()}},
                                             policy, options);
    CHECK(report.copied_rows == 230);
    CHECK(report.synthesized_rows == 370);
    // Each pair equals its own synthesis, bit for bit, and the oracle within its element type.
    half_matrix alone = half_matrix::Constant(600, 40, Eigen::half(float(sentinel)));
    Eigen::VectorXd alone_bias = Eigen::VectorXd::Constant(600, sentinel);
    clp::synthesize_rows(source, helper, p.overlap, alone, policy, options);
    clp::synthesize_rows(bias, helper, p.overlap, alone_bias, policy, options);
    CHECK(fixtures::same_bits(output, alone));
    CHECK(fixtures::same_bits(output_bias, alone_bias));
    struct expected {
      std::string name;
      const oracle::matrix* source;
      oracle::matrix got;
      double tolerance;  // the output's element type rounding, on top of float32
      bool per_value;    // one column: the error of each value against the largest source value
    };
    const auto got_of = [](const auto& m) {
      oracle::matrix g(m.rows(), m.cols());
      for (clp::Index r = 0; r < m.rows(); ++r)
        for (clp::Index c = 0; c < m.cols(); ++c) g(r, c) = double(static_cast<float>(m(r, c)));
      return g;
    };
    expected all[] = {{"embedding", &source_values, got_of(output), 1e-3, false},
                      {"lm_head", &head_values, got_of(output_head), 1e-5, false},
                      {"bias", &bias_values, got_of(output_bias), 1e-5, true},
                      {"encoder copy", &copy_values, fixtures::values_of(output_copy, 600, 9), 8e-3, false}};
    for (const expected& e : all) {
      INFO("pair " << e.name);
      const auto want = oracle::synthesize(p.helper, p.overlap.target_ids, p.overlap.source_ids, p.overlap.missing_ids,
                                           *e.source, fixtures::oracle_policy(policy), 1e-5);
      std::vector<clp::Index> rows;
      for (clp::Index t : p.overlap.missing_ids)
        if (!std::binary_search(want.ambiguous.begin(), want.ambiguous.end(), t)) rows.push_back(t);
      if (e.per_value) {
        // A single value can cancel to nearly zero, where a relative error means nothing.
        double largest = 0, error = 0;
        for (double x : e.source->values) largest = std::max(largest, std::abs(x));
        for (clp::Index t : rows) error = std::max(error, std::abs(e.got(t, 0) - want.output(t, 0)));
        CHECK(error <= e.tolerance * largest);
      } else {
        CHECK(fixtures::max_relative_row_error(e.got, want.output, rows) <= e.tolerance);
      }
      // Copied rows are exact (the output holds the source's element type).
      std::size_t copy_mismatches = 0;
      for (std::size_t i = 0; i < p.overlap.target_ids.size(); ++i)
        for (clp::Index c = 0; c < e.got.cols; ++c)
          copy_mismatches += e.got(p.overlap.target_ids[i], c) != (*e.source)(p.overlap.source_ids[i], c);
      CHECK(copy_mismatches == 0);
    }
  }
}

TEST_CASE("synthesize_rows with matrix_pairs: errors name the pair, and nothing is written") {
  const outputs_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const row_major source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m;
  const Eigen::VectorXf bias = Eigen::VectorXf::Ones(500);
  row_major output = row_major::Constant(600, 40, float(sentinel));
  Eigen::VectorXf short_bias = Eigen::VectorXf::Constant(599, float(sentinel));
  const std::string rows = error_of([&] {
    clp::synthesize_rows(source, helper, p.overlap, output,
                         clp::matrix_pairs{{"cls.predictions.bias", bias, short_bias}});
  });
  CHECK(rows == "clp::synthesize_rows: 'cls.predictions.bias output' has 599 rows but 'helper' has 600");
  const Eigen::VectorXf few = Eigen::VectorXf::Ones(100);
  Eigen::VectorXf out_bias = Eigen::VectorXf::Constant(600, float(sentinel));
  const auto ids = fixtures::thrown<clp::invalid_argument>([&] {
    clp::synthesize_rows(source, helper, p.overlap, output, clp::matrix_pairs{{"final_logits_bias", few, out_bias}},
                         clp::top_k_weights{5});
  });
  REQUIRE(ids);
  CHECK(ids->facts().context == "clp::synthesize_rows");
  CHECK(ids->facts().argument == "overlap source");
  CHECK(ids->problem() == "is outside the 100 rows of 'final_logits_bias source'");
  CHECK((output.array() == float(sentinel)).all());
  CHECK((out_bias.array() == float(sentinel)).all());
  // An empty list is the plain call.
  row_major plain = row_major::Constant(600, 40, float(sentinel));
  clp::synthesize_rows(source, helper, p.overlap, output, clp::matrix_pairs{}, clp::top_k_weights{5});
  clp::synthesize_rows(source, helper, p.overlap, plain, clp::top_k_weights{5});
  CHECK(fixtures::same_bits(output, plain));
}

TEST_CASE("synthesize_rows takes views whose element type is a run-time value") {
  // What a torch::Tensor or a checkpoint's tensor reaches the library as: matrix_view<const
  // void> inputs, matrix_view<void> outputs, and the same bits as the typed call.
  const outputs_problem p;
  const row_major helper = fixtures::make<fixtures::eigen_row_major<float>>(p.helper).m;
  const bf16_matrix source = fixtures::make<fixtures::eigen_row_major<float>>(p.source).m.cast<Eigen::bfloat16>();
  const row_major source_head = fixtures::make<fixtures::eigen_row_major<float>>(p.source_head).m;
  bf16_matrix typed = bf16_matrix::Constant(600, 40, Eigen::bfloat16(float(sentinel)));
  bf16_matrix untyped = typed;
  row_major typed_head = row_major::Constant(600, 28, float(sentinel)), untyped_head = typed_head;
  const auto options = fixtures::options(2, 1 << 20);
  clp::synthesize_rows(source, helper, p.overlap, typed, clp::untied_head{source_head, typed_head},
                       clp::top_k_weights{4}, options);
  const clp::matrix_view<const void> source_view = clp::make_view(source), helper_view = clp::make_view(helper),
                                     head_view = clp::make_view(source_head);
  const clp::matrix_view<void> output_view = clp::make_view(untyped), output_head_view = clp::make_view(untyped_head);
  CHECK(source_view.type() == clp::element_type::bfloat16);
  clp::synthesize_rows(source_view, helper_view, p.overlap, output_view, clp::untied_head{head_view, output_head_view},
                       clp::top_k_weights{4}, options);
  CHECK((untyped.array() == typed.array()).all());
  CHECK(fixtures::same_bits(untyped_head, typed_head));
  bf16_matrix by_pairs = bf16_matrix::Constant(600, 40, Eigen::bfloat16(0.0f));
  clp::synthesize_rows(source_view, helper_view, p.overlap, clp::matrix_view<void>(clp::make_view(by_pairs)),
                       clp::matrix_pairs{{"head", head_view, output_head_view}}, clp::top_k_weights{4}, options);
  CHECK((by_pairs.array() == typed.array()).all());
}

}  // namespace test_synthesize_more_outputs
