// special_tokens.hpp: special tokens by role on real tokenizers and on hand-written folders
// for each precedence rule; the source row each helper role token takes; the output's
// generation_config.json.
#include "special_tokens.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/hf_checkpoint.hpp"
#include "io/support/file_refusals.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"

using namespace clp_transfer;
using namespace clp_test;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_special_tokens {
namespace {

/// A role's expected token and id, or none.
struct expected_role {
  const char* token;  // nullptr: no token has the role
  std::int64_t id;
};

void check_roles(const special_tokens& roles, const expected_role (&expected)[4]) {
  for (token_role role : {token_role::bos, token_role::eos, token_role::pad, token_role::unk}) {
    const expected_role& want = expected[static_cast<std::size_t>(role)];
    CAPTURE(role_name(role));
    if (want.token == nullptr) {
      CHECK_FALSE(roles[role].has_value());
      continue;
    }
    REQUIRE(roles[role].has_value());
    CHECK(roles[role]->token == want.token);
    CHECK(roles[role]->id == want.id);
  }
}

/// A vocabulary of `tokens` with ids 0, 1, ...
clp_transfer::io::token_vocabulary vocabulary_of(const std::vector<std::string>& tokens) {
  clp_transfer::io::token_vocabulary vocabulary;
  for (const std::string& token : tokens) vocabulary.ids.emplace(token, vocabulary.size++);
  return vocabulary;
}

const std::filesystem::path example_models_dir = CLP_EXAMPLE_MODELS_DIR;

/// The special tokens of the model folder `folder`, its files read as a checkpoint reads them.
special_tokens roles_of(const std::filesystem::path& folder, const clp_transfer::io::token_vocabulary& vocabulary) {
  return read_special_tokens(model_json_files::read(folder), vocabulary);
}

/// The special tokens of the real tokenizer `name`, read once per run (reading a vocabulary of
/// up to 262k tokens is the slow part); nullopt, the running case marked skipped, when it is
/// absent.
std::optional<special_tokens> real_roles(const std::string& name) {
  static std::map<std::string, special_tokens> read;
  const auto folder = needed_tokenizer(name);
  if (!folder) return std::nullopt;
  const auto it = read.find(name);
  if (it != read.end()) return it->second;
  return read[name] = roles_of(*folder, clp_transfer::io::read_tokenizer_json(*folder / "tokenizer.json").vocabulary);
}

/// The roles of the real tokenizer `name`, {bos, eos, pad, unk} as tokenizer_config.json names
/// them, resolved in tokenizer.json (expected ids read from the files with Python's json module).
void check_real_roles(const std::string& name, const expected_role (&expected)[4]) {
  const auto roles = real_roles(name);
  if (!roles) return;
  check_roles(*roles, expected);
  for (const auto& role : roles->by_role)
    if (role) CHECK(role->declared_by.rfind("tokenizer_config.json ", 0) == 0);
  CHECK(roles->notes.empty());
}

}  // namespace

TEST_CASE("real tokenizers: Llama 2's roles") {
  check_real_roles("llama2", {{"<s>", 1}, {"</s>", 2}, {nullptr, 0}, {"<unk>", 0}});
}
TEST_CASE("real tokenizers: Llama 3's roles") {
  check_real_roles("llama3", {{"<|begin_of_text|>", 128000}, {"<|end_of_text|>", 128001}, {nullptr, 0}, {nullptr, 0}});
}
TEST_CASE("roles of Qwen3 (shipped)") {
  check_real_roles("qwen3", {{nullptr, 0}, {"<|im_end|>", 151645}, {"<|endoftext|>", 151643}, {nullptr, 0}});
}
TEST_CASE("real tokenizers: Gemma 3's roles") {
  check_real_roles("gemma3", {{"<bos>", 2}, {"<end_of_turn>", 106}, {"<pad>", 0}, {"<unk>", 3}});
}
TEST_CASE("real tokenizers: DeepSeek-V3's roles") {
  // DeepSeek writes its tokens as AddedToken objects; "｜" is U+FF5C, "▁" U+2581.
  check_real_roles("deepseek_v3", {{"<\xef\xbd\x9c"
                                    "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                    0},
                                   {"<\xef\xbd\x9c"
                                    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                    1},
                                   {"<\xef\xbd\x9c"
                                    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                    1},
                                   {nullptr, 0}});
}
TEST_CASE("real tokenizers: GPT-4o's roles") {
  check_real_roles("gpt4o",
                   {{"<|endoftext|>", 199999}, {"<|endoftext|>", 199999}, {nullptr, 0}, {"<|endoftext|>", 199999}});
}

TEST_CASE("real tokenizers: role matches, Llama 2 source, Qwen3 helper") {
  const auto llama2 = real_roles("llama2"), qwen3 = real_roles("qwen3");
  if (!llama2 || !qwen3) return;
  // Only eos is shared (Llama 2 has no pad, Qwen3 no bos/unk).
  const auto matches = match_special_tokens(*llama2, *qwen3);
  REQUIRE(matches.size() == 1);
  CHECK(matches[0].role == token_role::eos);
  CHECK(matches[0].helper_token == "<|im_end|>");
  CHECK(matches[0].helper_id == 151645);
  CHECK(matches[0].source_token == "</s>");
  CHECK(matches[0].source_id == 2);
}

TEST_CASE("real tokenizers: role matches, Gemma 3 source, Llama 3 helper") {
  const auto gemma3 = real_roles("gemma3"), llama3 = real_roles("llama3");
  if (!gemma3 || !llama3) return;
  const auto matches = match_special_tokens(*gemma3, *llama3);
  REQUIRE(matches.size() == 2);
  CHECK(matches[0].role == token_role::eos);
  CHECK(matches[0].helper_id == 128001);
  CHECK(matches[0].source_id == 106);
  CHECK(matches[1].role == token_role::bos);
  CHECK(matches[1].helper_id == 128000);
  CHECK(matches[1].source_id == 2);
}

TEST_CASE("real tokenizers: role matches, Llama 2 source, GPT-4o helper") {
  const auto llama2 = real_roles("llama2"), gpt4o = real_roles("gpt4o");
  if (!llama2 || !gpt4o) return;
  // GPT-4o's "<|endoftext|>" is bos, eos and unk: mapped once, as eos, to "</s>".
  const auto matches = match_special_tokens(*llama2, *gpt4o);
  REQUIRE(matches.size() == 1);
  CHECK(matches[0].role == token_role::eos);
  CHECK(matches[0].helper_id == 199999);
  CHECK(matches[0].source_token == "</s>");
}

TEST_CASE("roles of the shipped GPT-2 style models") {
  for (const char* name : {"en-large", "de-small"}) {
    CAPTURE(name);
    const auto folder = example_models_dir / name;
    const special_tokens roles =
        roles_of(folder, clp_transfer::io::read_tokenizer_json(folder / "tokenizer.json").vocabulary);
    check_roles(roles, {{"<|endoftext|>", 4999}, {"<|endoftext|>", 4999}, {nullptr, 0}, {"<|endoftext|>", 4999}});
    REQUIRE(roles[token_role::eos].has_value());
    CHECK(roles[token_role::eos]->declared_by == "tokenizer_config.json eos_token");
    CHECK(roles.notes.empty());  // config.json and generation_config.json agree: 4999
  }
}

TEST_CASE("precedence of the files that name special tokens") {
  temp_dir dir;
  const auto vocabulary = vocabulary_of({"<unk>", "<s>", "</s>", "<pad>", "<eot>", "<|endoftext|>"});

  SUBCASE("tokenizer_config.json with added_tokens_decoder comes before special_tokens_map.json") {
    write_file(dir / "tokenizer_config.json",
               R"({"added_tokens_decoder": {}, "eos_token": {"__type": "AddedToken", "content": "<eot>"},
                   "bos_token": null})");
    write_file(dir / "special_tokens_map.json", R"({"eos_token": "</s>", "bos_token": "<s>"})");
    const special_tokens roles = roles_of(dir.path, vocabulary);
    check_roles(roles, {{"<s>", 1}, {"<eot>", 4}, {nullptr, 0}, {nullptr, 0}});
    CHECK(roles[token_role::eos]->declared_by == "tokenizer_config.json eos_token");
    CHECK(roles[token_role::bos]->declared_by == "special_tokens_map.json bos_token");  // null: "none here"
  }
  SUBCASE("the older layout: special_tokens_map.json comes first") {
    write_file(dir / "tokenizer_config.json", R"({"eos_token": "<eot>"})");
    write_file(dir / "special_tokens_map.json", R"({"eos_token": {"content": "</s>", "lstrip": false}})");
    const special_tokens roles = roles_of(dir.path, vocabulary);
    check_roles(roles, {{nullptr, 0}, {"</s>", 2}, {nullptr, 0}, {nullptr, 0}});
  }
  SUBCASE("model files by id: generation_config.json, then config.json; of a list the first") {
    write_file(dir / "generation_config.json", R"({"eos_token_id": [4, 2], "bos_token_id": 1})");
    write_file(dir / "config.json", R"({"eos_token_id": 2, "pad_token_id": 3, "unk_token_id": null})");
    const special_tokens roles = roles_of(dir.path, vocabulary);
    check_roles(roles, {{"<s>", 1}, {"<eot>", 4}, {"<pad>", 3}, {nullptr, 0}});
    CHECK(roles[token_role::eos]->declared_by == "generation_config.json eos_token_id");
    REQUIRE(roles.notes.size() == 1);  // config.json's eos 2 leaves out the chosen 4
    CHECK(roles.notes[0] == (dir / "config.json").string() +
                                ": eos_token_id is [2], without the eos token \"<eot>\" (4) that "
                                "generation_config.json eos_token_id names");
  }
  SUBCASE("a token not in the vocabulary, an id naming no token, a wrong shape: noted, next one tried") {
    write_file(dir / "tokenizer_config.json", R"({"eos_token": "<missing>", "pad_token": 7, "unk_token": "<unk>"})");
    write_file(dir / "config.json", R"({"eos_token_id": 99, "bos_token_id": "1", "pad_token_id": 3})");
    const special_tokens roles = roles_of(dir.path, vocabulary);
    check_roles(roles, {{nullptr, 0}, {nullptr, 0}, {"<pad>", 3}, {"<unk>", 0}});
    const std::string tokenizer_config = (dir / "tokenizer_config.json").string();
    const std::string config = (dir / "config.json").string();
    const std::vector<std::string> expected_notes = {
        tokenizer_config + ": pad_token is 7, not a token; ignored",
        config + ": bos_token_id is \"1\", not a token id; ignored",
        tokenizer_config + ": eos_token names \"<missing>\", which is not in the vocabulary; ignored",
        config + ": eos_token_id is 99, which names no token of the vocabulary; ignored"};
    for (const std::string& note : expected_notes) {
      CAPTURE(note);
      CHECK(std::find(roles.notes.begin(), roles.notes.end(), note) != roles.notes.end());
    }
    CHECK(roles.notes.size() == expected_notes.size());
  }
  SUBCASE("no files: no roles; a file that is not JSON: an error naming it") {
    check_roles(roles_of(dir.path, vocabulary), {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}, {nullptr, 0}});
    write_file(dir / "config.json", "{");
    check_refusal(file_refusal_of([&] { roles_of(dir.path, vocabulary); }), file_kind::malformed, dir / "config.json",
                  {"not valid JSON"});
  }
}

