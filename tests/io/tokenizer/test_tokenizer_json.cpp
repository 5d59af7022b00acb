// Tests of the tokenizer.json reader (io/tokenizer/tokenizer_json.hpp): the vocabulary of every
// model type, the declarations and the merges, read in one pass and compared with a whole parse
// of the same text by nlohmann::json; vocab.json beside it (io/tokenizer/vocabulary.hpp); and
// every refusal, with the file it names.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/support/file_refusals.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"

namespace io = clp_transfer::io;
using namespace clp_test;

TEST_CASE("vocabulary of a BPE tokenizer.json with added_tokens") {
  temp_dir dir;
  write_file(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 0, "content": "<|endoftext|>", "special": true},
                     {"id": 5, "content": "<pad>", "special": true}],
    "model": {"type": "BPE", "vocab": {"<|endoftext|>": 0, "a": 1, "b": 2, "ab": 3, "\u0120a": 4},
              "merges": ["a b"]}})");
  const io::token_vocabulary vocabulary = io::read_tokenizer_json(dir / "tokenizer.json").vocabulary;
  CHECK(vocabulary.size == 6);
  CHECK(vocabulary.ids.size() == 6);
  CHECK(vocabulary.ids.at("<|endoftext|>") == 0);
  CHECK(vocabulary.ids.at("\xc4\xa0"
                          "a") == 4);
  CHECK(vocabulary.ids.at("<pad>") == 5);
}

TEST_CASE("vocabulary of a Unigram tokenizer.json") {
  temp_dir dir;
  write_file(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}],
    "model": {"type": "Unigram", "unk_id": 0,
              "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<0x0A>", 0.0],
                        ["\u2581the", -2.5], ["s", -3.1]]}})");
  const io::token_vocabulary vocabulary = io::read_tokenizer_json(dir / "tokenizer.json").vocabulary;
  CHECK(vocabulary.size == 6);
  CHECK(vocabulary.ids.at("<unk>") == 0);
  CHECK(vocabulary.ids.at("</s>") == 2);
  CHECK(vocabulary.ids.at("<0x0A>") == 3);
  CHECK(vocabulary.ids.at("\xe2\x96\x81the") == 4);
}

TEST_CASE("vocabulary of a vocab.json, and which file read_vocabulary prefers") {
  temp_dir dir;
  write_file(dir / "vocab.json", R"({"x": 0, "y": 2})");
  io::token_vocabulary vocabulary = io::read_vocabulary(dir.path);
  CHECK(vocabulary.size == 3);  // ids have a gap: rows up to the highest id
  CHECK(vocabulary.ids.size() == 2);

  write_file(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"q": 0}}})");
  vocabulary = io::read_vocabulary(dir.path);
  CHECK(vocabulary.ids.count("q") == 1);

  temp_dir empty;
  check_refusal(file_refusal_of([&] { io::read_vocabulary(empty.path); }), file_kind::malformed, empty.path,
                {"no tokenizer.json, vocab.json, SentencePiece model"});
}

TEST_CASE("vocabulary errors name the file and the culprits") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto error_for = [&](const std::string& text) {
    write_file(tokenizer, text);
    return file_refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  check_refusal(error_for("{not json"), file_kind::malformed, tokenizer, {"not valid JSON"});
  check_refusal(error_for(R"({"model": {"type": "BPE"}})"), file_kind::malformed, tokenizer, {"no vocabulary"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {}}})"), file_kind::malformed, tokenizer,
                {"no vocabulary"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 1}}})"), file_kind::malformed,
                tokenizer, {"tokens \"b\" and \"c\" both have id 1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": -1}}})"), file_kind::malformed, tokenizer,
                {"\"a\" has negative id -1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": "0"}}})"), file_kind::malformed, tokenizer,
                {"not an integer"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}},
                           "added_tokens": [{"id": 0, "content": "b"}]})"),
                file_kind::malformed, tokenizer, {"added token \"b\" has id 0 but already has id 1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                           "added_tokens": [{"id": 0, "content": "<x>"}]})"),
                file_kind::malformed, tokenizer, {"\"a\" and \"<x>\" both have id 0"});
  check_refusal(error_for(R"({"model": {"type": "Unigram", "vocab": [["a", 0], ["a", 0]]}})"), file_kind::malformed,
                tokenizer, {"token \"a\" has id 1 but already has id 0"});
  check_refusal(error_for(R"({"model": {"type": "Unigram", "vocab": {"a": 0}}})"), file_kind::malformed, tokenizer,
                {"not an array"});
  check_refusal(error_for(R"({"model": {"type": "Magic", "vocab": {"a": 0}}})"), file_kind::malformed, tokenizer,
                {"unsupported", "\"Magic\""});

  write_file(dir / "vocab.json", R"({"\n": 3, "z": 3})");
  check_refusal(file_refusal_of([&] { io::read_vocab_json(dir / "vocab.json"); }), file_kind::malformed,
                dir / "vocab.json", {"tokens \"\\n\" and \"z\" both have id 3"});
}

