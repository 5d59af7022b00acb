// Bad inputs are refused cleanly: exit status 1, one line on stderr "clp-transfer: error: "
// naming the file or folder at fault and the problem, and nothing written: no output folder
// and no staging folder beside it. An existing output or report is never replaced without
// --force, and with --force only after success.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model_fixtures.hpp"
#include "harness.hpp"
#include "refusals.hpp"
#include "support/skip.hpp"

using namespace program_test;

TEST_CASE("refused: a missing source or helper folder") {
  const workspace ws = gpt2_workspace();
  SUBCASE("source") {
    fs::remove_all(ws.pair.source.folder);
    expect_refusal(ws, ws.pair.source.folder, {"no such file or folder"});
  }
  SUBCASE("helper") {
    fs::remove_all(ws.pair.helper.folder);
    expect_refusal(ws, ws.pair.helper.folder, {"no such file or folder"});
  }
}

TEST_CASE("refused: a missing config.json") {
  const workspace ws = gpt2_workspace();
  fs::remove(ws.pair.helper.folder / "config.json");
  expect_refusal(ws, ws.pair.helper.folder / "config.json", {"cannot open"});
}

TEST_CASE("refused: a broken safetensors file") {
  const workspace ws = gpt2_workspace();
  const fs::path file = ws.pair.source.folder / "model.safetensors";
  const std::string bytes = read_file(file);
  const std::uint64_t data_start = 8 + clp_test::header_length(bytes);
  const std::uint64_t data_size = bytes.size() - data_start;

  SUBCASE("truncated in the middle of the data") {
    write_file(file, bytes.substr(0, std::size_t(data_start + data_size / 2)));
    expect_refusal(ws, file, {"is truncated: it has " + std::to_string(data_start + data_size / 2) + " bytes",
                              "runs to byte " + std::to_string(bytes.size()), "download it again"});
  }
  SUBCASE("empty") {
    write_file(file, "");
    expect_refusal(ws, file, {"too short"});
  }
  SUBCASE("a header length past the end of the file") {
    write_file(file, clp_test::length_prefix(bytes.size()) + bytes.substr(8));
    expect_refusal(ws, file, {"is truncated", "the header runs to byte " + std::to_string(8 + bytes.size())});
  }
  SUBCASE("a header that is not JSON") {
    std::string broken = bytes;
    broken.replace(8, 12, "{not json!!!");
    write_file(file, broken);
    expect_refusal(ws, file, {"not valid JSON"});
  }
  SUBCASE("data offsets past the end") {
    edit_header(file, [&](nlohmann::ordered_json& h) {
      h["transformer.ln_f.bias"]["data_offsets"] = {data_size, data_size + 256};
    });
    const std::uint64_t edited_data_start = 8 + clp_test::header_length(read_file(file));
    expect_refusal(ws, file, {"is truncated", "runs to byte " + std::to_string(edited_data_start + data_size + 256)});
  }
  SUBCASE("data offsets overlapping another tensor") {
    edit_header(file, [](nlohmann::ordered_json& h) {
      const std::uint64_t begin = h["transformer.wpe.weight"]["data_offsets"][0];
      h["transformer.ln_f.bias"]["data_offsets"] = {begin + 4, begin + 4 + 256};
    });
    expect_refusal(ws, file, {"overlap"});
  }
  SUBCASE("data offsets that do not match shape x dtype") {
    edit_header(file, [](nlohmann::ordered_json& h) { h["transformer.wpe.weight"]["shape"] = {31, 64}; });
    expect_refusal(ws, file, {"transformer.wpe.weight", "[31, 64]"});
  }
  SUBCASE("an unknown dtype") {
    edit_header(file, [](nlohmann::ordered_json& h) { h["transformer.ln_f.bias"]["dtype"] = "X99"; });
    expect_refusal(ws, file, {"unknown dtype", "X99"});
  }
  SUBCASE("a negative dimension") {
    edit_header(file, [](nlohmann::ordered_json& h) { h["transformer.wpe.weight"]["shape"] = {-32, 64}; });
    expect_refusal(ws, file, {"negative dimension"});
  }
}

TEST_CASE("refused: a shard of a sharded checkpoint truncated in the middle of its data") {
  const workspace ws = llama_workspace();
  const fs::path shard = ws.pair.source.folder / ws.pair.source.weight_files[1];
  const std::string bytes = read_file(shard);
  write_file(shard, bytes.substr(0, bytes.size() - 100));
  expect_refusal(ws, shard, {"is truncated", "download it again"});
}

