// `clp-transfer transfer --similarity-product`: float32 and the default agree bit for bit where
// no bf16 product can run; where one runs (oneDNN built in, avx512_bf16 or AMX), it is what the
// default uses, its output matches the double-precision oracle, and the report counts the
// candidates it rescored. A case that needs the bf16 product skips (reported as skipped, never
// as passed) where it cannot run.
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../../support/skip.hpp"
#include "clp_oracle.hpp"
#include "harness.hpp"
#include "model_fixtures.hpp"
#include "output_checks.hpp"

using namespace program_test;

namespace {

/// Runs a transfer of the shipped models with `extra` options into dir/name; returns the
/// report's "similarity_product" object.
nlohmann::json shipped_transfer(const fs::path& dir, const std::string& name, std::vector<std::string> extra) {
  const fs::path models = CLP_EXAMPLE_MODELS_DIR;
  const fs::path report = dir / (name + ".json");
  std::vector<std::string> args = {"transfer",
                                   "--source",
                                   (models / "en-large").string(),
                                   "--helper",
                                   (models / "de-small").string(),
                                   "--output",
                                   (dir / name).string(),
                                   "--report",
                                   report.string(),
                                   "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  const program_result result = run_program(args);
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  return nlohmann::json::parse(read_file(report))["similarity_product"];
}

}  // namespace

TEST_CASE("--similarity-product float32 and the default: bit for bit where no bf16 product runs") {
  const temp_dir dir;
  const nlohmann::json plain = shipped_transfer(dir.path, "float32", {"--similarity-product", "float32"});
  CHECK(plain["ran"] == "float32");
  CHECK(plain["rescored_rows"] == 0);
  const nlohmann::json automatic = shipped_transfer(dir.path, "auto", {});
  if (automatic["ran"] == "float32") {
    CHECK(automatic["rescored_rows"] == 0);
    check_same_folders(dir.path / "float32", dir.path / "auto");
  } else {
    // bf16 ran: every missing row's candidates were rescored, at least k = 10 of them.
    CHECK(automatic["ran"] == "bf16 (oneDNN)");
    CHECK(automatic["rescored_rows"].get<std::int64_t>() > 0);
    CHECK(automatic["rescored_candidates"].get<std::int64_t>() >= 10 * automatic["rescored_rows"].get<std::int64_t>());
  }
  // The dense weightings never use it, and their report leaves the product out.
  CHECK(shipped_transfer(dir.path, "paper", {"--weighting", "paper"}).is_null());
}

TEST_CASE("--similarity-product bf16: the oneDNN product matches the double-precision oracle (skipped without bf16)") {
  const workspace ws = gpt2_workspace();
  for (const weighting_choice& choice : {weighting_choice{"top-k", 5}, weighting_choice{"softmax", 8, 0.05}}) {
    INFO("weighting ", choice.name);
    std::vector<std::string> args = choice.arguments();
    args.insert(args.end(), {"--similarity-product", "bf16", "--report", (ws.dir / "report.json").string(), "--force"});
    const program_result result = run_program(ws.transfer(args));
    if (result.exit_status != 0 && result.err.find("bf16 cannot run") != std::string::npos) {
      CHECK(result.exit_status == 1);
      clp_test::skip("no bf16 product here: " + result.err);
      return;
    }
    INFO("stderr: ", result.err);
    REQUIRE(result.exit_status == 0);
    const auto report = nlohmann::json::parse(read_file(ws.dir / "report.json"));
    CHECK(report["similarity_product"]["ran"] == "bf16 (oneDNN)");
    CHECK(report["similarity_product"]["rescored_rows"].get<std::int64_t>() > 0);
    check_embeddings(ws.pair, ws.output, clp_oracle(ws.pair, choice));
  }
}

TEST_CASE("--similarity-product: a name it does not know is refused naming the option") {
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(ws.transfer({"--similarity-product", "int8"}));
  CHECK(result.exit_status == 1);
  CHECK(result.err.find("--similarity-product") != std::string::npos);
  CHECK(result.err.find("int8") != std::string::npos);
}
