// The paper's baselines: --method overlap-random copies the overlapping rows and draws the
// others from the source's per-dimension normal; --method random draws every row. Draws are
// finite, a function of --seed only, and differ between seeds.
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "clp_oracle.hpp"
#include "model_fixtures.hpp"
#include "output_checks.hpp"
#include "harness.hpp"

using namespace program_test;

namespace {

/// Runs `--method method --seed seed` into its own folder under the workspace; returns it.
fs::path run_baseline(const workspace& ws, const std::string& method, const std::string& seed, const std::string& tag) {
  const fs::path output = ws.dir / ("baseline-" + tag) / "model";
  fs::create_directories(output.parent_path());
  const program_result result = run_program(ws.transfer({"--method", method, "--seed", seed, "--quiet"}, output));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  return output;
}

/// Drawn rows look like the per-column normal of `source`: over the drawn rows, each column's
/// mean lies within a few standard errors of the source column's, and its spread is close.
void check_drawn_statistics(const matrix& got, const std::vector<std::int64_t>& drawn, const matrix& source) {
  double mean_error = 0, spread_error = 0;
  for (std::int64_t c = 0; c < source.cols; ++c) {
    double source_mean = 0, source_var = 0, mean = 0, var = 0;
    for (std::int64_t r = 0; r < source.rows; ++r) source_mean += source(r, c) / double(source.rows);
    for (std::int64_t r = 0; r < source.rows; ++r)
      source_var += (source(r, c) - source_mean) * (source(r, c) - source_mean) / double(source.rows);
    for (std::int64_t r : drawn) mean += got(r, c) / double(drawn.size());
    for (std::int64_t r : drawn) var += (got(r, c) - mean) * (got(r, c) - mean) / double(drawn.size());
    mean_error += std::abs(mean - source_mean) / std::sqrt(source_var) / double(source.cols);
    spread_error += std::abs(std::sqrt(var / source_var) - 1) / double(source.cols);
  }
  CHECK(mean_error < 0.15);
  CHECK(spread_error < 0.15);
}

/// For `method` on the pair of `ws`: copied rows (overlap-random) equal the source, drawn rows
/// are finite, follow the source statistics, repeat for the same seed and change with the seed.
void check_baseline(const workspace& ws, const std::string& method) {
  const fs::path first = run_baseline(ws, method, "7", "a");
  const fs::path again = run_baseline(ws, method, "7", "b");
  const fs::path other = run_baseline(ws, method, "8", "c");
  check_same_folders(first, again);
  check_other_tensors(ws.pair, first);
  check_config(ws.pair, first);

  const model_fixture& source = ws.pair.source;
  const oracle_rows oracle = clp_oracle(ws.pair, {"sparsemax"});  // only its overlap is used
  std::vector<std::string> names = {source.embedding_name};
  std::vector<const matrix*> sources = {&source.embedding};
  std::vector<std::string> files = {source.weight_files.front()};
  if (!source.head_name.empty()) {
    names.push_back(source.head_name);
    sources.push_back(&source.head);
    files.push_back(source.weight_files.back());
  }
  for (std::size_t m = 0; m < names.size(); ++m) {
    INFO("tensor ", names[m]);
    const matrix got = read_matrix(first / files[m], names[m]);
    const matrix reseeded = read_matrix(other / files[m], names[m]);
    REQUIRE(got.rows == ws.pair.helper.embedding.rows);
    std::vector<std::int64_t> drawn;
    std::int64_t non_finite = 0, copied_mismatches = 0, unchanged_by_seed = 0, equal_to_a_source_row = 0;
    for (std::int64_t r = 0; r < got.rows; ++r) {
      for (std::int64_t c = 0; c < got.cols; ++c) non_finite += !std::isfinite(got(r, c));
      const bool copy = method == "overlap-random" && oracle.copied[std::size_t(r)];
      if (copy) {
        const double* expected = sources[m]->row(oracle.source_of[std::size_t(r)]);
        copied_mismatches += !std::equal(got.row(r), got.row(r) + got.cols, expected);
        copied_mismatches += !std::equal(reseeded.row(r), reseeded.row(r) + got.cols, expected);
        continue;
      }
      drawn.push_back(r);
      unchanged_by_seed += std::equal(got.row(r), got.row(r) + got.cols, reseeded.row(r));
      if (oracle.copied[std::size_t(r)]) {
        const double* source_row = sources[m]->row(oracle.source_of[std::size_t(r)]);
        equal_to_a_source_row += std::equal(got.row(r), got.row(r) + got.cols, source_row);
      }
    }
    CHECK(non_finite == 0);
    CHECK(copied_mismatches == 0);
    CHECK(unchanged_by_seed == 0);
    CHECK(equal_to_a_source_row == 0);
    const std::int64_t expected_drawn = method == "random" ? got.rows : got.rows - oracle.overlap;
    CHECK(std::int64_t(drawn.size()) == expected_drawn);
    check_drawn_statistics(got, drawn, *sources[m]);
  }
}

}  // namespace

TEST_CASE("--method overlap-random: overlap rows kept, the others drawn per --seed") {
  SUBCASE("GPT-2 pair") { check_baseline(gpt2_workspace(), "overlap-random"); }
  SUBCASE("Llama pair: the head is drawn from the head's statistics") {
    check_baseline(llama_workspace(), "overlap-random");
  }
}

TEST_CASE("--method random: every row drawn per --seed") {
  SUBCASE("GPT-2 pair") { check_baseline(gpt2_workspace(), "random"); }
  SUBCASE("Llama pair") { check_baseline(llama_workspace(), "random"); }
}