TEST_CASE("refused: a bad tokenizer.json") {
  const workspace ws = gpt2_workspace();
  const fs::path source_tokenizer = ws.pair.source.folder / "tokenizer.json";
  const fs::path helper_tokenizer = ws.pair.helper.folder / "tokenizer.json";
  SUBCASE("not JSON") {
    write_file(source_tokenizer, "{\"model\": {\"vocab\": {\"a\": 0,");
    expect_refusal(ws, source_tokenizer, {"not valid JSON"});
  }
  SUBCASE("no vocabulary") {
    write_file(helper_tokenizer, R"({"version": "1.0", "model": {"type": "BPE", "merges": []}})");
    expect_refusal(ws, helper_tokenizer, {"no vocabulary"});
  }
  SUBCASE("two tokens with one id") {
    auto json = bpe_tokenizer_json(ws.pair.helper.tokens);
    json["model"]["vocab"][ws.pair.helper.tokens[5]] = 6;
    write_json(helper_tokenizer, json);
    expect_refusal(ws, helper_tokenizer, {"both have id 6"});
  }
  SUBCASE("a token id past the embedding's rows") {
    auto json = bpe_tokenizer_json(ws.pair.source.tokens);
    json["model"]["vocab"]["Ġextra"] = gpt2_sizes::source_vocab;
    write_json(source_tokenizer, json);
    expect_refusal(ws, source_tokenizer, {"Ġextra", std::to_string(gpt2_sizes::source_vocab) + " rows"});
  }
  SUBCASE("no token shared with the other vocabulary") {
    std::vector<std::string> renamed = ws.pair.helper.tokens;
    for (std::string& token : renamed) token = "zz" + token;
    // Without added_tokens: bpe_tokenizer_json would list <|endoftext|>, which the source has.
    auto json = bpe_tokenizer_json(renamed);
    json.erase("added_tokens");
    write_json(helper_tokenizer, json);
    expect_refusal(ws, helper_tokenizer, {"share no token"});
    // The message names both vocabularies.
    check_error_line(run_program(ws.transfer({"--quiet"})), source_tokenizer.string(), {});
  }
}

TEST_CASE("refused: no embedding tensor, or a config.json hidden size that does not fit it") {
  const workspace ws = gpt2_workspace();
  SUBCASE("embedding renamed") {
    edit_header(ws.pair.source.folder / "model.safetensors", [](nlohmann::ordered_json& h) {
      h["transformer.token_table"] = h["transformer.wte.weight"];
      h.erase("transformer.wte.weight");
    });
    expect_refusal(ws, ws.pair.source.folder, {"no input embedding"});
  }
  SUBCASE("hidden size") {
    auto config = ws.pair.source.config;
    config["n_embd"] = 65;
    write_json(ws.pair.source.folder / "config.json", config);
    expect_refusal(ws, ws.pair.source.folder / "config.json", {"hidden size 65"});
  }
}

TEST_CASE("refused: NaN in the source embedding, infinity in the helper embedding") {
  SUBCASE("NaN in a source row no target token uses (F32)") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "model.safetensors";
    const std::int64_t row = id_of(ws.pair.source, "Ġwould");
    poke(file, ws.pair.source.embedding_name, row, 3, std::numeric_limits<float>::quiet_NaN());
    expect_refusal(ws, file, {"NaN or infinite", "row " + std::to_string(row)});
  }
  SUBCASE("NaN in an overlapping source row (F32)") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "model.safetensors";
    poke(file, ws.pair.source.embedding_name, id_of(ws.pair.source, "Ġthe"), 0, std::nanf(""));
    expect_refusal(ws, file, {"NaN or infinite"});
  }
  SUBCASE("infinity in a helper row to synthesise (BF16)") {
    const workspace ws = llama_workspace();
    const fs::path file = ws.pair.helper.folder / "model.safetensors";
    poke(file, ws.pair.helper.embedding_name, id_of(ws.pair.helper, "▁und"), 5, INFINITY);
    expect_refusal(ws, file, {"NaN or infinite"});
  }
  SUBCASE("infinity in the source head (BF16)") {
    const workspace ws = llama_workspace();
    const fs::path file = ws.pair.source.folder / ws.pair.source.weight_files.back();
    poke(file, ws.pair.source.head_name, 4, 5, -INFINITY);
    expect_refusal(ws, file, {"NaN or infinite", "lm_head.weight"});
  }
}