namespace test_tokenizer_json {

/// What a whole parse of a tokenizer.json says read_tokenizer_json_contents should give: the
/// declarations are the document less model.vocab, model.merges and added_tokens; the
/// vocabulary is model.vocab (object: token -> id; array: id = position) plus added_tokens.
struct whole_parse {
  std::map<std::string, std::int64_t> ids;
  nlohmann::json declarations;

  explicit whole_parse(const std::string& text) : declarations(nlohmann::json::parse(text)) {
    nlohmann::json& model = declarations["model"];
    if (model["vocab"].is_array())
      for (std::size_t i = 0; i < model["vocab"].size(); ++i)
        ids[model["vocab"][i][0].get<std::string>()] = std::int64_t(i);
    else
      for (const auto& [token, id] : model["vocab"].items()) ids[token] = id.get<std::int64_t>();
    for (const nlohmann::json& added : declarations.value("added_tokens", nlohmann::json::array()))
      ids[added["content"].get<std::string>()] = added["id"].get<std::int64_t>();
    model.erase("vocab");
    model.erase("merges");
    declarations.erase("added_tokens");
  }
};

}  // namespace test_tokenizer_json

using test_tokenizer_json::whole_parse;

TEST_CASE("tokenizer.json in one pass: the vocabulary and declarations a whole parse finds") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const std::vector<std::string> documents = {
      // Hugging Face's key order; merges as strings; a post_processor whose own "vocab" and
      // "merges" are not the model's and stay.
      R"({"version": "1.0", "truncation": null, "added_tokens": [{"id": 3, "content": "<s>", "special": true},
          {"id": 4, "content": "<pad>"}], "normalizer": {"type": "NFC"},
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}},
                                                                  {"type": "ByteLevel", "add_prefix_space": false}]},
          "post_processor": {"type": "TemplateProcessing", "vocab": [1, 2], "merges": {"x": [true, null, -1.5]}},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "dropout": null, "byte_fallback": false, "vocab": {"a": 0, "b": 1, "<s>": 3,
                    "\u0120a\u00e9": 2}, "merges": [["a", "b"], ["\u0120", "a"]], "continuing_subword_prefix": ""}})",
      // The model's keys in another order, model.type after model.vocab; a Unigram vocabulary
      // with extra fields in an entry; merges that are an object (skipped whatever they are).
      R"({"model": {"vocab": [["<unk>", 0.0], ["\u2581the", -2.5, "extra", [1]], ["s", -3]], "unk_id": 0,
                    "merges": {"deep": [[[]]]}, "type": "Unigram"},
          "decoder": {"type": "Metaspace", "replacement": "\u2581"}, "added_tokens": []})",
      // WordPiece, no added_tokens, nothing else.
      R"({"model": {"type": "WordPiece", "continuing_subword_prefix": "##", "vocab": {"[UNK]": 0, "##s": 1}}})"};
  for (const std::string& text : documents) {
    INFO(text);
    write_file(tokenizer, text);
    const whole_parse expected(text);
    const io::tokenizer_json_contents contents = io::read_tokenizer_json(tokenizer);
    CHECK(std::map<std::string, std::int64_t>(contents.vocabulary.ids.begin(), contents.vocabulary.ids.end()) ==
          expected.ids);
    std::int64_t highest = 0;
    for (const auto& entry : expected.ids) highest = std::max(highest, entry.second);
    CHECK(contents.vocabulary.size == highest + 1);
    CHECK(contents.declarations == expected.declarations);
    CHECK(io::read_tokenizer_json(tokenizer).vocabulary.ids == contents.vocabulary.ids);
    CHECK(io::read_tokenizer_json(tokenizer, io::tokenizer_json_options::declarations_only()).declarations ==
          expected.declarations);
  }
}

