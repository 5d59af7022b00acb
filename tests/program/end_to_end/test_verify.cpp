// `clp-transfer verify FOLDER` end to end: each case writes a model folder that is consistent, or
// breaks one thing in it the way users' converted folders break (vocab_size below the rows, an
// added token past the embedding, a tie flag that contradicts the tensors, a NaN, two tokenizer
// files that disagree), runs the program and checks that it reports exactly that, naming the
// file at fault; the oracle is the defect the case made. The shipped models, the quick start's
// output and every model folder under tests/data must verify clean.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "model_fixtures.hpp"
#include "refusals.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_verify {

using namespace program_test;

namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";
const fs::path shipped = fs::path(CLP_EXAMPLE_MODELS_DIR);

/// The GPT-2-like fixture pair under `root`, with each merges.txt holding the merges of its
/// tokenizer.json (the fixture's carries one merge more, which verify reports; the transfer
/// does not read merges.txt).
model_pair gpt2_folders(const fs::path& root) {
  model_pair pair = make_gpt2_pair(root);
  for (const fs::path& folder : {pair.source.folder, pair.helper.folder})
    write_file(folder / "merges.txt", "#version: 0.2\nĠ t\nh e\n");
  return pair;
}

/// `clp-transfer verify FOLDER --json`.
program_result verify_json(const fs::path& folder) { return run_program({"verify", folder.string(), "--json"}); }

/// The findings of a --json run, after checking the report's shape: the folder named, and each
/// finding a kind, a file inside the folder (or the folder) and a one-line message.
nlohmann::json findings_of(const program_result& result, const fs::path& folder) {
  INFO("stdout: ", result.out, "\nstderr: ", result.err);
  const nlohmann::json report = nlohmann::json::parse(result.out);
  REQUIRE(report.at("folder") == folder.string());
  for (const nlohmann::json& finding : report.at("findings")) {
    const std::string file = finding.at("file");
    CHECK(file.rfind(folder.string(), 0) == 0);
    CHECK(!finding.at("kind").get<std::string>().empty());
    CHECK(finding.at("message").get<std::string>().find('\n') == std::string::npos);
  }
  return report.at("findings");
}

/// Checks that verify finds exactly one thing in `folder`: of `kind`, naming `file`, its message
/// holding every key word, with what to do; and that the text output is that finding's line,
/// "<file>: ...", then "  what to do: ...", exit 1.
void check_single_finding(const fs::path& folder, const std::string& kind, const fs::path& file,
                          std::initializer_list<std::string_view> key_words) {
  const program_result json = verify_json(folder);
  CHECK(json.exit_status == 1);
  const nlohmann::json findings = findings_of(json, folder);
  INFO("findings: ", findings.dump(1));
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].at("kind") == kind);
  CHECK(findings[0].at("file") == file.string());
  const std::string message = findings[0].at("message");
  for (std::string_view word : key_words) {
    INFO("key word: ", word);
    CHECK(message.find(word) != std::string::npos);
  }
  const std::string what_to_do = findings[0].at("what_to_do");
  CHECK(!what_to_do.empty());
  const program_result text = run_program({"verify", folder.string(), "--quiet"});
  CHECK(text.exit_status == 1);
  CHECK(text.err.empty());
  CHECK(text.out == file.string() + ": " + message + "\n  what to do: " + what_to_do + "\n");
}

/// Checks that verify finds nothing in `folder`: exit 0, nothing on stdout, the count on stderr.
void check_clean(const fs::path& folder) {
  INFO("folder: ", folder.string());
  const program_result result = run_program({"verify", folder.string()});
  INFO("stdout: ", result.out, "\nstderr: ", result.err);
  CHECK(result.exit_status == 0);
  CHECK(result.out.empty());
  CHECK(result.err == "clp-transfer: verify " + folder.string() + ": no findings\n");
  CHECK(findings_of(verify_json(folder), folder).empty());
}

/// Rewrites model.safetensors of the fixture `model` with its embedding `embedding` and,
/// when given, a head tensor "lm_head.weight".
void write_weights(const model_fixture& model, const matrix& embedding, const matrix* head = nullptr) {
  std::vector<fixture_tensor> tensors = {matrix_tensor(model.embedding_name, embedding, "F32")};
  if (head) tensors.push_back(matrix_tensor("lm_head.weight", *head, "F32"));
  write_safetensors(model.folder / "model.safetensors", tensors);
}

/// The fixture's config.json with `key` set to `value`.
void set_config(const model_fixture& model, const std::string& key, const nlohmann::ordered_json& value) {
  nlohmann::ordered_json config = model.config;
  config[key] = value;
  write_json(model.folder / "config.json", config);
}

}  // namespace

