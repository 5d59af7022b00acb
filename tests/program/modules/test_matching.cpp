// token_matching.hpp and errors.hpp: special tokens matched by role go into the library's
// matching as forced pairs, so that the overlap's counts hold (exact + bytes + roles == size);
// and the library's errors become the program's, naming the file, tensor or option that the
// argument the library names came from.
#include "token_matching.hpp"

#include <clp/error.hpp>

#include <filesystem>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/safetensors.hpp"
#include "io/support/file_refusals.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"

using namespace clp_transfer;
using namespace clp_test;
namespace fs = std::filesystem;

namespace {

/// A model folder speaking `tokens` (ids in order, byte-level BPE), its eos token named in
/// tokenizer_config.json.
hf_checkpoint model_of(const fs::path& folder, const std::vector<std::string>& tokens, const std::string& eos) {
  fs::create_directories(folder);
  const auto rows = static_cast<std::int64_t>(tokens.size());
  write_file(folder / "config.json", R"({"n_embd": 2})");
  clp_transfer::io::safetensors_writer writer(
      folder / "model.safetensors", {{"wte.weight", clp_transfer::io::dtype::f32, {rows, 2}, std::uint64_t(rows) * 8}},
      {}, false);
  const std::vector<float> values(std::size_t(rows) * 2, 0.5f);
  writer.append(values.data(), values.size() * sizeof(float));
  writer.finish();
  nlohmann::json vocab = nlohmann::json::object();
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  write_file(
      folder / "tokenizer.json",
      nlohmann::json({{"decoder", {{"type", "ByteLevel"}}}, {"model", {{"type", "BPE"}, {"vocab", vocab}}}}).dump());
  write_file(folder / "tokenizer_config.json", nlohmann::json({{"eos_token", eos}}).dump());
  return hf_checkpoint::read(folder);
}

}  // namespace

TEST_CASE("a role pair of two different tokens is a forced pair, counted once, by role") {
  temp_dir dir;
  const hf_checkpoint source = model_of(dir / "source", {"a", "b", "</s>"}, "</s>");
  const hf_checkpoint helper = model_of(dir / "helper", {"<|endoftext|>", "b", "a", "c"}, "<|endoftext|>");
  const token_matching matching = match_models(source, helper, {}, 3, 4);
  const clp::vocabulary_overlap& overlap = matching.overlap;
  REQUIRE(matching.roles.size() == 1);
  CHECK(overlap.target_ids == std::vector<clp::Index>{0, 1, 2});
  CHECK(overlap.source_ids == std::vector<clp::Index>{2, 1, 0});
  CHECK(overlap.matched_by[0] == clp::match_reason::forced);
  const match_counts counts = counts_of(overlap);
  CHECK(counts.exact == 2);
  CHECK(counts.roles == 1);
  CHECK(counts.exact + counts.bytes + counts.roles == overlap.size());
  nlohmann::ordered_json json;
  add_counts(json, counts);
  CHECK(json.dump() == R"({"exact_matches":2,"byte_matches":0,"role_matches":1,"shared_strings":2})");
}

TEST_CASE("a role pair of the same string is left to the matching, which pairs it exactly") {
  temp_dir dir;
  const hf_checkpoint source = model_of(dir / "source", {"a", "<|endoftext|>"}, "<|endoftext|>");
  const hf_checkpoint helper = model_of(dir / "helper", {"<|endoftext|>", "a"}, "<|endoftext|>");
  const token_matching matching = match_models(source, helper, {}, 2, 2);
  CHECK(matching.roles.size() == 1);  // reported with the special tokens all the same
  CHECK(matching.overlap.forced_matches == 0);
  CHECK(matching.overlap.exact_matches == 2);
}

