// io/tokenizer/spelling.hpp: a tokenizer's spelling read from its own declarations, on real
// tokenizers of six families and on small hand-written ones for each rule.
#include "io/tokenizer/spelling.hpp"

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/tokenizer/reading.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "io/support/file_refusals.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"
#include "token_matching.hpp"

using namespace clp_transfer;
using namespace clp_test;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_tokenizer_spelling {
namespace {

/// The spelling of a tokenizer.json written from `text`.
tokenizer_spelling spelling_of_text(const std::string& text) {
  temp_dir dir;
  write_file(dir / "tokenizer.json", text);
  return read_tokenizer_spelling(dir / "tokenizer.json");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::filesystem::path example_models_dir = CLP_EXAMPLE_MODELS_DIR;

/// The spelling of the real tokenizer `name`, or nullopt, the running case marked skipped, when
/// it is absent.
std::optional<tokenizer_spelling> real_spelling(const std::string& name) {
  const auto folder = needed_tokenizer(name);
  return folder ? std::optional(read_tokenizer_spelling(*folder)) : std::nullopt;
}

/// What each family is known to be: Llama 2 and Gemma 3 were converted from SentencePiece models
/// with byte fallback; Llama 3, Qwen3, DeepSeek-V3 and GPT-4o are byte-level BPE.
void check_family_spelling(const std::string& name, clp::token_spelling kind, bool byte_fallback) {
  const auto spelling = real_spelling(name);
  if (!spelling) return;
  CAPTURE(spelling->evidence);
  REQUIRE(spelling->kind.has_value());
  CHECK(*spelling->kind == kind);
  CHECK(spelling->byte_fallback == byte_fallback);
  CHECK(spelling->continuing_prefix.empty());
}

/// read_tokenizer on the real tokenizer `name` finds what a whole parse of it finds.
void check_read_once(const std::string& name) {
  const auto folder = needed_tokenizer(name);
  if (!folder) return;
  // The oracle: the whole document as nlohmann's DOM, its vocabulary taken by hand.
  std::ifstream in(*folder / "tokenizer.json", std::ios::binary);
  const nlohmann::json whole = nlohmann::json::parse(in);
  std::unordered_map<std::string, std::int64_t> ids;
  for (const auto& [token, id] : whole["model"]["vocab"].items()) ids[token] = id.get<std::int64_t>();
  for (const nlohmann::json& added : whole["added_tokens"])
    ids[added["content"].get<std::string>()] = added["id"].get<std::int64_t>();
  const tokenizer_spelling expected = spelling_from_declarations(whole);

  const tokenizer_reading reading = read_tokenizer(*folder);
  CHECK(reading.file == *folder / "tokenizer.json");
  CHECK(reading.vocabulary.ids == ids);
  CHECK(reading.spelling.kind == expected.kind);
  CHECK(reading.spelling.byte_fallback == expected.byte_fallback);
  CHECK(reading.spelling.evidence == expected.evidence);
}

}  // namespace

// The families' published tokenizer.json files.
TEST_CASE("real tokenizers: Llama 2's spelling") {
  check_family_spelling("llama2", clp::token_spelling::sentencepiece, true);
}
TEST_CASE("real tokenizers: Gemma 3's spelling") {
  check_family_spelling("gemma3", clp::token_spelling::sentencepiece, true);
}
TEST_CASE("real tokenizers: Llama 3's spelling") {
  check_family_spelling("llama3", clp::token_spelling::byte_level, false);
}
TEST_CASE("real tokenizers: Qwen3's spelling") {
  check_family_spelling("qwen3", clp::token_spelling::byte_level, false);
}
TEST_CASE("real tokenizers: DeepSeek-V3's spelling") {
  check_family_spelling("deepseek_v3", clp::token_spelling::byte_level, false);
}
TEST_CASE("real tokenizers: GPT-4o's spelling") {
  check_family_spelling("gpt4o", clp::token_spelling::byte_level, false);
}

TEST_CASE("real tokenizers: which declarations decided Llama 2's spelling") {
  if (const auto llama2 = real_spelling("llama2"))
    CHECK(llama2->evidence ==
          "decoder Replace '\xe2\x96\x81'->' ' + normalizer Prepend '\xe2\x96\x81' + normalizer Replace "
          "' '->'\xe2\x96\x81'; byte fallback: decoder ByteFallback + model byte_fallback");
}

TEST_CASE("real tokenizers: which declarations decided Gemma 3's spelling") {
  // Gemma 3 declares no Prepend (it adds no leading space) but still spells spaces "▁".
  if (const auto gemma3 = real_spelling("gemma3"))
    CHECK(gemma3->evidence ==
          "decoder Replace '\xe2\x96\x81'->' ' + normalizer Replace ' '->'\xe2\x96\x81'; byte fallback: decoder "
          "ByteFallback + model byte_fallback");
}

TEST_CASE("real tokenizers: which declarations decided Llama 3's spelling") {
  if (const auto llama3 = real_spelling("llama3")) {
    CHECK(llama3->evidence == "decoder ByteLevel + pre_tokenizer ByteLevel");
    // Read from the tokenizer.json itself, the same.
    CHECK(read_tokenizer_spelling(*real_tokenizer("llama3") / "tokenizer.json").evidence == llama3->evidence);
  }
}

TEST_CASE("spelling of the shipped GPT-2 style tokenizers") {
  for (const char* name : {"en-large", "de-small"}) {
    CAPTURE(name);
    const tokenizer_spelling folder = read_tokenizer_spelling(example_models_dir / name);
    REQUIRE(folder.kind.has_value());
    CHECK(*folder.kind == clp::token_spelling::byte_level);
    CHECK(folder.evidence == "decoder ByteLevel + pre_tokenizer ByteLevel");
    CHECK_FALSE(folder.byte_fallback);
    // Their vocab.json alone: tokenizer_config.json beside it names GPT2Tokenizer.
    const tokenizer_spelling vocab = read_tokenizer_spelling(example_models_dir / name / "vocab.json");
    REQUIRE(vocab.kind.has_value());
    CHECK(*vocab.kind == clp::token_spelling::byte_level);
    CHECK(vocab.evidence == "tokenizer_config.json tokenizer_class GPT2Tokenizer");
  }
  // OpenAI's own GPT-2 vocabulary file.
  const tokenizer_spelling gpt2 = read_tokenizer_spelling(data_dir / "gpt2" / "encoder.json");
  REQUIRE(gpt2.kind.has_value());
  CHECK(*gpt2.kind == clp::token_spelling::byte_level);
}

TEST_CASE("a vocab.json declares nothing: its neighbours decide") {
  temp_dir dir;
  write_file(dir / "vocab.json", R"({"a": 0, "\u0120a": 1})");
  tokenizer_spelling alone = read_tokenizer_spelling(dir.path);
  CHECK_FALSE(alone.kind.has_value());
  CHECK(contains(alone.evidence, "unknown: vocab.json declares no spelling"));

  write_file(dir / "merges.txt", "#version: 0.2\n\xc4\xa0 a\n");
  const tokenizer_spelling with_merges = read_tokenizer_spelling(dir / "vocab.json");
  REQUIRE(with_merges.kind.has_value());
  CHECK(*with_merges.kind == clp::token_spelling::byte_level);
  CHECK(with_merges.evidence == "vocab.json beside merges.txt (GPT-2's byte-level BPE layout)");

  // A named class overrides the layout: CLIP keeps vocab.json + merges.txt but ends words
  // with "</w>", which no spelling covers.
  write_file(dir / "tokenizer_config.json", R"({"tokenizer_class": "CLIPTokenizer"})");
  const tokenizer_spelling clip = read_tokenizer_spelling(dir.path);
  CHECK_FALSE(clip.kind.has_value());
  CHECK(contains(clip.evidence, "CLIPTokenizer"));

  write_file(dir / "tokenizer_config.json", R"({"tokenizer_class": "RobertaTokenizerFast"})");
  const tokenizer_spelling roberta = read_tokenizer_spelling(dir.path);
  REQUIRE(roberta.kind.has_value());
  CHECK(*roberta.kind == clp::token_spelling::byte_level);
  CHECK(roberta.evidence == "tokenizer_config.json tokenizer_class RobertaTokenizerFast");
}

TEST_CASE("a BERT-style WordPiece tokenizer.json") {
  const std::string bert = R"({
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "play": 4, "##ing": 5}}})";
  const tokenizer_spelling spelling = spelling_of_text(bert);
  REQUIRE(spelling.kind.has_value());
  CHECK(*spelling.kind == clp::token_spelling::wordpiece);
  CHECK(spelling.continuing_prefix == "##");
  CHECK_FALSE(spelling.byte_fallback);
  CHECK(spelling.evidence == "decoder WordPiece \"##\" + model WordPiece \"##\"");

  // A model that declares another prefix, with no decoder: the model's prefix.
  auto document = nlohmann::json::parse(bert);
  document["model"]["continuing_subword_prefix"] = "@@";
  document.erase("decoder");
  const tokenizer_spelling other = spelling_from_declarations(document);
  REQUIRE(other.kind.has_value());
  CHECK(other.continuing_prefix == "@@");

  // Model and decoder disagreeing: unknown.
  document["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
  const tokenizer_spelling disagreeing = spelling_from_declarations(document);
  CHECK_FALSE(disagreeing.kind.has_value());
  CHECK(contains(disagreeing.evidence, "differs"));
}