TEST_CASE("verify: consistent fixture folders have no findings") {
  temp_dir dir;
  const model_pair gpt2 = gpt2_folders(dir / "gpt2");
  check_clean(gpt2.source.folder);
  // The helper's last 11 rows are zero, but no token has their ids: padding, not a finding.
  check_clean(gpt2.helper.folder);
  // Untied BF16 head, three shards and an index, a tokenizer.model beside the tokenizer.json.
  check_clean(make_llama_pair(dir / "llama").source.folder);
}

TEST_CASE("verify: vocab_size lowered below the embedding's rows") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  set_config(source, "vocab_size", gpt2_sizes::source_vocab - 10);
  check_single_finding(source.folder, "vocab-size", source.folder / "config.json",
                       {"vocab_size is 751", "\"transformer.wte.weight\"", "761 rows"});
}

TEST_CASE("verify: an added token with an id past the embedding's rows") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  nlohmann::ordered_json tokenizer = bpe_tokenizer_json(source.tokens);
  tokenizer["added_tokens"].push_back({{"id", 800}, {"content", "<|extra|>"}, {"special", true}});
  write_json(source.folder / "tokenizer.json", tokenizer);
  check_single_finding(source.folder, "token-id", source.folder / "tokenizer.json",
                       {"\"<|extra|>\" id 800", "761 rows", "\"transformer.wte.weight\""});
}

TEST_CASE("verify: tie_word_embeddings against the output head") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  fixture_random random(7);
  const matrix head = anisotropic_matrix(source.embedding.rows, source.embedding.cols, 0.8, 0.15, random, "F32");

  // true, with a head whose values differ from the embedding's
  write_weights(source, source.embedding, &head);
  set_config(source, "tie_word_embeddings", true);
  check_single_finding(source.folder, "tie-flag", source.folder / "config.json",
                       {"tie_word_embeddings is true", "\"lm_head.weight\"", "differs"});

  // true, with the head saved as a second copy of the embedding: consistent
  write_weights(source, source.embedding, &source.embedding);
  check_clean(source.folder);

  // false, with no head at all
  write_weights(source, source.embedding);
  set_config(source, "tie_word_embeddings", false);
  check_single_finding(source.folder, "tie-flag", source.folder / "config.json",
                       {"tie_word_embeddings is false", "no output head"});
}

TEST_CASE("verify: a NaN in the embedding") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  matrix embedding = source.embedding;
  embedding(5, 3) = std::numeric_limits<double>::quiet_NaN();
  write_weights(source, embedding);
  check_single_finding(source.folder, "non-finite", source.folder / "model.safetensors",
                       {"\"transformer.wte.weight\"", "1 NaN or infinite value", "row 5 column 3"});
}

TEST_CASE("verify: tokenizer.json and tokenizer.model with different vocabularies") {
  temp_dir dir;
  const fs::path folder = dir / "source";
  fs::create_directories(folder);
  for (const auto& entry : fs::directory_iterator(formats / "source"))
    fs::copy_file(entry.path(), folder / entry.path().filename());
  check_clean(folder);
  // the helper's SentencePiece model, beside the source's tokenizer.json
  fs::copy_file(formats / "helper_sentencepiece" / "tokenizer.model", folder / "tokenizer.model",
                fs::copy_options::overwrite_existing);
  check_single_finding(folder, "tokenizer-files", folder / "tokenizer.model", {"disagrees with tokenizer.json"});
}

TEST_CASE("verify: zero token rows are findings and zero padding rows are not") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  matrix embedding = source.embedding;
  const std::int64_t token_row = 17, pad_row = gpt2_sizes::source_vocab - 1;  // pad_token_id
  for (std::int64_t c = 0; c < embedding.cols; ++c) embedding(token_row, c) = embedding(pad_row, c) = 0;
  write_weights(source, embedding);
  check_single_finding(source.folder, "zero-row", source.folder / "model.safetensors",
                       {"1 token", nlohmann::json(source.tokens[token_row]).dump() + " id 17", "all zero"});
}

TEST_CASE("verify: special ids of generation_config.json past the rows or naming no token") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  write_json(source.folder / "generation_config.json", {{"eos_token_id", {gpt2_sizes::source_vocab - 1, 900}}});
  check_single_finding(source.folder, "special-id", source.folder / "generation_config.json",
                       {"eos_token_id is 900", "761 rows"});
  // The helper's rows past its tokens are padding: an id there is inside the rows, but no token's.
  const model_fixture helper = gpt2_folders(dir / "pair").helper;
  set_config(helper, "eos_token_id", gpt2_sizes::helper_vocab + 2);
  check_single_finding(helper.folder, "special-id", helper.folder / "config.json",
                       {"eos_token_id is 963", "which no token of tokenizer.json has"});
}

