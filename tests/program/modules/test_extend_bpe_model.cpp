// extend/read_bpe_model.hpp, bpe_model.hpp and pre_tokenizer.hpp: a tokenizer.json read as plain
// data, encoded as Hugging Face's BPE does, checked against a plain string-based BPE written
// here (the lowest-ranked adjacent pair merged, leftmost first, until none applies) and against
// splits worked out by hand from the regular expressions. test_extend_client.cpp checks the same
// encoder against the real JavaScript client on real tokenizers.
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "extend/bpe_model.hpp"
#include "extend/pre_tokenizer.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/unigram_model.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/support/file_refusals.hpp"
#include "support/refusals.hpp"
#include "support/sentencepiece_bytes.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend_bpe_model {
namespace {

using namespace clp_transfer::extend;

/// The plain BPE the encoder must agree with, on strings: each UTF-8 character a symbol (its
/// <0xNN> pieces when the vocabulary lacks it and byte_fallback is on), then repeatedly the
/// adjacent pair of lowest rank is merged, the leftmost of equals, until none has a rank.
std::vector<token_id> plain_bpe(const nlohmann::json& tokenizer, const std::string& word) {
  const nlohmann::json& model = tokenizer["model"];
  std::map<std::pair<std::string, std::string>, std::size_t> rank;
  for (std::size_t r = 0; r < model["merges"].size(); ++r) {
    const nlohmann::json& m = model["merges"][r];
    if (m.is_array()) {
      rank[{m[0], m[1]}] = r;
    } else {
      const std::string line = m;
      rank[{line.substr(0, line.find(' ')), line.substr(line.find(' ') + 1)}] = r;
    }
  }
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const std::size_t size = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    const std::string character = word.substr(i, size);
    if (model["vocab"].contains(character)) {
      symbols.push_back(character);
    } else if (model.value("byte_fallback", false)) {
      for (const char byte : character) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", static_cast<unsigned char>(byte));
        symbols.emplace_back(piece);
      }
    }
    i += size;
  }
  for (;;) {
    std::size_t best = symbols.size();
    std::size_t best_rank = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = rank.find({symbols[i], symbols[i + 1]});
      if (it != rank.end() && (best == symbols.size() || it->second < best_rank)) {
        best = i;
        best_rank = it->second;
      }
    }
    if (best == symbols.size()) break;
    symbols[best] += symbols[best + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  std::vector<token_id> ids;
  for (const std::string& s : symbols) ids.push_back(model["vocab"][s].get<token_id>());
  return ids;
}