TEST_CASE("tokenizer.json in one pass: what the vocabulary holds is refused as the whole parse refused it") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto error_for = [&](const std::string& text) {
    write_file(tokenizer, text);
    return file_refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  const auto bpe = [](const std::string& vocab) { return R"({"model": {"type": "BPE", "vocab": )" + vocab + "}}"; };
  const auto unigram = [](const std::string& vocab) {
    return R"({"model": {"type": "Unigram", "vocab": )" + vocab + "}}";
  };

  SUBCASE("ids that are not integers, whatever their JSON type") {
    check_refusal(error_for(bpe(R"({"a": 0, "b": []})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id [], not an integer"});
    check_refusal(error_for(bpe(R"({"a": 0, "b": [0]})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id an array, not an integer"});
    check_refusal(error_for(bpe(R"({"b": {}, "a": 0})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id {}, not an integer"});
    check_refusal(error_for(bpe(R"({"b": {"x": 1}})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id an object, not an integer"});
    check_refusal(error_for(bpe(R"({"b": 1.5})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id 1.5, not an integer"});
    check_refusal(error_for(bpe(R"({"b": null})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id null, not an integer"});
    check_refusal(error_for(bpe(R"({"b": true})")), file_kind::malformed, tokenizer,
                  {"token \"b\" has id true, not an integer"});
  }
  SUBCASE("Unigram entries that are not [piece, score] pairs, by position") {
    for (const char* bad : {"5", "[]", "{\"p\": 1}", "[1, \"b\"]", "[[\"b\"], 0]", "[{}, 0]", "null"})
      check_refusal(error_for(unigram(std::string(R"([["a", 0], )") + bad + R"(, ["c", 0]])")), file_kind::malformed,
                    tokenizer, {"model.vocab[1] is not a [piece, score] pair"});
  }
  SUBCASE("a token given twice in model.vocab (a whole parse kept the last silently)") {
    check_refusal(error_for(bpe(R"({"a": 0, "b": 1, "a": 2})")), file_kind::malformed, tokenizer,
                  {"token \"a\" has id 2 but already has id 0"});
    check_refusal(error_for(bpe(R"({"a": 0, "a": 0})")), file_kind::malformed, tokenizer,
                  {"token \"a\" has id 0 but already has id 0"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "vocab": {"b": 0}}})"),
                  file_kind::malformed, tokenizer, {"key \"vocab\" appears twice in model"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "model": {"type": "BPE"}})"),
                  file_kind::malformed, tokenizer, {"key \"model\" appears twice"});
  }
  SUBCASE("the order of refusals: syntax first, then the model's type and shape, then the entries") {
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": -1}}, "x": })"), file_kind::malformed,
                  tokenizer, {"not valid JSON"});
    check_refusal(error_for(R"({"model": {"vocab": {"a": -1}, "type": "Magic"}})"), file_kind::malformed, tokenizer,
                  {"unsupported tokenizer model type \"Magic\""});
    check_refusal(error_for(unigram(R"({"a": -1})")), file_kind::malformed, tokenizer,
                  {"model.vocab of a Unigram model is not an array"});
    check_refusal(error_for(bpe(R"([["a", 0]])")), file_kind::malformed, tokenizer,
                  {"model.vocab is not an object of token -> id"});
    check_refusal(error_for(bpe("null")), file_kind::malformed, tokenizer,
                  {"model.vocab is not an object of token -> id"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 0}]})"),
                  file_kind::malformed, tokenizer, {"added_tokens holds an entry without \"id\" and \"content\""});
  }
  SUBCASE("nesting deeper than 1000 levels, in the vocabulary, the merges or the declarations") {
    const std::string deep = std::string(1001, '[') + std::string(1001, ']');
    check_refusal(error_for(bpe(R"({"a": )" + deep + "}")), file_kind::malformed, tokenizer,
                  {"nested deeper than 1000 levels"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": )" + deep + "}}"),
                  file_kind::malformed, tokenizer, {"nested deeper than 1000 levels"});
    check_refusal(error_for(R"({"truncation": )" + deep + R"(, "model": {"type": "BPE", "vocab": {"a": 0}}})"),
                  file_kind::malformed, tokenizer, {"nested deeper than 1000 levels"});
    // 1000 levels in all are read (the object holding "x" is the first).
    const std::string limit = std::string(999, '[') + std::string(999, ']');
    write_file(tokenizer, R"({"x": )" + limit + R"(, "model": {"type": "BPE", "vocab": {"a": 0}}})");
    CHECK(io::read_tokenizer_json(tokenizer).declarations["x"].is_array());
  }
  SUBCASE("ids far apart: two tokens with one id are found however far it is from the others") {
    std::string vocab = R"({"x": 5000)";
    for (int id = 0; id < 1000; ++id) vocab += ", \"t" + std::to_string(id) + "\": " + std::to_string(id);
    check_refusal(error_for(bpe(vocab + R"(, "y": 5000})")), file_kind::malformed, tokenizer,
                  {"tokens \"x\" and \"y\" both have id 5000"});
    write_file(tokenizer, bpe(vocab + R"(, "y": 9223372036854775806})"));
    const io::token_vocabulary vocabulary = io::read_tokenizer_json(tokenizer).vocabulary;
    CHECK(vocabulary.ids.size() == 1002);
    CHECK(vocabulary.size == INT64_MAX);
  }
}