TEST_CASE("refused: NaN or infinity with a baseline method, which reads no helper row and screens nothing") {
  SUBCASE("NaN in a source row (overlap-random)") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "model.safetensors";
    poke(file, ws.pair.source.embedding_name, id_of(ws.pair.source, "Ġthe"), 2, std::nanf(""));
    expect_refusal(ws, file, {"NaN or infinite"}, {"--method", "overlap-random"});
  }
  SUBCASE("infinity in a helper row (random)") {
    const workspace ws = llama_workspace();
    const fs::path file = ws.pair.helper.folder / "model.safetensors";
    poke(file, ws.pair.helper.embedding_name, id_of(ws.pair.helper, "▁und"), 1, INFINITY);
    expect_refusal(ws, file, {"NaN or infinite", "row " + std::to_string(id_of(ws.pair.helper, "▁und"))},
                   {"--method", "random"});
  }
}

TEST_CASE("an existing output is refused without --force and left untouched") {
  const workspace ws = gpt2_workspace();
  fs::create_directories(ws.output);
  write_file(ws.output / "config.json", "{}");  // a model folder, which --force may replace
  write_file(ws.output / "keep.txt", "old model");
  const program_result result = run_program(ws.transfer({"--quiet"}));
  check_error_line(result, ws.output.string(), {"already exists", "--force"});
  CHECK(folder_entries(ws.output) == std::vector<std::string>{"config.json", "keep.txt"});
  CHECK(read_file(ws.output / "keep.txt") == "old model");
  CHECK(folder_entries(ws.out_parent) == std::vector<std::string>{"model"});
}

