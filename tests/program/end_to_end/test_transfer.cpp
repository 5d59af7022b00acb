// `clp-transfer transfer --method clp` end to end: the written model against a double-precision
// oracle for every weighting, on a tied F32 GPT-2 pair and an untied, sharded BF16 Llama pair;
// the untouched tensors, config, index and tokenizer files; an output large enough that its
// memory is recycled while it is written; the report; and bit-identical output for any thread
// count and tile budget.
#include <cmath>
#include <string>
#include <vector>

#include <clp/version.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "harness.hpp"
#include "model_fixtures.hpp"
#include "output_checks.hpp"

using namespace program_test;

namespace {

/// Runs the transfer with `choice` and checks the whole output against the oracle.
void check_clp_transfer(const workspace& ws, const weighting_choice& choice, bool pass_weighting = true) {
  INFO("weighting ", choice.name);
  const program_result result =
      run_program(ws.transfer(pass_weighting ? choice.arguments() : std::vector<std::string>{"--quiet"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.out.empty());
  const oracle_rows oracle = clp_oracle(ws.pair, choice);
  check_output_files(ws.pair, ws.output);
  check_other_tensors(ws.pair, ws.output);
  check_config(ws.pair, ws.output);
  check_embeddings(ws.pair, ws.output, oracle);
}

/// Runs the transfer without --weighting and checks it against the oracle of the default, the
/// map with top-k mean row norms (k 10) at the lambda GCV chose (the core tests check that choice).
void check_default_transfer(const workspace& ws, const fs::path& output, const std::vector<std::string>& extra = {}) {
  const fs::path report = ws.dir / (output.parent_path().filename().string() + "-default-report.json");
  std::vector<std::string> args{"--quiet", "--force", "--report", report.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const program_result result = run_program(ws.transfer(args, output));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto json = nlohmann::json::parse(read_file(report));
  CHECK(json["weighting"]["name"] == "least-squares");
  CHECK(json["weighting"]["row_norms"] == "top-k-mean");
  weighting_choice choice{"least-squares", 10};
  choice.lambda = json["least_squares"]["maps"][0]["relative_lambda"].get<double>();
  check_output_files(ws.pair, output);
  check_embeddings(ws.pair, output, clp_oracle(ws.pair, choice));
}

void check_default_transfer(const workspace& ws) {
  check_default_transfer(ws, ws.output);
  check_other_tensors(ws.pair, ws.output);
  check_config(ws.pair, ws.output);
}

}  // namespace

TEST_CASE("GPT-2 pair (tied F32): every weighting matches the double-precision oracle") {
  const workspace ws = gpt2_workspace();
  SUBCASE("paper") { check_clp_transfer(ws, {"paper"}); }
  SUBCASE("clamped") { check_clp_transfer(ws, {"clamped"}); }
  SUBCASE("top-k, k = 5") { check_clp_transfer(ws, {"top-k", 5}); }
  SUBCASE("softmax, k = 8, temperature 0.05") { check_clp_transfer(ws, {"softmax", 8, 0.05}); }
  SUBCASE("sparsemax") { check_clp_transfer(ws, {"sparsemax"}); }
  SUBCASE("no --weighting: least-squares with top-k mean row norms, k = 10") { check_default_transfer(ws); }
}

TEST_CASE("Llama pair (BF16, untied head, three shards): embedding and head match the oracle") {
  const workspace ws = llama_workspace();
  SUBCASE("paper") { check_clp_transfer(ws, {"paper"}); }
  SUBCASE("top-k, k = 10") { check_clp_transfer(ws, {"top-k", 10}); }
  SUBCASE("sparsemax") { check_clp_transfer(ws, {"sparsemax"}); }
}

TEST_CASE("an F32 embedding whose bytes are not 4-byte aligned is read instead of mapped, same result") {
  const workspace ws = gpt2_workspace(/*misaligned_embedding=*/true);
  const clp_transfer::io::safetensors_file file(ws.pair.source.folder / "model.safetensors");
  REQUIRE(file.at(ws.pair.source.embedding_name).offset % 4 != 0);
  check_clp_transfer(ws, {"paper"});
}

TEST_CASE("--fsync (flush before the rename) writes the same output") {
  const workspace ws = gpt2_workspace();
  const fs::path flushed = ws.dir / "flushed" / "model";
  fs::create_directories(flushed.parent_path());
  const program_result plain = run_program(ws.transfer({"--quiet"}));
  const program_result synced = run_program(ws.transfer({"--quiet", "--fsync"}, flushed));
  INFO("stderr: ", plain.err, synced.err);
  REQUIRE(plain.exit_status == 0);
  REQUIRE(synced.exit_status == 0);
  check_same_folders(ws.output, flushed);
}

TEST_CASE("an output of many 2 MiB pages, moved ahead as its rows are written, matches the oracle") {
  // 972 rows x 8192 F32 = 31.9 MB a matrix; with 4 MB of tiles the 411 missing rows make 5-9
  // blocks, so the writing thread moves the pages of written rows ahead to rows no block has
  // started (transfer/weights_output.hpp) again and again. Rows made in moved pages must be
  // the oracle's rows, not the bytes of the earlier rows those pages held.
  // One thread is checked against the oracle; two threads, whose blocks and moves interleave
  // differently, must write the same bytes (the oracle, in double at this width, is the
  // expensive part, so it runs once).
  const workspace ws = gpt2_workspace(false, 8192);
  const fs::path one = ws.dir / "threads-1" / "model";
  const fs::path two = ws.dir / "threads-2" / "model";
  fs::create_directories(one.parent_path());
  fs::create_directories(two.parent_path());
  check_default_transfer(ws, one, {"--threads", "1", "--tile-mb", "1"});
  const program_result result = run_program(ws.transfer({"--quiet", "--threads", "2", "--tile-mb", "1"}, two));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  check_same_folders(one, two);
}

TEST_CASE("the oracle's fixtures are what the tests assume") {
  // Guards the oracle comparisons above against a fixture that would make them vacuous.
  const workspace gpt2 = gpt2_workspace();
  const oracle_rows paper = clp_oracle(gpt2.pair, {"paper"});
  CHECK(paper.overlap == gpt2_sizes::overlap);
  CHECK(paper.degenerate == gpt2_sizes::helper_padding);  // only the zero padding rows fall back
  const workspace llama = llama_workspace();
  CHECK(clp_oracle(llama.pair, {"sparsemax"}).overlap == llama_sizes::overlap);
  CHECK(llama.pair.source.tokens.size() == std::size_t(llama_sizes::source_vocab));
  CHECK(llama.pair.helper.tokens.size() == std::size_t(llama_sizes::helper_vocab));
}

TEST_CASE("--report: sizes, overlap, missing rows, degenerate rows and timings") {
  const workspace ws = gpt2_workspace();
  const fs::path report = ws.dir / "report.json";
  const program_result result = run_program(ws.transfer({"--report", report.string(), "--weighting", "paper"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto json = nlohmann::json::parse(read_file(report));
  CHECK(json["source_vocab_size"] == gpt2_sizes::source_vocab);
  CHECK(json["target_vocab_size"] == gpt2_sizes::helper_vocab);
  CHECK(json["target_rows"] == gpt2_sizes::helper_rows);
  CHECK(json["overlap"] == gpt2_sizes::overlap);
  CHECK(json["missing"] == gpt2_sizes::helper_rows - gpt2_sizes::overlap);
  // The helper's zero rows past its vocabulary are padding, counted apart from the degenerate
  // (weighting failure) rows since issue 14; the oracle, which cannot tell them from a token's
  // zero row, counts them as degenerate, and here they are its only degenerate rows.
  CHECK(json["padding_rows"] == gpt2_sizes::helper_padding);
  CHECK(json["degenerate_rows"].get<std::int64_t>() + json["padding_rows"].get<std::int64_t>() ==
        clp_oracle(ws.pair, {"paper"}).degenerate);
  CHECK(json["method"] == "clp");
  CHECK(json["weighting"]["name"] == "paper");
  REQUIRE(json["seconds"].is_object());
  for (const char* phase : {"read", "synthesize", "write", "total"}) {
    INFO("phase ", phase);
    REQUIRE(json["seconds"][phase].is_number());
    CHECK(json["seconds"][phase].get<double>() >= 0);
    CHECK(json["seconds"][phase].get<double>() <= json["seconds"]["total"].get<double>());
  }
  // The report sits where it was asked for; the output folder stays exactly the model.
  check_output_files(ws.pair, ws.output);
}

TEST_CASE("a successful run: --quiet prints nothing, otherwise a summary on stderr only") {
  const workspace ws = gpt2_workspace();
  SUBCASE("quiet") {
    const program_result result = run_program(ws.transfer({"--quiet"}));
    CHECK(result.exit_status == 0);
    CHECK(result.out.empty());
    CHECK(result.err.empty());
  }
  SUBCASE("not quiet") {
    const program_result result = run_program(ws.transfer());
    CHECK(result.exit_status == 0);
    CHECK(result.out.empty());
    CHECK(result.err.find("clp-transfer: wrote " + ws.output.string()) != std::string::npos);
    CHECK(result.err.find("error") == std::string::npos);
  }
}

TEST_CASE("the output does not depend on --threads or --tile-mb (bit-identical)") {
  auto check_pair = [](const workspace& ws, const std::vector<std::string>& weighting) {
    const std::vector<std::vector<std::string>> settings = {{"--threads", "1", "--tile-mb", "64"},
                                                            {"--threads", "2", "--tile-mb", "64"},
                                                            {"--threads", "2", "--tile-mb", "0.01"},
                                                            {"--threads", "1", "--tile-mb", "0.2"}};
    std::vector<fs::path> outputs;
    for (std::size_t i = 0; i < settings.size(); ++i) {
      std::vector<std::string> args = settings[i];
      args.insert(args.end(), weighting.begin(), weighting.end());
      args.push_back("--quiet");
      outputs.push_back(ws.dir / ("run-" + std::to_string(i)) / "model");
      fs::create_directories(outputs.back().parent_path());
      const program_result result = run_program(ws.transfer(args, outputs.back()));
      INFO("settings ", i, " stderr: ", result.err);
      REQUIRE(result.exit_status == 0);
    }
    for (std::size_t i = 1; i < outputs.size(); ++i) {
      INFO("settings 0 against settings ", i);
      check_same_folders(outputs[0], outputs[i]);
    }
  };
  SUBCASE("GPT-2, paper (dense weights)") { check_pair(gpt2_workspace(), {"--weighting", "paper"}); }
  SUBCASE("GPT-2, top-k (sparse weights)") { check_pair(gpt2_workspace(), {"--weighting", "top-k", "--k", "7"}); }
  SUBCASE("Llama, sparsemax") { check_pair(llama_workspace(), {"--weighting", "sparsemax"}); }
}

TEST_CASE("--output with a trailing slash writes the folder of that name") {
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(ws.transfer({"--quiet"}, ws.output.string() + "/"));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  check_output_files(ws.pair, ws.output);
}

TEST_CASE("--version prints the version of include/clp/version.hpp on stdout") {
  const program_result result = run_program({"--version"});
  CHECK(result.exit_status == 0);
  CHECK(result.err.empty());
  CHECK(result.out == "clp-transfer " + std::to_string(CLP_VERSION_MAJOR) + "." + std::to_string(CLP_VERSION_MINOR) +
                          "." + std::to_string(CLP_VERSION_PATCH) + "\n");
}
