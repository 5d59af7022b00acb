// extend/extension.hpp, token_choice.hpp, drift.hpp and tokenizer_writing.hpp on small
// hand-made tokenizers whose every outcome is worked out by hand in the comments; reachability
// is checked on the written tokenizer.json with a plain string BPE written here, not with the
// extension's own encoder.
#include <cstddef>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"
#include "extend/tokenizer_writing.hpp"
#include "io/support/file_refusals.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend_extension {
namespace {

using namespace clp_transfer::extend;

const std::string G = "\xC4\xA0";         // 'Ġ', a space in GPT-2's byte-level alphabet
const std::string mark = "\xE2\x96\x81";  // '▁'
const std::string a_umlaut = "\xC3\xA4";  // 'ä'

/// The plain BPE on a written tokenizer.json's strings: the adjacent pair of lowest rank merged,
/// leftmost first, until none has a rank; the pre-token's characters must all be tokens.
std::vector<std::string> plain_bpe(const nlohmann::ordered_json& tokenizer, const std::string& word) {
  std::map<std::pair<std::string, std::string>, std::size_t> rank;
  const auto& merges = tokenizer["model"]["merges"];
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string line = merges[r].is_array()
                                 ? merges[r][0].get<std::string>() + " " + merges[r][1].get<std::string>()
                                 : merges[r].get<std::string>();
    rank[{line.substr(0, line.find(' ')), line.substr(line.find(' ') + 1)}] = r;
  }
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const std::size_t size = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    symbols.push_back(word.substr(i, size));
    i += size;
  }
  for (;;) {
    std::size_t best = symbols.size(), best_rank = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
      if (const auto it = rank.find({symbols[i], symbols[i + 1]});
          it != rank.end() && (best == symbols.size() || it->second < best_rank))
        best = i, best_rank = it->second;
    if (best == symbols.size()) return symbols;
    symbols[best] += symbols[best + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

/// A byte-level source: GPT-2's pre-tokenizer, tokens a b c d e Ġ ab Ġa cd (ids 0-8), merges
/// "a b", "Ġ a", "c d", and an added token at id 9.
nlohmann::ordered_json byte_level_source(bool pairs) {
  nlohmann::ordered_json t;
  t["version"] = "1.0";
  t["added_tokens"] = nlohmann::ordered_json::parse(R"([{"id": 9, "content": "<|endoftext|>", "special": true}])");
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", nlohmann::ordered_json::object()}};
  const std::vector<std::string> vocab = {"a", "b", "c", "d", "e", G, "ab", G + "a", "cd"};
  for (std::size_t id = 0; id < vocab.size(); ++id) t["model"]["vocab"][vocab[id]] = id;
  t["model"]["merges"] = nlohmann::ordered_json::array();
  for (const auto& [l, r] : std::vector<std::pair<std::string, std::string>>{{"a", "b"}, {G, "a"}, {"c", "d"}})
    t["model"]["merges"].push_back(pairs ? nlohmann::ordered_json::array({l, r}) : nlohmann::ordered_json(l + " " + r));
  t["model"]["byte_fallback"] = false;
  return t;
}

/// The new tokens of the byte-level cases, as bytes, and what becomes of each:
///   "abcd"    pieces ab|cd: merge "ab cd" makes it (id 12)
///   " abcde"  pieces Ġ|abcd|e: "Ġ abcd" makes the intermediate "Ġabcd" (13), "Ġabcd e" it (14)
///   "ab"      the source has it
///   " a b"    two pre-tokens, " a" and " b": left out
///   "x"       no symbol "x": left out
///   " abcd"   made already as an intermediate: now asked for
///   "dabc"    pieces d|ab|c: "d ab" makes the intermediate "dab" (15), "dab c" it (16)
///   ""        empty: left out
const std::vector<std::string> new_bytes = {"abcd", " abcde", "ab", " a b", "x", " abcd", "dabc", ""};

TEST_CASE("extend: new tokens take ids from the first free one, made by merges appended after the source's") {
  const nlohmann::ordered_json source = byte_level_source(false);
  const bpe_extension extension = extend_bpe(read_bpe_model(source, "s.json"), new_bytes, 12);
  const auto text = [&](token_id id) { return extension.table.token(id); };
  REQUIRE(extension.written.size() == 5);
  const std::vector<std::string> expected = {"abcd", G + "abcd", G + "abcde", "dab", "dabc"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(extension.written[i].id == static_cast<token_id>(12 + i));
    CHECK(text(extension.written[i].id) == expected[i]);
    CHECK_FALSE(extension.written[i].new_character);
  }
  CHECK(extension.written[1].bytes == " abcd");
  CHECK(extension.written[1].requested);  // asked for after it was made as an intermediate
  CHECK_FALSE(extension.written[3].requested);
  CHECK(extension.requested_count() == 4);
  CHECK(extension.intermediate_count() == 1);
  CHECK(extension.already_present == std::vector<std::string>{"ab"});
  REQUIRE(extension.left_out.size() == 3);
  CHECK(extension.left_out[0].bytes == " a b");
  CHECK(extension.left_out[0].reason.find("spans a pre-tokenizer boundary") != std::string::npos);
  CHECK(extension.left_out[1].reason.find("needs the symbol \"x\"") != std::string::npos);
  CHECK(extension.left_out[2].reason == "is empty");
  // The source's ids, strings and merges stay, in their places; the gap 9-11 stays unused.
  const bpe_model& model = extension.table.model();
  const bpe_model original = read_bpe_model(source, "s.json");
  CHECK(std::equal(original.tokens.begin(), original.tokens.end(), model.tokens.begin()));
  CHECK(std::equal(original.merges.begin(), original.merges.end(), model.merges.begin()));
  CHECK(model.tokens[9].empty());
  CHECK_FALSE(extension.table.id(""));
  std::vector<std::string> appended;
  for (std::size_t r = extension.source_merges; r < model.merges.size(); ++r)
    appended.push_back(text(model.merges[r].first) + " " + text(model.merges[r].second));
  CHECK(appended == std::vector<std::string>{"ab cd", G + " abcd", G + "abcd e", "d ab", "dab c"});
}

TEST_CASE("extend: every written token is what the plain BPE makes of its text in the written tokenizer.json") {
  for (const bool pairs : {false, true}) {
    const nlohmann::ordered_json source = byte_level_source(pairs);
    const bpe_extension extension = extend_bpe(read_bpe_model(source, "s.json"), new_bytes, 12);
    const nlohmann::ordered_json written = extended_tokenizer_json(source, extension, "s.json");
    for (const written_token& token : extension.written) {
      const std::string& text = extension.table.token(token.id);
      CAPTURE(text);
      CHECK(plain_bpe(written, text) == std::vector<std::string>{text});
      CHECK(written["model"]["vocab"][text] == token.id);
    }
    // The source's own tokens still encode as they did.
    for (const auto& entry : source["model"]["vocab"].items())
      CHECK(plain_bpe(written, entry.key()) == plain_bpe(source, entry.key()));
  }
}

TEST_CASE("extend: a metaspace source gains non-ASCII characters as symbols, never ASCII ones") {
  nlohmann::ordered_json source;
  source["normalizer"] = nlohmann::ordered_json::parse(R"({"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "\u2581"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
  source["pre_tokenizer"] = nullptr;
  source["model"] = {
      {"type", "BPE"},
      {"byte_fallback", true},
      {"unk_token", "<unk>"},
      {"vocab",
       {{"<unk>", 0}, {"<0x0A>", 1}, {"<0xC3>", 2}, {"<0xA4>", 3}, {mark, 4}, {"a", 5}, {"b", 6}, {mark + "a", 7}}},
      {"merges", {mark + " a"}}};
  // "\n\n": '\n' is ASCII, written <0x0A>: left out. "ä": a new symbol (8). " äb": ▁|ä|b, so the
  // intermediate "▁ä" (9), then "▁äb" (10). A lone 0xC3 is the source's <0xC3>; 0xC3 0xA4 0xC3
  // is not UTF-8; "a▁" holds the space mark; the text "<0x41>" would read as the byte 'A'.
  const std::vector<std::string> asked = {"\n\n",     a_umlaut, " " + a_umlaut + "b", "\xC3", "\xC3\xA4\xC3",
                                          "a" + mark, "<0x41>"};
  const bpe_extension extension = extend_bpe(read_bpe_model(source, "s.json"), asked, 8);
  REQUIRE(extension.written.size() == 3);
  CHECK(extension.table.token(8) == a_umlaut);
  CHECK((extension.written[0].requested && extension.written[0].new_character));
  CHECK(extension.table.token(9) == mark + a_umlaut);
  CHECK_FALSE(extension.written[1].requested);
  CHECK(extension.table.token(10) == mark + a_umlaut + "b");
  CHECK(extension.written[2].bytes == " " + a_umlaut + "b");
  CHECK(extension.already_present == std::vector<std::string>{"\xC3"});
  REQUIRE(extension.left_out.size() == 4);
  CHECK(extension.left_out[0].reason.find("writes it as byte-fallback pieces") != std::string::npos);
  CHECK(extension.left_out[1].reason.find("not whole UTF-8 characters") != std::string::npos);
  CHECK(extension.left_out[2].reason.find("holds '\xE2\x96\x81'") != std::string::npos);
  CHECK(extension.left_out[3].reason.find("spelled like a byte-fallback piece") != std::string::npos);
  const nlohmann::ordered_json written = extended_tokenizer_json(source, extension, "s.json");
  for (const token_id id : {8, 9, 10})
    CHECK(plain_bpe(written, extension.table.token(id)) == std::vector<std::string>{extension.table.token(id)});
  extension_options no_characters;
  no_characters.add_characters = false;
  const bpe_extension without = extend_bpe(read_bpe_model(source, "s.json"), {a_umlaut}, 8, no_characters);
  CHECK(without.written.empty());
  REQUIRE(without.left_out.size() == 1);
  CHECK(without.left_out[0].reason.find("needs the symbol \"" + a_umlaut + "\"") != std::string::npos);
}

TEST_CASE("extend: a first free id the source uses is refused, naming the argument") {
  const auto refused =
      clp_test::file_refusal_of([] { extend_bpe(read_bpe_model(byte_level_source(false), "s.json"), {"abcd"}, 9); });
  REQUIRE(refused.has_value());
  CHECK(refused->kind == clp_test::kind_name(clp::error_kind::invalid_argument));
  CHECK(refused->facts.argument == "first_free");
  CHECK(refused->message.find("the first unused is 10") != std::string::npos);
}

TEST_CASE("extend tokens: all missing, the first N, or a list, in the helper's order") {
  const std::vector<std::string> helper = {"a", "b", "ab", "x", "y", "xy", "x"};
  const std::unordered_set<std::string> source = {"a", "b", "ab"};
  CHECK(choose_tokens(helper, source, {}) == std::vector<std::string>{"x", "y", "xy"});
  token_request first;
  first.which = token_request::kind::first;
  first.count = 2;
  CHECK(choose_tokens(helper, source, first) == std::vector<std::string>{"x", "y"});
  token_request listed;
  listed.which = token_request::kind::listed;
  listed.listed = {"xy", "x"};
  CHECK(choose_tokens(helper, source, listed) == std::vector<std::string>{"xy", "x"});
  const auto message = [&](const token_request& request) {
    const auto refused = clp_test::file_refusal_of([&] { choose_tokens(helper, source, request); });
    return refused ? refused->message : std::string("no refusal");
  };
  first.count = 0;
  CHECK(message(first) == "--add must be at least 1, not 0");
  listed.origin = "words.txt";
  listed.listed = {"x", ""};
  CHECK(message(listed) == "words.txt: entry 2 is empty");
  listed.listed = {"ab"};
  CHECK(message(listed) == "words.txt: entry 1 \"ab\" is a token the source has");
  listed.listed = {"x", "x"};
  CHECK(message(listed) == "words.txt: entry 2 \"x\" is listed twice");
}

TEST_CASE("extend tokens: a BPE helper's order is its alphabet, then the rank of the merge making each token") {
  nlohmann::json t;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"},
                {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}, {"bc", 5}}},
                {"merges", {"b c", "a b", "ab c"}}};
  CHECK(merge_rank_order(read_bpe_model(t, "h.json")) == std::vector<token_id>{0, 1, 2, 5, 3, 4});
}