TEST_CASE("a Unigram tokenizer with Metaspace (T5, XLM-R) is SentencePiece without byte fallback") {
  const tokenizer_spelling spelling = spelling_of_text(R"({
    "normalizer": {"type": "Precompiled", "precompiled_charsmap": "AA=="},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
    "model": {"type": "Unigram", "unk_id": 2, "vocab": [["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0],
                                                        ["\u2581the", -2.5]]}})");
  REQUIRE(spelling.kind.has_value());
  CHECK(*spelling.kind == clp::token_spelling::sentencepiece);
  CHECK_FALSE(spelling.byte_fallback);
  CHECK(spelling.evidence == "decoder Metaspace '\xe2\x96\x81' + pre_tokenizer Metaspace '\xe2\x96\x81'");
}

TEST_CASE("plain: a word-level or whitespace-split tokenizer") {
  const tokenizer_spelling word_level = spelling_of_text(R"({
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1}, "unk_token": "[UNK]"}})");
  REQUIRE(word_level.kind.has_value());
  CHECK(*word_level.kind == clp::token_spelling::plain);
  CHECK(word_level.evidence == "pre_tokenizer WhitespaceSplit + model WordLevel");

  const tokenizer_spelling bpe = spelling_of_text(R"({
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "Digits"}]},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
  REQUIRE(bpe.kind.has_value());
  CHECK(*bpe.kind == clp::token_spelling::plain);
}