TEST_CASE("match_special_tokens: one source row per helper token, by role") {
  const auto source_vocabulary = vocabulary_of({"<unk>", "<s>", "</s>", "<pad>"});
  const auto helper_vocabulary = vocabulary_of({"a", "<|endoftext|>", "<pad>"});
  temp_dir source, helper;
  write_file(source / "tokenizer_config.json",
             R"({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})");
  write_file(helper / "tokenizer_config.json",
             R"({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})");
  const auto matches =
      match_special_tokens(roles_of(source.path, source_vocabulary), roles_of(helper.path, helper_vocabulary));
  // The helper's "<|endoftext|>" has three roles and takes the source's eos row; its "<pad>"
  // has no role, so it is left to exact matching.
  REQUIRE(matches.size() == 1);
  CHECK(matches[0].role == token_role::eos);
  CHECK(matches[0].helper_token == "<|endoftext|>");
  CHECK(matches[0].helper_id == 1);
  CHECK(matches[0].source_token == "</s>");
  CHECK(matches[0].source_id == 2);

  // Every role on both sides: listed eos, bos, pad, unk.
  write_file(helper / "tokenizer_config.json",
             R"({"bos_token": "a", "eos_token": "<|endoftext|>", "pad_token": "<pad>"})");
  const auto all =
      match_special_tokens(roles_of(source.path, source_vocabulary), roles_of(helper.path, helper_vocabulary));
  REQUIRE(all.size() == 3);
  CHECK(all[0].role == token_role::eos);
  CHECK(all[1].role == token_role::bos);
  CHECK(all[1].source_id == 1);
  CHECK(all[2].role == token_role::pad);
  CHECK(all[2].helper_id == 2);
  CHECK(all[2].source_id == 3);
}