TEST_CASE("extend drift and fertility: words after a space, counted as worked out by hand") {
  const bpe_model source = read_bpe_model(byte_level_source(false), "s.json");
  const bpe_table before(source);
  const bpe_extension extension = extend_bpe(source, new_bytes, 12);
  // " abcd": Ġ|ab|cd before, Ġabcd after; " abcde": Ġ|ab|cd|e, then Ġabcde; " ab": Ġ|ab both.
  const std::string text = "abcd\n abcde\tab ";
  CHECK(probe_words(text).size() == 3);
  const drift_measure measured = drift(before, extension.table, text);
  CHECK(measured.words == 3);
  CHECK(measured.changed == 2);
  CHECK(measured.examples == std::vector<std::string>{"abcd", "abcde"});
  CHECK(fertility(before, text).tokens == 9);
  CHECK(fertility(extension.table, text).tokens == 4);
  CHECK(fertility(extension.table, text).tokens_per_word() == doctest::Approx(4.0 / 3.0));
  CHECK(encode_text(before, "ab abcd") == std::vector<token_id>{6, 5, 6, 8});
}

/// The drift budget's oracle: the tokens tried in order, each kept where the extension of the
/// kept ones and it changes at most `budget` words of `probe`, judged by drift() on the whole
/// probe (every word encoded again), with no index of which words a merge can reach.
std::vector<std::string> kept_within_budget(const bpe_model& source, const std::vector<std::string>& tokens,
                                            const std::string& probe, std::size_t budget) {
  const bpe_table before(source);
  std::vector<std::string> kept;
  for (const std::string& token : tokens) {
    std::vector<std::string> trial = kept;
    trial.push_back(token);
    if (drift(before, extend_bpe(source, trial, 12).table, probe).changed <= budget) kept = std::move(trial);
  }
  return kept;
}

