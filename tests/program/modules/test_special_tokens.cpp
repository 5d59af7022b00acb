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

#include "real_tokenizers.hpp"

using namespace clp::program;
using namespace spelling_test;

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
clp::io::token_vocabulary vocabulary_of(const std::vector<std::string>& tokens) {
  clp::io::token_vocabulary vocabulary;
  for (const std::string& token : tokens) vocabulary.ids.emplace(token, vocabulary.size++);
  return vocabulary;
}

/// The special tokens of the real tokenizer `name`, read once per run (reading a vocabulary
/// of up to 262k tokens is the slow part), or nullopt when it is absent.
std::optional<special_tokens> real_roles(const std::string& name) {
  static std::map<std::string, std::optional<special_tokens>> read;
  const auto it = read.find(name);
  if (it != read.end()) return it->second;
  const auto folder = real_tokenizer(name);
  if (!folder) return read[name] = std::nullopt;
  return read[name] =
             read_special_tokens(*folder / "tokenizer.json", clp::io::read_tokenizer_json(*folder / "tokenizer.json"));
}

}  // namespace

TEST_CASE("roles of real tokenizers (expected ids read from the files with Python's json module)") {
  // {bos, eos, pad, unk} as tokenizer_config.json names them, resolved in tokenizer.json.
  struct family {
    const char* name;
    expected_role roles[4];
  };
  const std::vector<family> families = {
      {"llama2", {{"<s>", 1}, {"</s>", 2}, {nullptr, 0}, {"<unk>", 0}}},
      {"llama3", {{"<|begin_of_text|>", 128000}, {"<|end_of_text|>", 128001}, {nullptr, 0}, {nullptr, 0}}},
      {"qwen3", {{nullptr, 0}, {"<|im_end|>", 151645}, {"<|endoftext|>", 151643}, {nullptr, 0}}},
      {"gemma3", {{"<bos>", 2}, {"<end_of_turn>", 106}, {"<pad>", 0}, {"<unk>", 3}}},
      // DeepSeek writes its tokens as AddedToken objects; "｜" is U+FF5C, "▁" U+2581.
      {"deepseek_v3",
       {{"<\xef\xbd\x9c"
         "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
         0},
        {"<\xef\xbd\x9c"
         "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
         1},
        {"<\xef\xbd\x9c"
         "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
         1},
        {nullptr, 0}}},
      {"gpt4o", {{"<|endoftext|>", 199999}, {"<|endoftext|>", 199999}, {nullptr, 0}, {"<|endoftext|>", 199999}}}};
  for (const family& f : families) {
    CAPTURE(f.name);
    const auto read = real_roles(f.name);
    if (!read) {
      MESSAGE("skipped: no " << std::string(f.name) << " tokenizer under tests/data (see real_tokenizers.hpp)");
      continue;
    }
    const special_tokens& roles = *read;
    check_roles(roles, f.roles);
    for (const auto& role : roles.by_role)
      if (role) CHECK(role->declared_by.rfind("tokenizer_config.json ", 0) == 0);
    CHECK(roles.notes.empty());
  }
}

TEST_CASE("real cross-family role matches") {
  const auto llama2 = real_roles("llama2"), qwen3 = real_roles("qwen3"), gemma3 = real_roles("gemma3"),
             llama3 = real_roles("llama3"), gpt4o = real_roles("gpt4o");
  if (llama2 && qwen3) {
    // Qwen3 helper, Llama 2 source: only eos is shared (Llama 2 has no pad, Qwen3 no bos/unk).
    const auto matches = match_special_tokens(*llama2, *qwen3);
    REQUIRE(matches.size() == 1);
    CHECK(matches[0].role == token_role::eos);
    CHECK(matches[0].helper_token == "<|im_end|>");
    CHECK(matches[0].helper_id == 151645);
    CHECK(matches[0].source_token == "</s>");
    CHECK(matches[0].source_id == 2);
  } else {
    MESSAGE("skipped: Llama 2 or Qwen3 tokenizer absent");
  }
  if (gemma3 && llama3) {
    const auto matches = match_special_tokens(*gemma3, *llama3);
    REQUIRE(matches.size() == 2);
    CHECK(matches[0].role == token_role::eos);
    CHECK(matches[0].helper_id == 128001);
    CHECK(matches[0].source_id == 106);
    CHECK(matches[1].role == token_role::bos);
    CHECK(matches[1].helper_id == 128000);
    CHECK(matches[1].source_id == 2);
  } else {
    MESSAGE("skipped: Gemma 3 or Llama 3 tokenizer absent");
  }
  if (llama2 && gpt4o) {
    // GPT-4o's "<|endoftext|>" is bos, eos and unk: mapped once, as eos, to "</s>".
    const auto matches = match_special_tokens(*llama2, *gpt4o);
    REQUIRE(matches.size() == 1);
    CHECK(matches[0].role == token_role::eos);
    CHECK(matches[0].helper_id == 199999);
    CHECK(matches[0].source_token == "</s>");
  } else {
    MESSAGE("skipped: Llama 2 or GPT-4o tokenizer absent");
  }
}

