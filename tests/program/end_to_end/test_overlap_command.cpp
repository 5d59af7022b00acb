// `clp-transfer overlap A B [--json]`: the paper's Table 1 numbers for two vocabularies given
// as tokenizer.json files, vocab.json files (under any name) or model folders.
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model_fixtures.hpp"
#include "harness.hpp"

using namespace program_test;

namespace {

std::size_t shared_tokens(const model_pair& pair) {
  const std::set<std::string> a(pair.source.tokens.begin(), pair.source.tokens.end());
  std::size_t shared = 0;
  for (const std::string& token : pair.helper.tokens) shared += a.count(token);
  return shared;
}

/// Checks the text form: "A  <a>  N tokens", "B  <b>  M tokens", then the overlap line.
void check_text(const program_result& result, const std::string& a, const std::string& b, std::size_t a_size,
                std::size_t b_size, std::size_t shared) {
  INFO("stdout: [", result.out, "] stderr: [", result.err, "]");
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.empty());
  const std::vector<std::string> lines = lines_of(result.out);
  REQUIRE(lines.size() == 4);  // the fourth: how many matched exactly and by bytes (test_token_matching.cpp)
  std::smatch match;
  REQUIRE(std::regex_match(lines[0], match, std::regex(R"(A  (.*\S) +(\d+) tokens)")));
  CHECK(match[1] == a);
  CHECK(std::stoul(match[2]) == a_size);
  REQUIRE(std::regex_match(lines[1], match, std::regex(R"(B  (.*\S) +(\d+) tokens)")));
  CHECK(match[1] == b);
  CHECK(std::stoul(match[2]) == b_size);
  REQUIRE(std::regex_match(lines[2], match,
                           std::regex(R"(A ∩ B +(\d+) tokens = ([0-9.]+)% of A \(the paper's Table 1\), ([0-9.]+)% of B)")));
  CHECK(std::stoul(match[1]) == shared);
  CHECK(std::stod(match[2]) == doctest::Approx(100.0 * double(shared) / double(a_size)).epsilon(0.0001));
  CHECK(std::stod(match[3]) == doctest::Approx(100.0 * double(shared) / double(b_size)).epsilon(0.0001));
}

}  // namespace

TEST_CASE("overlap --json of two tokenizer.json files (byte-level BPE)") {
  const workspace ws = gpt2_workspace();
  const std::string a = (ws.pair.source.folder / "tokenizer.json").string();
  const std::string b = (ws.pair.helper.folder / "tokenizer.json").string();
  const program_result result = run_program({"overlap", a, b, "--json"});
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto json = nlohmann::json::parse(result.out);
  CHECK(json["a"] == a);
  CHECK(json["b"] == b);
  CHECK(json["a_vocab_size"] == gpt2_sizes::source_vocab);
  CHECK(json["b_vocab_size"] == gpt2_sizes::helper_vocab);
  CHECK(json["overlap"] == gpt2_sizes::overlap);
  CHECK(shared_tokens(ws.pair) == std::size_t(gpt2_sizes::overlap));
  CHECK(json["overlap_share_of_a"].get<double>() ==
        doctest::Approx(double(gpt2_sizes::overlap) / double(gpt2_sizes::source_vocab)));
  CHECK(json["overlap_share_of_b"].get<double>() ==
        doctest::Approx(double(gpt2_sizes::overlap) / double(gpt2_sizes::helper_vocab)));
}

TEST_CASE("overlap text output: vocab.json against tokenizer.json, and the reverse") {
  const workspace ws = gpt2_workspace();
  const std::string vocab = (ws.pair.source.folder / "vocab.json").string();
  const std::string tokenizer = (ws.pair.helper.folder / "tokenizer.json").string();
  check_text(run_program({"overlap", vocab, tokenizer}), vocab, tokenizer, gpt2_sizes::source_vocab,
             gpt2_sizes::helper_vocab, gpt2_sizes::overlap);
  check_text(run_program({"overlap", tokenizer, vocab}), tokenizer, vocab, gpt2_sizes::helper_vocab,
             gpt2_sizes::source_vocab, gpt2_sizes::overlap);
}

TEST_CASE("overlap of two model folders (Unigram tokenizers) and of files under other names") {
  const workspace ws = llama_workspace();
  const std::size_t shared = shared_tokens(ws.pair);
  CHECK(shared == std::size_t(llama_sizes::overlap));
  check_text(run_program({"overlap", ws.pair.source.folder.string(), ws.pair.helper.folder.string()}),
             ws.pair.source.folder.string(), ws.pair.helper.folder.string(), llama_sizes::source_vocab,
             llama_sizes::helper_vocab, shared);

  // A tokenizer.json renamed is still recognised by its "model"; a flat map is a vocab.json.
  const fs::path renamed = ws.dir / "helper-tokenizer.json";
  fs::copy_file(ws.pair.helper.folder / "tokenizer.json", renamed);
  nlohmann::json flat = nlohmann::json::object();
  for (std::size_t id = 0; id < ws.pair.source.tokens.size(); ++id) flat[ws.pair.source.tokens[id]] = id;
  const fs::path flat_file = ws.dir / "source-vocab.json";
  write_file(flat_file, flat.dump());
  const program_result result = run_program({"overlap", flat_file.string(), renamed.string(), "--json"});
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto json = nlohmann::json::parse(result.out);
  CHECK(json["a_vocab_size"] == llama_sizes::source_vocab);
  CHECK(json["b_vocab_size"] == llama_sizes::helper_vocab);
  CHECK(json["overlap"] == shared);
}

TEST_CASE("overlap of two vocabularies sharing no token is a result (0), not an error") {
  temp_dir dir;
  write_file(dir / "a.json", R"({"x": 0, "y": 1})");
  write_file(dir / "b.json", R"({"z": 0})");
  const program_result result = run_program({"overlap", (dir / "a.json").string(), (dir / "b.json").string(), "--json"});
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(nlohmann::json::parse(result.out)["overlap"] == 0);
}

TEST_CASE("overlap refuses a missing file and a file that is not JSON, in one line") {
  const workspace ws = gpt2_workspace();
  const std::string good = (ws.pair.helper.folder / "tokenizer.json").string();
  const std::string missing = (ws.dir / "no-such.json").string();
  check_error_line(run_program({"overlap", missing, good}), missing, {"no such file"});
  const fs::path broken = ws.dir / "tokenizer.json";
  write_file(broken, "{\"model\": {\"vocab\": ");
  check_error_line(run_program({"overlap", good, broken.string()}), broken.string(), {"not valid JSON"});
}