std::vector<std::string> written_texts(const bpe_extension& extension) {
  std::vector<std::string> texts;
  for (const written_token& token : extension.written)
    texts.push_back(extension.table.token(token.id) + (token.requested ? " (asked)" : ""));
  return texts;
}

TEST_CASE("extend drift budget: the tokens kept are the oracle's, and the probe changes no more words than allowed") {
  // Source encodings: " ab" Ġ|ab, " cd" Ġ|cd, " abcd" Ġ|ab|cd, " dab" Ġ|d|ab, " e" Ġ|e, " abcde"
  // Ġ|ab|cd|e. Unbudgeted, "abcd" changes " abcd" and " abcde" (ab+cd), " abcde" adds Ġ+abcd
  // (" abcd" again) and Ġabcd+e (" abcde"), "dabc" adds d+ab (" dab"): 3 words change.
  const bpe_model source = read_bpe_model(byte_level_source(false), "s.json");
  const std::string probe = "ab cd abcd dab e abcde";
  REQUIRE(drift(bpe_table(source), extend_bpe(source, new_bytes, 12).table, probe).changed == 3);
  for (std::size_t budget = 0; budget <= 4; ++budget) {
    CAPTURE(budget);
    extension_options options;
    for (const std::string_view word : probe_words(probe)) options.drift_probe.emplace_back(word);
    options.max_changed_words = budget;
    const bpe_extension budgeted = extend_bpe(source, new_bytes, 12, options);
    const bpe_extension oracle = extend_bpe(source, kept_within_budget(source, new_bytes, probe, budget), 12);
    CHECK(written_texts(budgeted) == written_texts(oracle));
    CHECK(drift(bpe_table(source), budgeted.table, probe).changed <= budget);
    std::size_t refused = 0;
    for (const left_out_token& token : budgeted.left_out)
      refused += token.reason.find("--drift-budget") != std::string::npos;
    // Left out for the budget: the tokens the oracle did not keep; for any other reason: the
    // oracle's own left-out tokens.
    CHECK(refused == new_bytes.size() - kept_within_budget(source, new_bytes, probe, budget).size());
    CHECK(budgeted.left_out.size() - refused == oracle.left_out.size());
  }
  // Budget 0: only the tokens whose merges no probe word reaches. "abcd" (ab+cd) and " abcde"
  // reach " abcd"; "dabc" (d+ab) reaches " dab": nothing is added but what was there.
  extension_options none;
  for (const std::string_view word : probe_words(probe)) none.drift_probe.emplace_back(word);
  const bpe_extension strict = extend_bpe(source, new_bytes, 12, none);
  CHECK(strict.written.empty());
  CHECK(drift(bpe_table(source), strict.table, probe).changed == 0);
}