TEST_CASE("role tokens past their embedding's rows, and an overlap of special tokens alone, are refused") {
  temp_dir dir;
  const hf_checkpoint source = model_of(dir / "source", {"a", "</s>"}, "</s>");
  const hf_checkpoint helper = model_of(dir / "helper", {"<eot>", "b"}, "<eot>");
  // The library would name only the ids; the program names the tokenizer file.
  check_refusal(file_refusal_of([&] { match_models(source, helper, {}, 1, 2); }), file_kind::malformed,
                source.tokenizer.file, {"eos token \"</s>\" has id 1, past the 1 rows of its embedding"});
  const auto alone = file_refusal_of([&] { match_models(source, helper, {}, 2, 2); });
  REQUIRE(alone);
  CHECK(alone->kind == kind_name(clp::error_kind::invalid_argument));
  CHECK(alone->message.rfind(source.tokenizer.file.string() + " and " + helper.tokenizer.file.string() + ": ", 0) == 0);
  CHECK(alone->problem.find("share no token") != std::string::npos);
}

TEST_CASE("library errors in the program's words: the argument becomes the file, tensor or option") {
  const error_origins origins = error_origins()
                                    .add("helper", clp_transfer::io::about("helper/model.safetensors", "wte.weight"))
                                    .add("k", option_facts("--k"))
                                    .otherwise("a.json and b.json");
  const auto rethrown = [&](const clp::error& e) {
    return file_refusal_of([&] { origins.run([&]() -> int { throw e; }); });
  };

  clp::error_facts nan_facts;
  nan_facts.context = "clp::transfer";
  nan_facts.argument = "helper";
  nan_facts.row = 5;
  nan_facts.column = 2;
  const auto nan = rethrown(clp::non_finite_input(nan_facts));
  REQUIRE(nan);
  CHECK(nan->kind == kind_name(clp::error_kind::non_finite_input));
  CHECK(nan->facts.file == "helper/model.safetensors");
  CHECK(nan->facts.tensor == "wte.weight");
  CHECK(nan->facts.argument.empty());
  CHECK(nan->facts.row == 5);
  CHECK(nan->facts.column == 2);
  CHECK(nan->message == "helper/model.safetensors: tensor \"wte.weight\" row 5 column 2 is NaN or infinite");

  const auto k = rethrown(clp::invalid_argument(clp::error_facts::in("clp::make_weighting").with_argument("k"),
                                                "must be at least 1, not 0"));
  REQUIRE(k);
  CHECK(k->kind == kind_name(clp::error_kind::invalid_argument));
  CHECK(k->message == "--k must be at least 1, not 0");

  const auto both =
      rethrown(clp::invalid_argument(clp::error_facts::in("clp::intersect_vocabularies"), "share no token"));
  REQUIRE(both);
  CHECK(both->message == "a.json and b.json: share no token");

  // An argument no origin names: the call's context in place of the library function's name.
  const auto other =
      rethrown(clp::invalid_argument(clp::error_facts::in("clp::transfer").with_argument("output"), "has 3 rows"));
  REQUIRE(other);
  CHECK(other->message == "a.json and b.json: 'output' has 3 rows");
  const auto bare = file_refusal_of([] {
    error_origins().run([]() -> int {
      throw clp::invalid_argument(clp::error_facts::in("clp::transfer").with_argument("output"), "has 3 rows");
    });
  });
  REQUIRE(bare);
  CHECK(bare->message == "'output' has 3 rows");
}

TEST_CASE("error_line: what main prints for any error, without a C++ name or a library's code") {
  CHECK(error_line(clp::invalid_argument(clp::error_facts::in("clp::synthesize_rows").with_argument("output"),
                                         "has 3 rows")) == "'output' has 3 rows");
  CHECK(error_line(clp::invalid_argument(clp::error_facts{}.with_file("a/config.json"), "is odd")) ==
        "a/config.json: is odd");
  CHECK(error_line(std::filesystem::filesystem_error(
            "status", "a/b", std::make_error_code(std::errc::permission_denied))) == "a/b: Permission denied");
  try {
    const nlohmann::json never = nlohmann::json::parse("{");
    CHECK(never.is_null());
  } catch (const nlohmann::json::exception& e) {
    const std::string line = error_line(e);
    CHECK(line.rfind("line 1 column ", 0) == 0);
    CHECK(line.find("[json.exception") == std::string::npos);
  }
  CHECK(error_line(std::bad_alloc()).rfind("out of memory", 0) == 0);
}