TEST_CASE("verify: the shipped models and the quick start's output have no findings") {
  check_clean(shipped / "en-large");
  check_clean(shipped / "de-small");
  temp_dir dir;
  const program_result transfer =
      run_program({"transfer", "--source", (shipped / "en-large").string(), "--helper", (shipped / "de-small").string(),
                   "--output", (dir / "de-large").string(), "--report", (dir / "report.json").string(), "--quiet"});
  INFO("stderr: ", transfer.err);
  REQUIRE(transfer.exit_status == 0);
  check_clean(dir / "de-large");
}

TEST_CASE("verify: the model folders under tests/data have no findings") {
  check_clean(formats / "source");
  check_clean(formats / "helper_sentencepiece");
  check_clean(formats / "helper_wordpiece");
  // source_bin/ ships the torch shards alone: verified with source/'s config and tokenizer.
  temp_dir dir;
  fs::create_directories(dir / "source_bin");
  for (const fs::path& from : {formats / "source_bin", formats / "source"})
    for (const auto& entry : fs::directory_iterator(from))
      if (entry.path().extension() != ".safetensors" && entry.path().filename() != "model.safetensors.index.json")
        fs::copy_file(entry.path(), dir / "source_bin" / entry.path().filename());
  check_clean(dir / "source_bin");
}

TEST_CASE("verify: a folder that cannot be read at all exits 2") {
  temp_dir dir;
  fs::create_directories(dir / "empty");
  for (const fs::path& folder : {dir / "missing", dir / "empty"}) {
    const program_result result = run_program({"verify", folder.string()});
    INFO("stderr: ", result.err);
    CHECK(result.exit_status == 2);
    CHECK(result.out.empty());
    CHECK(result.err.rfind("clp-transfer: error: " + folder.string() + ": ", 0) == 0);
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  }
}

TEST_CASE("verify: every finding of a folder broken in several files names its file") {
  temp_dir dir;
  const model_fixture source = gpt2_folders(dir.path).source;
  set_config(source, "vocab_size", 700);
  write_file(source.folder / "merges.txt", "#version: 0.2\nĠ t\n");
  write_file(source.folder / "generation_config.json", "{not json");
  const program_result result = verify_json(source.folder);
  CHECK(result.exit_status == 1);
  const nlohmann::json findings = findings_of(result, source.folder);
  INFO("findings: ", findings.dump(1));
  std::vector<std::string> files;
  for (const nlohmann::json& finding : findings) files.push_back(finding.at("file"));
  CHECK(files == std::vector<std::string>{(source.folder / "generation_config.json").string(),
                                          (source.folder / "config.json").string(),
                                          (source.folder / "merges.txt").string()});
}

TEST_CASE("transfer checks its output as verify does: a zero shared row kept is a warning and in the report") {
  const workspace ws = gpt2_workspace();
  // The helper's merges.txt agreeing with its tokenizer.json, as gpt2_folders writes it: the
  // output copies the helper's tokenizer files.
  write_file(ws.pair.helper.folder / "merges.txt", "#version: 0.2\nĠ t\nh e\n");
  // Source token 17 is a shared word: its zeroed row is copied by --undertrained keep, and the
  // written folder has an all-zero token row (at that word's helper id).
  matrix embedding = ws.pair.source.embedding;
  for (std::int64_t c = 0; c < embedding.cols; ++c) embedding(17, c) = 0;
  write_weights(ws.pair.source, embedding);
  const fs::path report = ws.dir / "report.json";
  const program_result kept = run_program(ws.transfer({"--undertrained", "keep", "--report", report.string()}));
  INFO("stderr: ", kept.err);
  REQUIRE(kept.exit_status == 0);
  warned("warn-output-finding", kept, "verify: " + (ws.output / "model.safetensors").string() + ": ", "all zero");
  const nlohmann::json check = nlohmann::json::parse(read_file(report)).at("output_check");
  CHECK(check.at("folder") == ws.output.string());
  REQUIRE(check.at("findings").size() == 1);
  CHECK(check["findings"][0]["kind"] == "zero-row");
  CHECK(check["findings"][0]["file"] == (ws.output / "model.safetensors").string());
  // The same folder, checked by verify itself: the same finding.
  CHECK(findings_of(verify_json(ws.output), ws.output) == check.at("findings"));

  // Under the default the screen flags the zero row and synthesises it: nothing to warn of.
  const fs::path other = ws.dir / "screened";
  const program_result screened = run_program(ws.transfer({}, other));
  INFO("stderr: ", screened.err);
  REQUIRE(screened.exit_status == 0);
  CHECK(screened.err.find("warning: verify") == std::string::npos);
  CHECK(screened.err.find("output checked     as `clp-transfer verify` checks a folder: no findings") !=
        std::string::npos);
}

}  // namespace test_verify