/// A metaspace tokenizer.json (Llama 2's normalizer) of `vocab` and `merges`.
nlohmann::json metaspace_tokenizer(const std::vector<std::string>& vocab, const nlohmann::json& merges) {
  nlohmann::json t;
  t["normalizer"] = nlohmann::json::parse(R"({"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "\u2581"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
  t["pre_tokenizer"] = nullptr;
  t["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::object()}, {"merges", merges}};
  for (std::size_t id = 0; id < vocab.size(); ++id) t["model"]["vocab"][vocab[id]] = id;
  return t;
}

std::vector<std::string> strings_of(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

TEST_CASE("extend bpe: the lowest rank merges first, the leftmost of equal ranks, as worked out by hand") {
  const nlohmann::json t =
      metaspace_tokenizer({"a", "b", "c", "ab", "bc", "abc", "aa", "aaa"}, {"b c", "a b", "ab c", "a a", "aa a"});
  const bpe_table table(read_bpe_model(t, "t.json"));
  // "b c" ranks first, and no merge joins "a" to "bc".
  CHECK(table.encode("abc") == std::vector<token_id>{0, 4});
  // "a a" outranks "aa a": the leftmost pair first, then the next free one.
  CHECK(table.encode("aaaa") == std::vector<token_id>{6, 6});
  CHECK(table.encode("aaa") == std::vector<token_id>{7});
  CHECK(table.encode("ab") == std::vector<token_id>{3});
  CHECK(table.encode("") == std::vector<token_id>{});
}

TEST_CASE("extend bpe: byte fallback, the unknown token fused or not, and ignore_merges") {
  nlohmann::json t = metaspace_tokenizer({"<unk>", "<0xC3>", "<0xA4>", "a", "b", "ab", "ba"}, {"a b"});
  t["model"]["byte_fallback"] = true;
  t["model"]["unk_token"] = "<unk>";
  // "ä" is not a symbol: its two bytes' pieces; "ö" has no pieces: the unknown token.
  CHECK(bpe_table(read_bpe_model(t, "t.json"))
            .encode("a\xC3\xA4"
                    "b") == std::vector<token_id>{3, 1, 2, 4});
  t["model"]["byte_fallback"] = false;
  CHECK(bpe_table(read_bpe_model(t, "t.json"))
            .encode("\xC3\xB6\xC3\xB6"
                    "ab") == std::vector<token_id>{0, 0, 5});
  t["model"]["fuse_unk"] = true;
  CHECK(bpe_table(read_bpe_model(t, "t.json"))
            .encode("\xC3\xB6\xC3\xB6"
                    "ab") == std::vector<token_id>{0, 5});
  // "ba" is a token no merge makes: only ignore_merges reaches it, and only as a whole pre-token.
  CHECK(bpe_table(read_bpe_model(t, "t.json")).encode("ba") == std::vector<token_id>{4, 3});
  t["model"]["ignore_merges"] = true;
  const bpe_table ignoring(read_bpe_model(t, "t.json"));
  CHECK(ignoring.encode("ba") == std::vector<token_id>{6});
  CHECK(ignoring.merged("ba") == std::vector<token_id>{4, 3});
}

TEST_CASE("extend bpe: random models and words encode as the plain string BPE does") {
  std::mt19937 random(7);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::string> vocab = {"a", "b", "c", "d"};
    nlohmann::json merges = nlohmann::json::array();
    for (int m = 0; m < 30; ++m) {
      const std::string left = vocab[random() % vocab.size()];
      const std::string right = vocab[random() % vocab.size()];
      if (left.size() + right.size() > 6) continue;
      if (std::find(vocab.begin(), vocab.end(), left + right) == vocab.end()) vocab.push_back(left + right);
      merges.push_back(trial % 2 ? nlohmann::json::array({left, right}) : nlohmann::json(left + " " + right));
    }
    const nlohmann::json t = metaspace_tokenizer(vocab, merges);
    const bpe_table table(read_bpe_model(t, "t.json"));
    for (int w = 0; w < 50; ++w) {
      std::string word;
      for (std::size_t n = 1 + random() % 12; n > 0; --n) word += static_cast<char>('a' + random() % 4);
      CAPTURE(word);
      CHECK(table.encode(word) == plain_bpe(t, word));
    }
  }
}

TEST_CASE("extend bpe: both merge forms, the flags and the added tokens' ids are read") {
  nlohmann::json t = metaspace_tokenizer({"a", "b", "ab"}, nlohmann::json::array({nlohmann::json::array({"a", "b"})}));
  t["added_tokens"] = nlohmann::json::parse(R"([{"id": 7, "content": "<s>"}])");
  bpe_model model = read_bpe_model(t, "t.json");
  CHECK(model.merges_as_pairs);
  CHECK(model.merges == std::vector<std::pair<token_id, token_id>>{{0, 1}});
  CHECK(model.reserved_ids == std::vector<token_id>{7});
  CHECK(first_unused_id(model) == 8);
  CHECK(model.rules.spelling == symbol_spelling::metaspace);
  CHECK(model.rules.prepend == space_mark_prepend::always);
  t["model"]["merges"] = {"a b"};
  CHECK_FALSE(read_bpe_model(t, "t.json").merges_as_pairs);
}

/// The refusal `tokenizer` meets; its message must name the file and hold `part`.
void check_refused(const nlohmann::json& tokenizer, const std::string& kind, const std::string& part) {
  const auto refused = clp_test::file_refusal_of([&] { read_bpe_model(tokenizer, "src/tokenizer.json"); });
  REQUIRE(refused.has_value());
  CHECK(refused->kind == kind);
  CHECK(refused->facts.file == "src/tokenizer.json");
  CAPTURE(refused->message);
  CHECK(refused->message.find(part) != std::string::npos);
}

TEST_CASE("extend bpe: what cannot be reproduced exactly is refused, naming the file and the reason") {
  const nlohmann::json good = metaspace_tokenizer({"a", "b", "ab"}, {"a b"});
  const auto changed = [&](const char* pointer, const nlohmann::json& value) {
    nlohmann::json t = good;
    t[nlohmann::json::json_pointer(pointer)] = value;
    return t;
  };
  const std::string unsupported_kind = clp_test::kind_name(clp::error_kind::invalid_argument);
  check_refused(changed("/model/type", "WordPiece"), unsupported_kind, "model type \"WordPiece\" cannot be extended");
  check_refused(changed("/model/dropout", 0.1), unsupported_kind, "model.dropout");
  check_refused(changed("/model/continuing_subword_prefix", "##"), unsupported_kind, "continuing_subword_prefix");
  check_refused(changed("/model/end_of_word_suffix", "</w>"), unsupported_kind, "end_of_word_suffix");
  check_refused(changed("/pre_tokenizer", {{"type", "BertPreTokenizer"}}), unsupported_kind, "BertPreTokenizer");
  check_refused(changed("/normalizer", {{"type", "Lowercase"}}), unsupported_kind, "normalizer Lowercase");
  check_refused(changed("/normalizer", nullptr), unsupported_kind, "no ByteLevel pre-tokenizer");
  nlohmann::json split = good;
  split["normalizer"] = nullptr;
  split["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  check_refused(split, unsupported_kind, "only GPT-2's, Llama 3's and Qwen2's expressions");
  const std::string malformed_kind = clp_test::kind_name(clp_test::file_kind::malformed);
  check_refused(changed("/model/merges", {"a c"}), malformed_kind, "model.merges[0] needs \"c\"");
  check_refused(changed("/model/merges", {"ab"}), malformed_kind, "not two tokens joined by a space");
  check_refused(changed("/model/vocab/b", 0), malformed_kind, "gives id 0 to two tokens");
  check_refused(changed("/model/unk_token", "<unk>"), malformed_kind, "unk_token \"<unk>\" is not in model.vocab");
}

TEST_CASE("extend bpe: a SentencePiece model with a 10^5- or 10^6-byte piece is read in time that grows with its length" *
          doctest::timeout(20)) {
  // Reading a piece costs about its length: a cost that grew with the square of it would run
  // for minutes at 10^6 bytes, past the timeout (which leaves a margin of a hundredfold).
  const std::string mark = "\xE2\x96\x81";
  for (const std::size_t size : {std::size_t(100000), std::size_t(1000000)}) {
    CAPTURE(size);
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>", mark, "a", "b", mark + "a", "ab", mark + "ab"};
    std::string long_piece = mark;
    while (long_piece.size() < size) long_piece += "ab";
    tokens.push_back(long_piece);
    for (const int type : {2, 1}) {  // BPE, then Unigram
      CAPTURE(type);
      const std::string bytes = clp_test::sentencepiece_model_bytes(clp_test::llama_style_entries(tokens), type);
      const clp_transfer::io::sentencepiece_model model = clp_transfer::io::parse_sentencepiece_model("long.model", bytes);
      REQUIRE(model.pieces.size() == tokens.size());
      if (type == 2) {
        const bpe_model bpe = sentencepiece_bpe_model(model.pieces, model);
        // The merges of the short pieces only (the long one has no split into two pieces):
        // ▁ a, a b, ▁ ab and ▁a b.
        CHECK(bpe.merges.size() == 4);
        CHECK(bpe.tokens.back() == long_piece);
      } else {
        const unigram_table table(sentencepiece_unigram_model(model));
        CHECK(table.model().tokens.back() == long_piece);
      }
    }
  }
}

TEST_CASE("extend pre-tokenizer: GPT-2's expression splits as worked out by hand") {
  const std::string text = "Hello world's 12 apples!!  ok\n\n x";
  CHECK(strings_of(split_text(text, split_rule::gpt2)) ==
        std::vector<std::string>{"Hello", " world", "'s", " 12", " apples", "!!", " ", " ok", "\n\n", " x"});
  // Letters of other scripts are \p{L}; a space run before a word leaves its last space to it.
  CHECK(strings_of(split_text("  Gr\xC3\xBC\xC3\x9F"
                              "e",
                              split_rule::gpt2)) == std::vector<std::string>{" ",
                                                                             " Gr\xC3\xBC\xC3\x9F"
                                                                             "e"});
  CHECK(strings_of(split_text("it'S", split_rule::gpt2)) == std::vector<std::string>{"it", "'", "S"});
}

TEST_CASE("extend pre-tokenizer: Llama 3's and Qwen2's expressions split as worked out by hand") {
  // Three digits a pre-token (one for Qwen2), case-insensitive contractions, one non-letter
  // joined to the word after it, and line breaks kept with the punctuation before them.
  CHECK(strings_of(split_text("it'S 12345 (word).\n\nNext", split_rule::llama3)) ==
        std::vector<std::string>{"it", "'S", " ", "123", "45", " (", "word", ").\n\n", "Next"});
  CHECK(strings_of(split_text("x 123", split_rule::qwen2)) == std::vector<std::string>{"x", " ", "1", "2", "3"});
  CHECK(strings_of(split_text("a \n  b", split_rule::llama3)) == std::vector<std::string>{"a", " \n", " ", " b"});
}

TEST_CASE("extend pre-tokenizer: pre-tokens in each spelling, with the start of a text marked") {
  text_rules byte_level;
  byte_level.split = split_rule::gpt2;
  CHECK(pre_tokens("a b\n", byte_level, true) == std::vector<std::string>{"a",
                                                                          "\xC4\xA0"
                                                                          "b",
                                                                          "\xC4\x8A"});
  byte_level.add_prefix_space = true;
  CHECK(pre_tokens("a", byte_level, true) == std::vector<std::string>{"\xC4\xA0"
                                                                      "a"});
  CHECK(pre_tokens("a", byte_level, false) == std::vector<std::string>{"a"});
  text_rules metaspace;
  metaspace.spelling = symbol_spelling::metaspace;
  metaspace.prepend = space_mark_prepend::always;
  CHECK(pre_tokens(" a b", metaspace, true) ==
        std::vector<std::string>{space_mark + space_mark + "a" + space_mark + "b"});
  metaspace.prepend = space_mark_prepend::unless_marked;
  metaspace.split_at_space_marks = true;
  CHECK(pre_tokens(" a b", metaspace, true) == std::vector<std::string>{space_mark + "a", space_mark + "b"});
  CHECK(pre_tokens("a b", metaspace, false) == std::vector<std::string>{"a", space_mark + "b"});
}

}  // namespace
}  // namespace test_extend_bpe_model