TEST_CASE("target_generation_config: the source's settings with the helper's token ids") {
  const auto source = nlohmann::ordered_json::parse(
      R"({"temperature": 0.6, "eos_token_id": 2, "bos_token_id": 1, "pad_token_id": 0, "suppress_tokens": [5],
          "top_p": 0.9})");
  const auto helper_generation = nlohmann::ordered_json::parse(R"({"eos_token_id": [1, 106], "top_k": 64})");
  const auto helper_config = nlohmann::ordered_json::parse(R"({"bos_token_id": 2, "eos_token_id": 1})");

  const auto written = target_generation_config(source, helper_generation, helper_config);
  REQUIRE(written.has_value());
  // Source key order kept; eos from the helper's generation_config.json, bos from its
  // config.json, pad and suppress_tokens dropped (the helper has none); top_k not taken.
  CHECK(written->dump() == R"({"temperature":0.6,"eos_token_id":[1,106],"bos_token_id":2,"top_p":0.9})");

  const auto from_helper = target_generation_config(std::nullopt, helper_generation, helper_config);
  REQUIRE(from_helper.has_value());
  CHECK(from_helper->dump() == R"({"bos_token_id":2,"eos_token_id":[1,106]})");

  CHECK_FALSE(target_generation_config(std::nullopt, std::nullopt, helper_config).has_value());

  // The output's from the two models' files as read: one that is not an object is refused
  // (naming it) before any work, where the special tokens only ignore it.
  temp_dir source_dir, helper_dir;
  write_file(helper_dir / "config.json", R"({"eos_token_id": 1})");
  CHECK_FALSE(output_generation_config(model_json_files::read(source_dir.path), model_json_files::read(helper_dir.path))
                  .has_value());
  write_file(helper_dir / "generation_config.json", "[1]");
  const model_json_files helper_files = model_json_files::read(helper_dir.path);
  check_refusal(
      file_refusal_of([&] { output_generation_config(model_json_files::read(source_dir.path), helper_files); }),
      file_kind::malformed, helper_dir / "generation_config.json", {"not a JSON object"});
  CHECK(read_special_tokens(helper_files, vocabulary_of({"a", "b"})).notes ==
        std::vector<std::string>{(helper_dir / "generation_config.json").string() + ": not a JSON object; ignored"});
}

}  // namespace test_special_tokens