TEST_CASE("a spelling that cannot be told is unknown, with the reason") {
  SUBCASE("nothing declared") {
    const tokenizer_spelling spelling = spelling_of_text(
        R"({"normalizer": null, "pre_tokenizer": null, "decoder": null,
            "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
    CHECK_FALSE(spelling.kind.has_value());
    CHECK(spelling.evidence == "unknown: declares no decoder, pre-tokenizer or model type that tells its spelling");
  }
  SUBCASE("two spellings declared") {
    const tokenizer_spelling spelling = spelling_of_text(R"({
      "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"},
      "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
    CHECK_FALSE(spelling.kind.has_value());
    CHECK(contains(spelling.evidence,
                   "contradicting declarations decoder ByteLevel (byte_level) and pre_tokenizer "
                   "Metaspace"));
  }
  SUBCASE("CLIP's end-of-word suffix") {
    const tokenizer_spelling spelling = spelling_of_text(R"({
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "x"},
                        "behavior": "Removed", "invert": true}, {"type": "ByteLevel", "add_prefix_space": false}]},
      "decoder": {"type": "BPEDecoder", "suffix": "</w>"},
      "model": {"type": "BPE", "end_of_word_suffix": "</w>", "vocab": {"a</w>": 0}, "merges": []}})");
    CHECK_FALSE(spelling.kind.has_value());
    CHECK(contains(spelling.evidence, "decoder BPEDecoder"));
    CHECK(contains(spelling.evidence, "end_of_word_suffix \"</w>\""));
  }
  SUBCASE("a Metaspace with another mark") {
    const tokenizer_spelling spelling =
        spelling_of_text(R"({"decoder": {"type": "Metaspace", "replacement": "_"}, "model": {"vocab": {"a": 0}}})");
    CHECK_FALSE(spelling.kind.has_value());
    CHECK(contains(spelling.evidence, "replacement \"_\""));
  }
  SUBCASE("not an object") { CHECK_FALSE(spelling_from_declarations(nlohmann::json::array()).kind.has_value()); }
}

TEST_CASE("read_tokenizer_spelling: unreadable input names the file") {
  temp_dir dir;
  write_file(dir / "tokenizer.json", "{\"model\": ");
  check_refusal(file_refusal_of([&] { read_tokenizer_spelling(dir / "tokenizer.json"); }), file_kind::malformed,
                dir / "tokenizer.json", {"not valid JSON"});
  check_refusal(file_refusal_of([&] { read_tokenizer_spelling(dir / "absent.json"); }), file_kind::io,
                dir / "absent.json", {"no such file or folder"});
  temp_dir empty;
  check_refusal(file_refusal_of([&] { read_tokenizer_spelling(empty.path); }), file_kind::malformed, empty.path,
                {"no tokenizer.json, vocab.json, SentencePiece model"});
}