TEST_CASE("roles of the shipped GPT-2 style models") {
  for (const char* name : {"en-large", "de-small"}) {
    CAPTURE(name);
    const auto folder = example_models_dir / name;
    const special_tokens roles = read_special_tokens(folder, clp::io::read_tokenizer_json(folder / "tokenizer.json"));
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
    const special_tokens roles = read_special_tokens(dir.path, vocabulary);
    check_roles(roles, {{"<s>", 1}, {"<eot>", 4}, {nullptr, 0}, {nullptr, 0}});
    CHECK(roles[token_role::eos]->declared_by == "tokenizer_config.json eos_token");
    CHECK(roles[token_role::bos]->declared_by == "special_tokens_map.json bos_token");  // null: "none here"
  }
  SUBCASE("the older layout: special_tokens_map.json comes first") {
    write_file(dir / "tokenizer_config.json", R"({"eos_token": "<eot>"})");
    write_file(dir / "special_tokens_map.json", R"({"eos_token": {"content": "</s>", "lstrip": false}})");
    const special_tokens roles = read_special_tokens(dir.path, vocabulary);
    check_roles(roles, {{nullptr, 0}, {"</s>", 2}, {nullptr, 0}, {nullptr, 0}});
  }
  SUBCASE("model files by id: generation_config.json, then config.json; of a list the first") {
    write_file(dir / "generation_config.json", R"({"eos_token_id": [4, 2], "bos_token_id": 1})");
    write_file(dir / "config.json", R"({"eos_token_id": 2, "pad_token_id": 3, "unk_token_id": null})");
    const special_tokens roles = read_special_tokens(dir.path, vocabulary);
    check_roles(roles, {{"<s>", 1}, {"<eot>", 4}, {"<pad>", 3}, {nullptr, 0}});
    CHECK(roles[token_role::eos]->declared_by == "generation_config.json eos_token_id");
    REQUIRE(roles.notes.size() == 1);  // config.json's eos 2 leaves out the chosen 4
    CHECK(roles.notes[0] ==
          "eos: generation_config.json eos_token_id names \"<eot>\" (4), but config.json "
          "eos_token_id is [2]");
  }
  SUBCASE("a token not in the vocabulary, an id naming no token, a wrong shape: noted, next one tried") {
    write_file(dir / "tokenizer_config.json", R"({"eos_token": "<missing>", "pad_token": 7, "unk_token": "<unk>"})");
    write_file(dir / "config.json", R"({"eos_token_id": 99, "bos_token_id": "1", "pad_token_id": 3})");
    const special_tokens roles = read_special_tokens(dir.path, vocabulary);
    check_roles(roles, {{nullptr, 0}, {nullptr, 0}, {"<pad>", 3}, {"<unk>", 0}});
    const std::vector<std::string> expected_notes = {
        "tokenizer_config.json: pad_token is 7, not a token; ignored",
        "config.json: bos_token_id is \"1\", not a token id; ignored",
        "tokenizer_config.json eos_token names \"<missing>\", which is not in the vocabulary; ignored",
        "config.json eos_token_id is 99, which names no token of the vocabulary; ignored"};
    for (const std::string& note : expected_notes) {
      CAPTURE(note);
      CHECK(std::find(roles.notes.begin(), roles.notes.end(), note) != roles.notes.end());
    }
    CHECK(roles.notes.size() == expected_notes.size());
  }
  SUBCASE("no files: no roles; a file that is not JSON: an error naming it") {
    check_roles(read_special_tokens(dir.path, vocabulary), {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}, {nullptr, 0}});
    write_file(dir / "config.json", "{");
    const std::string error = error_of([&] { read_special_tokens(dir.path, vocabulary); });
    CHECK(error.rfind((dir / "config.json").string() + ": not valid JSON", 0) == 0);
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
  const auto matches = match_special_tokens(read_special_tokens(source.path, source_vocabulary),
                                            read_special_tokens(helper.path, helper_vocabulary));
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
  const auto all = match_special_tokens(read_special_tokens(source.path, source_vocabulary),
                                        read_special_tokens(helper.path, helper_vocabulary));
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

  temp_dir dir;
  CHECK_FALSE(read_generation_config(dir.path).has_value());
  write_file(dir / "generation_config.json", "[1]");
  CHECK(error_of([&] { read_generation_config(dir.path); }) ==
        (dir / "generation_config.json").string() + ": not a JSON object");
}