TEST_CASE("extend writing: tokenizer.json keeps every other key and its order, vocab.json and merges.txt agree") {
  const nlohmann::ordered_json source = byte_level_source(false);
  const bpe_extension extension = extend_bpe(read_bpe_model(source, "s.json"), new_bytes, 12);
  const nlohmann::ordered_json written = extended_tokenizer_json(source, extension, "s.json");
  nlohmann::ordered_json rest = written;
  nlohmann::ordered_json source_rest = source;
  for (nlohmann::ordered_json* document : {&rest, &source_rest}) {
    (*document)["model"].erase("vocab");
    (*document)["model"].erase("merges");
  }
  CHECK(rest.dump() == source_rest.dump());  // the same keys, values and order
  std::vector<std::string> keys;
  for (const auto& entry : written["model"]["vocab"].items()) keys.push_back(entry.key());
  CHECK(keys == std::vector<std::string>{"a", "b", "c", "d", "e", G, "ab", G + "a", "cd", "abcd", G + "abcd",
                                         G + "abcde", "dab", "dabc"});
  CHECK(written["model"]["merges"].back() == "dab c");
  nlohmann::ordered_json vocab_json = source["model"]["vocab"];
  vocab_json["<|endoftext|>"] = 9;
  const nlohmann::ordered_json vocab_written = extended_vocab_json(vocab_json, extension, "vocab.json");
  CHECK(vocab_written.size() == 15);
  CHECK(vocab_written["dabc"] == 16);
  const std::string merges_txt = extended_merges_txt("#version: 0.2\na b\n" + G + " a\nc d", extension, "merges.txt");
  CHECK(merges_txt == "#version: 0.2\na b\n" + G + " a\nc d\nab cd\n" + G + " abcd\n" + G + "abcd e\nd ab\ndab c\n");
  // Files that are not the source's.
  const auto message = [](auto&& action) {
    const auto refused = clp_test::file_refusal_of(action);
    return refused ? refused->message : std::string("no refusal");
  };
  CHECK(message([&] { extended_merges_txt("a b\n", extension, "merges.txt"); }) ==
        "merges.txt: holds 1 merges, but the tokenizer the extension was built from has 3");
  vocab_json["<pad>"] = 12;
  CHECK(message([&] { extended_vocab_json(vocab_json, extension, "vocab.json"); }) ==
        "vocab.json: the vocabulary already uses id 12, which the extension gave to \"abcd\"");
  CHECK(message([&] { extended_tokenizer_json(written, extension, "s.json"); }).find("holds 8 merges") !=
        std::string::npos);
}

TEST_CASE("extend writing: parse_ordered_json reads what nlohmann's parser reads, and refuses a repeated key") {
  const std::string text = clp_test::read_file(std::string(CLP_EXAMPLE_MODELS_DIR) + "/en-large/tokenizer.json");
  CHECK(parse_ordered_json(text, "t.json").dump() == nlohmann::ordered_json::parse(text).dump());
  const auto message = [](const std::string& json) {
    const auto refused = clp_test::file_refusal_of([&] { parse_ordered_json(json, "t.json"); });
    return refused ? refused->message : std::string("no refusal");
  };
  CHECK(message(R"({"a": {"x": 1, "x": 2}})") == "t.json: holds the key \"x\" twice in one object");
  CHECK(message(R"({"a": [1, 2})").rfind("t.json: line 1 column 12: not valid JSON: ", 0) == 0);
  nlohmann::ordered_json object = {{"b", 1}};
  append_key(object, "a", 2);
  CHECK(object.dump() == R"({"b":1,"a":2})");
}

}  // namespace
}  // namespace test_extend_extension