TEST_CASE("the declarations are read without the vocabulary") {
  temp_dir dir;
  write_file(dir / "tokenizer.json",
             R"({"added_tokens": [{"id": 0, "content": "<s>"}], "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "byte_fallback": false, "vocab": {"<s>": 0, "a": 1}, "merges": ["a a"]}})");
  const nlohmann::json declarations = clp_transfer::io::read_tokenizer_json(dir / "tokenizer.json", clp_transfer::io::tokenizer_json_options::declarations_only()).declarations;
  CHECK(declarations == nlohmann::json::parse(R"({"decoder": {"type": "ByteLevel"},
                                                 "model": {"type": "BPE", "byte_fallback": false}})"));
}

// read_tokenizer reads a tokenizer.json once and finds what a whole parse finds.
TEST_CASE("read_tokenizer on Qwen3 (shipped): what a whole parse finds") { check_read_once("qwen3"); }
TEST_CASE("real tokenizers: read_tokenizer on Llama 2") { check_read_once("llama2"); }
TEST_CASE("real tokenizers: read_tokenizer on Llama 3") { check_read_once("llama3"); }
TEST_CASE("real tokenizers: read_tokenizer on Gemma 3") { check_read_once("gemma3"); }
TEST_CASE("real tokenizers: read_tokenizer on DeepSeek-V3") { check_read_once("deepseek_v3"); }
TEST_CASE("real tokenizers: read_tokenizer on GPT-4o") { check_read_once("gpt4o"); }

TEST_CASE("a tokenizer.json under another name is told from a vocab.json by its top-level \"model\" object") {
  temp_dir dir;
  const auto is_tokenizer_json = [&](const std::string& text) {
    write_file(dir / "t.json", text);
    return clp_transfer::io::read_json_vocabulary(dir / "t.json",
                                                  clp_transfer::io::tokenizer_json_options::declarations_only())
        .is_tokenizer_json;
  };
  CHECK(is_tokenizer_json(R"({"version": "1.0", "added_tokens": [{"model": {}}], "model": {"vocab": {}}})"));
  CHECK_FALSE(is_tokenizer_json(R"({"model": 5, "a": 0})"));  // a vocab.json holding the token "model"
  CHECK_FALSE(is_tokenizer_json(R"({"a": {"model": {}}, "b": [{"model": {}}]})"));
  CHECK_FALSE(is_tokenizer_json(R"([{"model": {}}])"));
  CHECK_FALSE(is_tokenizer_json(R"({"model": [{}]})"));
  // One pass reads the whole file, so what is not JSON is refused whichever kind it began as.
  for (const std::string& text : std::vector<std::string>{R"({"model": {}, "then": not json})", R"({"a": )", std::string(5000, '[')})
    check_refusal(file_refusal_of([&] { is_tokenizer_json(text); }), file_kind::malformed, dir / "t.json", {});

  // Read whole as what it is.
  write_file(dir / "t.json", R"({"model": 5, "a": 0})");
  const tokenizer_reading vocab = read_tokenizer(dir / "t.json");
  CHECK(vocab.vocabulary.ids == std::unordered_map<std::string, std::int64_t>{{"model", 5}, {"a", 0}});
  CHECK_FALSE(vocab.spelling.kind.has_value());
  write_file(dir / "t.json", R"({"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}}})");
  const tokenizer_reading tokenizer = read_tokenizer(dir / "t.json");
  CHECK(tokenizer.vocabulary.ids == std::unordered_map<std::string, std::int64_t>{{"a", 0}});
  CHECK(tokenizer.spelling.evidence == "decoder ByteLevel");
}

TEST_CASE("option values the program cannot use are clp::invalid_arguments naming the option") {
  const auto fuzzy = file_refusal_of([] { parse_match("fuzzy", true); });
  REQUIRE(fuzzy);
  CHECK(fuzzy->kind == kind_name(clp::error_kind::invalid_argument));
  CHECK(fuzzy->facts.argument == "--match");
  CHECK(fuzzy->message == "--match must be bytes or exact, not 'fuzzy'");
  CHECK(parse_match("exact", true).match == clp::token_match::exact);
}

}  // namespace test_tokenizer_spelling