TEST_CASE("read_tokenizer_declarations reads any JSON, without checking a vocabulary") {
  temp_dir dir;
  const auto file = dir / "tokenizer.json";
  write_file(file, R"({"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": -1, "a": []}},
                      "added_tokens": 7})");
  CHECK(io::read_tokenizer_json(file, io::tokenizer_json_options::declarations_only()).declarations ==
        nlohmann::json::parse(R"({"decoder": {"type": "ByteLevel"},
                                                                         "model": {"type": "BPE"}})"));
  write_file(file, R"([{"model": {"vocab": 1}}, 2])");
  CHECK(io::read_tokenizer_json(file, io::tokenizer_json_options::declarations_only()).declarations ==
        nlohmann::json::parse(R"([{"model": {"vocab": 1}}, 2])"));
  write_file(file, R"({"model": {"merges": 9e999}})");
  check_refusal(
      file_refusal_of([&] { io::read_tokenizer_json(file, io::tokenizer_json_options::declarations_only()); }),
      file_kind::malformed, file, {"not valid JSON", "number overflow"});
  check_refusal(file_refusal_of([&] {
                  io::read_tokenizer_json(dir / "absent.json", io::tokenizer_json_options::declarations_only());
                }),
                file_kind::io, dir / "absent.json", {"cannot open"});
}

TEST_CASE("model.merges: read when asked, in either form, in order, and skipped by default") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  using merges = std::vector<std::pair<std::string, std::string>>;
  // The oracle: the same text parsed whole by nlohmann::json, each merge split as tokenizers does.
  const auto whole = [](const std::string& text) {
    merges expected;
    const nlohmann::json document = nlohmann::json::parse(text);
    for (const nlohmann::json& merge : document["model"]["merges"]) {
      if (merge.is_array()) {
        expected.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
        continue;
      }
      const std::string pair = merge.get<std::string>();
      expected.emplace_back(pair.substr(0, pair.find(' ')), pair.substr(pair.find(' ') + 1));
    }
    return expected;
  };
  const std::string strings =
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120ab": 4},
                   "merges": ["a b", "\u0120 ab"]}, "decoder": {"type": "ByteLevel"}})";
  const std::string arrays =
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "a b": 3, "a bab": 4},
                   "merges": [["a", "b"], ["a b", "ab"]]}})";
  for (const std::string& text : {strings, arrays}) {
    write_file(tokenizer, text);
    const io::tokenizer_json_contents read =
        io::read_tokenizer_json(tokenizer, io::tokenizer_json_options::with_merges());
    CHECK(read.merges == whole(text));
    CHECK(read.merges.size() == 2);
    CHECK(read.vocabulary.ids.size() == 5);
    CHECK(io::read_tokenizer_json(tokenizer).merges.empty());
    CHECK_FALSE(read.declarations["model"].contains("merges"));
  }
  write_file(tokenizer, arrays);
  CHECK(io::read_tokenizer_json(tokenizer, io::tokenizer_json_options::with_merges()).merges[1] ==
        std::pair<std::string, std::string>("a b", "ab"));
}