TEST_CASE("--force replaces an existing output only after success") {
  const workspace ws = gpt2_workspace();
  fs::create_directories(ws.output);
  write_file(ws.output / "config.json", "{}");  // a model folder, which --force may replace
  write_file(ws.output / "keep.txt", "old model");

  // A run that fails late (bad data in the source embedding) must leave the old output whole.
  const fs::path weights = ws.pair.source.folder / "model.safetensors";
  const std::string good_weights = read_file(weights);
  poke(weights, ws.pair.source.embedding_name, 0, 0, std::numeric_limits<float>::quiet_NaN());
  check_error_line(run_program(ws.transfer({"--force", "--quiet"})), weights.string(), {"NaN or infinite"});
  CHECK(folder_entries(ws.output) == std::vector<std::string>{"config.json", "keep.txt"});
  CHECK(read_file(ws.output / "keep.txt") == "old model");
  CHECK(folder_entries(ws.out_parent) == std::vector<std::string>{"model"});

  // A run that succeeds replaces it, with nothing left beside it.
  write_file(weights, good_weights);
  const program_result result = run_program(ws.transfer({"--force", "--quiet"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(!fs::exists(ws.output / "keep.txt"));
  CHECK(fs::exists(ws.output / "model.safetensors"));
  CHECK(folder_entries(ws.out_parent) == std::vector<std::string>{"model"});
}

TEST_CASE("an existing --report file is refused without --force") {
  const workspace ws = gpt2_workspace();
  const fs::path report = ws.dir / "report.json";
  write_file(report, "old report");
  check_error_line(run_program(ws.transfer({"--report", report.string(), "--quiet"})), report.string(),
                   {"already exists"});
  CHECK(read_file(report) == "old report");
  CHECK(folder_entries(ws.out_parent).empty());

  const program_result forced = run_program(ws.transfer({"--report", report.string(), "--force", "--quiet"}));
  INFO("stderr: ", forced.err);
  REQUIRE(forced.exit_status == 0);
  CHECK(nlohmann::json::parse(read_file(report))["overlap"] == gpt2_sizes::overlap);
}

TEST_CASE("on a terminal, a refusal is still one line (the progress bar is cleared, not ended)") {
  const workspace ws = gpt2_workspace();
  const fs::path file = ws.pair.helper.folder / "config.json";
  auto config = ws.pair.helper.config;
  config["n_embd"] = 7;
  write_json(file, config);
  const program_result result = run_program_on_terminal(ws.transfer());
  INFO("terminal: [", result.err, "]");
  CHECK(result.exit_status == 1);
  // The terminal turns "\n" into "\r\n"; progress redraws use "\r" alone.
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(result.err.find("clp-transfer: error: " + file.string() + ": hidden size 7") != std::string::npos);
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("refused before any work: bad option values and a missing output parent") {
  const workspace ws = gpt2_workspace();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--tile-mb", "0"}, "--tile-mb must be positive"},
      {{"--method", "bogus"}, "--method must be clp, overlap-random or random"},
      {{"--weighting", "bogus"}, "unknown weighting 'bogus'"},
      {{"--k", "0"}, "k must be at least 1"},
      {{"--temperature", "0"}, "temperature must be positive"}};
  for (const auto& [extra, problem] : cases) {
    INFO("options ", extra[0], " ", extra[1]);
    std::vector<std::string> args = extra;
    args.push_back("--quiet");
    check_error_line(run_program(ws.transfer(args)), problem, {});
    CHECK(folder_entries(ws.out_parent).empty());
  }
  const fs::path orphan = ws.dir / "no-such-folder" / "model";
  check_error_line(run_program(ws.transfer({"--quiet"}, orphan)), orphan.string(), {"parent directory"});
  CHECK(!fs::exists(orphan.parent_path()));
  // A parent that is a file is not "missing"; a report's parent is checked the same way.
  write_file(ws.dir / "plain", "a file");
  const fs::path under_file = ws.dir / "plain" / "model";
  check_error_line(run_program(ws.transfer({"--quiet"}, under_file)), under_file.string(), {"is not a folder"});
  const fs::path report = ws.dir / "plain" / "r.json";
  check_error_line(run_program(ws.transfer({"--quiet", "--report", report.string()})), report.string(),
                   {"is not a folder"});
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("an output or report whose parent cannot be written into is refused before any model is read") {
  if (::geteuid() == 0) {
    clp_test::skip("root writes into any folder, so no parent refuses it here");
    return;
  }
  const workspace ws = gpt2_workspace();
  fs::permissions(ws.out_parent, fs::perms::owner_read | fs::perms::owner_exec);
  const program_result output = run_program(ws.transfer({"--quiet"}));
  const program_result report = run_program(ws.transfer({"--quiet", "--report", (ws.out_parent / "r.json").string()},
                                                        ws.dir / "model"));
  fs::permissions(ws.out_parent, fs::perms::owner_all);
  check_error_line(output, ws.output.string(), {"cannot write into its parent directory"});
  check_error_line(report, (ws.out_parent / "r.json").string(), {"cannot write into its parent directory"});
  CHECK(output.err.find(".tmp-") == std::string::npos);  // never the staging folder's name
  CHECK(!fs::exists(ws.dir / "model"));
}

TEST_CASE("a negative --threads is refused with a readable one-line message") {
  // CLI11's NonNegativeNumber check prints its range up to DBL_MAX written out in full
  // (a 300-digit number); the refusal itself is right, the message is not readable.
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(ws.transfer({"--threads", "-1", "--quiet"}));
  INFO("stderr: [", result.err, "]");
  CHECK(result.exit_status != 0);
  CHECK(result.err.find("--threads") != std::string::npos);
  for (const std::string& line : lines_of(result.err)) CHECK(line.size() < 200);
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("refused before any work: an option the method or weighting does not read") {
  const workspace ws = gpt2_workspace();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--weighting", "top-k", "--lambda", "0.5"}, "--lambda does not apply to --weighting top-k"},
      {{"--weighting", "top-k", "--temperature", "0.2"}, "--temperature does not apply to --weighting top-k"},
      {{"--weighting", "sparsemax", "--similarity-product", "bf16"},
       "--similarity-product does not apply to --weighting sparsemax (it forms no neighbour lists)"},
      {{"--weighting", "sparsemax", "--similarity-product", "float32"}, "--similarity-product does not apply"},
      {{"--weighting", "paper", "--k", "5"}, "--k does not apply to --weighting paper"},
      {{"--weighting", "least-squares", "--row-norms", "map", "--k", "5"},
       "--k does not apply to --weighting least-squares --row-norms map"},
      {{"--weighting", "top-k", "--row-norms", "map"}, "--row-norms does not apply to --weighting top-k"},
      {{"--method", "overlap-random", "--weighting", "top-k"}, "--weighting does not apply to --method overlap-random"},
      {{"--seed", "3"}, "--seed does not apply to --method clp"}};
  for (const auto& [extra, problem] : cases) {
    std::string given;
    for (const std::string& word : extra) given += word + " ";
    INFO("options ", given);
    std::vector<std::string> args = extra;
    args.push_back("--quiet");
    check_error_line(run_program(ws.transfer(args)), problem, {});
    CHECK(folder_entries(ws.out_parent).empty());
  }
  // What each reads is accepted: the map's k for its top-k norms, softmax's temperature, the
  // neighbour lists' product, overlap-random's seed.
  for (const std::vector<std::string>& fine :
       {std::vector<std::string>{"--weighting", "least-squares", "--k", "5", "--lambda", "0.5"},
        {"--weighting", "softmax", "--k", "5", "--temperature", "0.2"},
        {"--weighting", "top-k", "--similarity-product", "float32"},
        {"--method", "overlap-random", "--seed", "3"}}) {
    std::vector<std::string> args = fine;
    args.insert(args.end(), {"--quiet", "--force"});
    const program_result result = run_program(ws.transfer(args));
    INFO("stderr: ", result.err);
    CHECK(result.exit_status == 0);
  }
}
