// The summary and the JSON report show the diagnostics that mean something for the chosen
// weighting and leave the others out (docs/troubleshooting.md lists which), with the counts
// the double-precision oracle finds; the weighting's options appear only where it reads them,
// written as they were given.
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "harness.hpp"
#include "model_fixtures.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_report_diagnostics {

using namespace program_test;

namespace {

/// What one transfer of the GPT-2 pair printed and reported.
struct run_output {
  std::string summary;  ///< stderr
  std::string report_text;
  nlohmann::json report;
};

run_output run_transfer(const workspace& ws, const std::vector<std::string>& options) {
  const fs::path report = ws.dir / "report.json";
  std::vector<std::string> args = options;
  args.insert(args.end(), {"--report", report.string(), "--force"});
  const program_result result = run_program(ws.transfer(args));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const std::string text = read_file(report);
  return {result.err, text, nlohmann::json::parse(text)};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("report: paper shows its cosine-sum diagnostics and effective neighbours, with the oracle's counts") {
  const workspace ws = gpt2_workspace();
  const run_output out = run_transfer(ws, {"--weighting", "paper"});
  const oracle_rows oracle = clp_oracle(ws.pair, {"paper"});
  CHECK(out.report["weighting"] == nlohmann::json{{"name", "paper"}});
  // The oracle counts the helper's zero padding rows as rows without a positive cosine; the
  // report leaves padding out of every count.
  CHECK(out.report["no_positive_cosine_rows"].get<std::int64_t>() + gpt2_sizes::helper_padding == oracle.no_positive);
  CHECK(out.report["negative_sum_rows"] == oracle.negative_sum);
  CHECK(out.report["inflated_rows"] == oracle.inflated);
  CHECK(out.report["effective_neighbours"].is_object());
  CHECK(!out.report.contains("similarity_product"));  // paper forms no neighbour lists
  CHECK(has(out.summary, "negative cosine sum " + std::to_string(oracle.negative_sum)));
  CHECK(has(out.summary, "inflated " + std::to_string(oracle.inflated)));
  CHECK(has(out.summary, "effective 1/sum(w^2)"));
  CHECK(!has(out.summary, "similarity product"));
  CHECK(!has(out.summary, "least-squares map"));
}

TEST_CASE("report: the default least-squares leaves out what means nothing for a map") {
  const workspace ws = gpt2_workspace();
  const run_output out = run_transfer(ws, {});
  CHECK(out.report["weighting"] == nlohmann::json{{"name", "least-squares"}, {"k", 10}, {"row_norms", "top-k-mean"}});
  // Every row of a map weighs the whole overlap, and no cosine sum divides anything.
  CHECK(!out.report.contains("effective_neighbours"));
  CHECK(!out.report.contains("negative_sum_rows"));
  CHECK(out.report.contains("inflated_rows"));
  CHECK(out.report.contains("no_positive_cosine_rows"));  // the row norms from top-k read cosines
  CHECK(out.report.contains("similarity_product"));
  CHECK(!has(out.summary, "negative cosine sum"));
  CHECK(!has(out.summary, "effective 1/sum(w^2)"));
  CHECK(has(out.summary, "least-squares map"));
  CHECK(has(out.summary, "similarity product"));
  // The helper's eos is the source's token: no role pair, so no "by role" count.
  CHECK(!has(out.summary, "by role"));
  CHECK(
      has(out.summary, "matched            " + std::to_string(gpt2_sizes::overlap) + " exactly, 0 by bytes (--match"));
}

TEST_CASE("report: least-squares with the map's own norms and a given lambda, as given") {
  const workspace ws = gpt2_workspace();
  const run_output out = run_transfer(ws, {"--weighting", "least-squares", "--row-norms", "map", "--lambda", "0.5"});
  CHECK(out.report["weighting"] == nlohmann::json{{"name", "least-squares"}, {"row_norms", "map"}, {"lambda", 0.5}});
  CHECK(!out.report.contains("no_positive_cosine_rows"));  // no cosine is formed
  CHECK(!out.report.contains("similarity_product"));
  CHECK(!has(out.summary, "no positive cosine"));
}

TEST_CASE("report: softmax's temperature and k as given, and no inflation a convex weighting cannot have") {
  const workspace ws = gpt2_workspace();
  const run_output out = run_transfer(ws, {"--weighting", "softmax", "--k", "8", "--temperature", "0.05"});
  CHECK(out.report["weighting"] == nlohmann::json{{"name", "softmax"}, {"k", 8}, {"temperature", 0.05}});
  CHECK(has(out.report_text, "\"temperature\": 0.05\n"));
  CHECK(!out.report.contains("inflated_rows"));
  CHECK(!out.report.contains("negative_sum_rows"));
  CHECK(out.report.contains("effective_neighbours"));
  CHECK(!has(out.summary, "inflated"));
}

TEST_CASE("report: a baseline reports its seed and no weighting diagnostics") {
  const workspace ws = gpt2_workspace();
  const run_output out = run_transfer(ws, {"--method", "overlap-random", "--seed", "7"});
  CHECK(out.report["weighting"].is_null());
  CHECK(out.report["seed"] == 7);
  for (const char* field : {"degenerate_rows", "no_positive_cosine_rows", "inflated_rows", "negative_sum_rows",
                            "effective_neighbours", "similarity_product", "max_output_row_norm"})
    CHECK(!out.report.contains(field));
  CHECK(!has(out.summary, "fallback rows"));
}

}  // namespace test_report_diagnostics