TEST_CASE("model.merges: a merge of neither form is refused naming the file and the merge") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto refusal = [&](const std::string& merges) {
    write_file(tokenizer, R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": )" + merges + "}}");
    return file_refusal_of([&] { io::read_tokenizer_json(tokenizer, io::tokenizer_json_options::with_merges()); });
  };
  check_refusal(refusal(R"("a b")"), file_kind::malformed, tokenizer, {"model.merges is not an array"});
  check_refusal(refusal(R"({"a": "b"})"), file_kind::malformed, tokenizer, {"model.merges is not an array"});
  for (const char* merges :
       {R"(["a b", "ab"])", R"(["a b", "a b c"])", R"(["a b", ["a"]])", R"(["a b", ["a", "b", "c"]])",
        R"(["a b", [1, 2]])", R"(["a b", 5])", R"(["a b", ["a", ["b"]]])", R"(["a b", {"a": "b"}])"})
    check_refusal(refusal(merges), file_kind::malformed, tokenizer, {"model.merges[1] is not a merge of two tokens"});
  // Not asked for, they are not read, so not refused.
  write_file(tokenizer, R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [5]}})");
  CHECK(io::read_tokenizer_json(tokenizer).vocabulary.ids.size() == 1);
}

TEST_CASE("a JSON file of any name: a tokenizer.json or a vocab.json, told apart and read in one pass") {
  temp_dir dir;
  const auto file = dir / "any.json";
  SUBCASE("a vocab.json reads as read_vocab_json reads it") {
    const std::string text = R"({"model": 5, "a": 0, "\u0120b": 2})";
    write_file(file, text);
    const io::json_vocabulary read = io::read_json_vocabulary(file);
    CHECK_FALSE(read.is_tokenizer_json);
    std::unordered_map<std::string, std::int64_t> expected;
    const nlohmann::json document = nlohmann::json::parse(text);
    for (const auto& [token, id] : document.items()) expected[token] = id.get<std::int64_t>();
    CHECK(read.contents.vocabulary.ids == expected);
    CHECK(read.contents.vocabulary.size == 6);
    CHECK(read.contents.vocabulary.ids == io::read_vocab_json(file).ids);
  }
  SUBCASE("a tokenizer.json keeps its top-level numbers among its declarations") {
    const std::string text = R"({"version": "1.0", "count": 7, "model": {"type": "BPE", "vocab": {"a": 0}}})";
    write_file(file, text);
    const io::json_vocabulary read = io::read_json_vocabulary(file);
    CHECK(read.is_tokenizer_json);
    CHECK(read.contents.vocabulary.ids == std::unordered_map<std::string, std::int64_t>{{"a", 0}});
    CHECK(read.contents.declarations == whole_parse(text).declarations);
  }
  SUBCASE("each kind is refused as a file of its kind") {
    write_file(file, R"({"a": 0, "b": "1"})");
    check_refusal(file_refusal_of([&] { io::read_json_vocabulary(file); }), file_kind::malformed, file,
                  {"token \"b\" has id \"1\", not an integer"});
    write_file(file, R"({"a": 0, "b": 0})");
    check_refusal(file_refusal_of([&] { io::read_json_vocabulary(file); }), file_kind::malformed, file,
                  {"tokens \"a\" and \"b\" both have id 0"});
    write_file(file, R"([0, 1])");
    check_refusal(file_refusal_of([&] { io::read_json_vocabulary(file); }), file_kind::malformed, file,
                  {"not a JSON object of token -> id"});
    write_file(file, R"({})");
    check_refusal(file_refusal_of([&] { io::read_json_vocabulary(file); }), file_kind::malformed, file,
                  {"no vocabulary"});
    write_file(file, R"({"model": {"type": "BPE"}})");
    check_refusal(file_refusal_of([&] { io::read_json_vocabulary(file); }), file_kind::malformed, file,
                  {"no vocabulary (model.vocab is missing)"});
  }
}
