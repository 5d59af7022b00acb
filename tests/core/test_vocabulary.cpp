// SPDX-License-Identifier: MIT
// clp/vocabulary.hpp: intersect_vocabularies on hand-made vocabularies of every accepted shape,
// its errors, the normaliser, the Table 1 statistics, the real GPT-2 vocabulary, and matching by
// bytes: its rules, real tokenizers of several families against tests/data/count_overlaps.py
// (an independent Python oracle), and vocabularies respelled in another family's spelling.

#include "support/skip.hpp"
#include "support/utf8.hpp"
#include "fixtures.hpp"

#include <clp/vocabulary.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

using fixtures::error_of;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------------
// A JSON reader for exactly one shape: an object of string keys and integer values, as in a
// GPT-2 encoder.json. Keys are decoded to UTF-8 (\uXXXX escapes, surrogate pairs included).

class json_object_reader {
 public:
  explicit json_object_reader(std::string_view text) : text_(text) {}

  std::vector<std::pair<std::string, long long>> read() {
    std::vector<std::pair<std::string, long long>> entries;
    expect('{');
    if (peek() == '}') {
      ++at_;
      return entries;
    }
    for (;;) {
      std::string key = string();
      expect(':');
      const long long value = integer();
      entries.emplace_back(std::move(key), value);
      const char next = peek();
      ++at_;
      if (next == '}') break;
      if (next != ',') fail("expected ',' or '}'");
    }
    if (peek() != '\0') fail("trailing characters");
    return entries;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at byte " + std::to_string(at_));
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }
  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  unsigned hex4() {
    if (at_ + 4 > text_.size()) fail("short \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        value |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        value |= unsigned(c - 'A' + 10);
      else
        fail("bad hex digit");
    }
    return value;
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_ >= text_.size()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("unterminated escape");
      switch (const char e = text_[at_++]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (at_ + 2 > text_.size() || text_[at_] != '\\' || text_[at_ + 1] != 'u') fail("lone high surrogate");
            at_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone low surrogate");
          }
          clp_test::append_utf8(out, cp);
          break;
        }
        default:
          fail(std::string("unknown escape \\") + e);
      }
    }
  }
  long long integer() {
    skip_space();
    const std::size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
    if (at_ == start || (at_ == start + 1 && text_[start] == '-')) fail("expected an integer");
    return std::stoll(std::string(text_.substr(start, at_ - start)));
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

std::vector<std::pair<std::string, long long>> read_json_object(std::string_view text) {
  return json_object_reader(text).read();
}

/// The GPT-2 vocabulary, read once: tokens indexed by id.
const std::vector<std::string>& gpt2_tokens() {
  static const std::vector<std::string> tokens = [] {
    std::ifstream file(CLP_TEST_DATA_DIR "/gpt2/encoder.json", std::ios::binary);
    REQUIRE(file.good());
    std::stringstream text;
    text << file.rdbuf();
    const auto entries = read_json_object(text.str());
    std::vector<std::string> by_id(entries.size());
    for (const auto& [token, id] : entries) {
      REQUIRE(id >= 0);
      REQUIRE(std::size_t(id) < by_id.size());
      REQUIRE(by_id[std::size_t(id)].empty());  // every id once: ids are 0..n-1
      by_id[std::size_t(id)] = token;
    }
    return by_id;
  }();
  return tokens;
}

const std::string space_marker = "\xC4\xA0";  // U+0120 'Ġ', GPT-2's leading space

std::string strip_marker(std::string_view token) {
  if (token.substr(0, space_marker.size()) == space_marker) token.remove_prefix(space_marker.size());
  return std::string(token);
}

/// Every overlap pair names the same token on both sides.
void check_pairs_match(const clp::vocabulary_overlap& overlap, const std::vector<std::string>& source,
                       const std::vector<std::string>& target) {
  REQUIRE(overlap.source_ids.size() == overlap.target_ids.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i) {
    const std::string& s = source[std::size_t(overlap.source_ids[i])];
    const std::string& t = target[std::size_t(overlap.target_ids[i])];
    mismatches += s != t;
  }
  CHECK(mismatches == 0);
  CHECK(std::is_sorted(overlap.target_ids.begin(), overlap.target_ids.end()));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("json reader: escapes, surrogate pairs and integers") {
  const auto entries = read_json_object(
      R"( { "a": 1, "\u0120the" : 262 , "q\"\\\/\n\t": -3, "\ud83d\ude00x": 50256, "\u00e9\u4e2d": 0 } )");
  REQUIRE(entries.size() == 5);
  CHECK(entries[0] == std::pair<std::string, long long>("a", 1));
  CHECK(entries[1].first == "\xC4\xA0the");
  CHECK(entries[1].second == 262);
  CHECK(entries[2].first == "q\"\\/\n\t");
  CHECK(entries[2].second == -3);
  CHECK(entries[3].first == "\xF0\x9F\x98\x80x");  // U+1F600 from its surrogate pair
  CHECK(entries[3].second == 50256);
  CHECK(entries[4].first == "\xC3\xA9\xE4\xB8\xAD");
  CHECK(read_json_object("{}").empty());
  CHECK_THROWS(read_json_object(R"({"\ud83d": 1})"));
  CHECK_THROWS(read_json_object(R"({"a": 1,})"));
  CHECK_THROWS(read_json_object(R"({"a": x})"));
}

TEST_CASE("intersect_vocabularies: pairs sorted by target id, missing ids, sizes") {
  const std::vector<std::string> source{"the", "cat", "sat", "on", "mat"};
  const std::vector<std::string> target{"mat", "dog", "the", "ran", "cat"};
  const auto overlap = clp::intersect_vocabularies(source, target);
  CHECK(overlap.target_ids == std::vector<clp::Index>{0, 2, 4});
  CHECK(overlap.source_ids == std::vector<clp::Index>{4, 0, 1});
  CHECK(overlap.missing_ids == std::vector<clp::Index>{1, 3});
  CHECK(overlap.size() == 3);
  CHECK(overlap.target_rows() == 5);
  CHECK(overlap.source_vocab_size == 5);
  CHECK(overlap.target_vocab_size == 5);
}

TEST_CASE("intersect_vocabularies: every accepted vocabulary shape gives the same overlap") {
  // Source ids are not positions here: 10, 20, 30, 40.
  const std::map<std::string, int> source_map{{"a", 10}, {"b", 20}, {"c", 30}, {"d", 40}};
  const std::unordered_map<std::string, long> source_hash{{"a", 10}, {"b", 20}, {"c", 30}, {"d", 40}};
  const std::vector<std::pair<std::string, std::int64_t>> source_pairs{{"d", 40}, {"c", 30}, {"b", 20}, {"a", 10}};
  const std::vector<std::string> target_vector{"x", "c", "a", "y"};
  const std::array<const char*, 4> target_array{"x", "c", "a", "y"};
  const std::vector<std::pair<std::string_view, unsigned>> target_pairs{{"a", 2}, {"y", 3}, {"x", 0}, {"c", 1}};

  auto check = [](const clp::vocabulary_overlap& o) {
    CHECK(o.target_ids == std::vector<clp::Index>{1, 2});
    CHECK(o.source_ids == std::vector<clp::Index>{30, 10});
    CHECK(o.missing_ids == std::vector<clp::Index>{0, 3});
    CHECK(o.source_vocab_size == 4);
    CHECK(o.target_vocab_size == 4);
  };
  check(clp::intersect_vocabularies(source_map, target_vector));
  check(clp::intersect_vocabularies(source_hash, target_array));
  check(clp::intersect_vocabularies(source_pairs, target_pairs));
  check(clp::intersect_vocabularies(source_map, target_pairs));
}

TEST_CASE("intersect_vocabularies: the three Table 1 numbers") {
  // |Vs| = 8, |Vt| = 5, |Vs ∩ Vt| = 4: shares 4/8 of the source and 4/5 of the target.
  const std::vector<std::string> source{"a", "b", "c", "d", "e", "f", "g", "h"};
  const std::vector<std::string> target{"h", "a", "z", "c", "e"};
  const auto o = clp::intersect_vocabularies(source, target);
  CHECK(o.size() == 4);
  CHECK(o.share_of_source() == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(o.share_of_target() == doctest::Approx(0.8).epsilon(1e-15));
  // An empty result object reports zeros, not NaN.
  const clp::vocabulary_overlap none;
  CHECK(none.share_of_source() == 0.0);
  CHECK(none.share_of_target() == 0.0);
}

TEST_CASE("intersect_vocabularies: target_rows adds padding rows to the missing ids") {
  const std::vector<std::string> source{"a", "b"};
  const std::vector<std::pair<std::string, int>> target{{"b", 0}, {"q", 2}};
  const auto derived = clp::intersect_vocabularies(source, target);
  CHECK(derived.missing_ids == std::vector<clp::Index>{1, 2});  // id 1 is named by no token
  CHECK(derived.target_rows() == 3);

  const auto padded = clp::intersect_vocabularies(source, target, {2, 6, {}});
  CHECK(padded.target_ids == std::vector<clp::Index>{0});
  CHECK(padded.source_ids == std::vector<clp::Index>{1});
  CHECK(padded.missing_ids == std::vector<clp::Index>{1, 2, 3, 4, 5});
  CHECK(padded.target_rows() == 6);
  CHECK(padded.target_vocab_size == 2);
}

TEST_CASE("intersect_vocabularies: unnamed_ids are the missing rows no token names") {
  const std::vector<std::string> source{"a", "b"};
  const std::vector<std::pair<std::string, int>> target{{"b", 0}, {"q", 2}, {"a", 4}};
  const auto derived = clp::intersect_vocabularies(source, target);
  CHECK(derived.missing_ids == std::vector<clp::Index>{1, 2, 3});
  CHECK(derived.unnamed_ids == std::vector<clp::Index>{1, 3});  // "q" names 2
  const auto padded = clp::intersect_vocabularies(source, target, {2, 8, {}});
  CHECK(padded.missing_ids == std::vector<clp::Index>{1, 2, 3, 5, 6, 7});
  CHECK(padded.unnamed_ids == std::vector<clp::Index>{1, 3, 5, 6, 7});
  const std::vector<std::string> dense{"b", "x", "a"};
  CHECK(clp::intersect_vocabularies(source, dense).unnamed_ids.empty());
}

TEST_CASE("intersect_vocabularies: ids outside the matrices are errors naming the token") {
  const std::vector<std::string> source{"a", "b", "c"};
  const std::vector<std::pair<std::string, int>> target{{"a", 0}, {"c", 7}};
  const std::string target_past = error_of([&] { clp::intersect_vocabularies(source, target, {3, 5, {}}); });
  CHECK(target_past ==
        "clp::intersect_vocabularies: 'target' row 7 (token 'c') is past the 5 rows of its embedding matrix");
  const auto source_past = fixtures::thrown<clp::invalid_argument>([&] {
    clp::intersect_vocabularies(source, target, {2, 8, {}});
  });
  REQUIRE(source_past);
  CHECK(source_past->facts().argument == "source");
  CHECK(source_past->facts().row == 2);
  CHECK(source_past->problem() == "(token 'c') is past the 2 rows of its embedding matrix");
  const std::vector<std::pair<std::string, int>> negative{{"a", 0}, {"b", -1}};
  const auto negative_id =
      fixtures::thrown<clp::invalid_argument>([&] { clp::intersect_vocabularies(negative, source); });
  REQUIRE(negative_id);
  CHECK(negative_id->facts().argument == "source");
  CHECK(negative_id->facts().row == -1);
  CHECK(negative_id->problem() == "token 'b' has a negative id, -1");
}

TEST_CASE("intersect_vocabularies: empty vocabularies and an empty overlap are errors") {
  const std::vector<std::string> empty;
  const std::vector<std::string> some{"a", "b"};
  CHECK(error_of([&] { clp::intersect_vocabularies(empty, some); }) ==
        "clp::intersect_vocabularies: 'source' holds no token");
  const auto empty_target = fixtures::thrown<clp::invalid_argument>([&] { clp::intersect_vocabularies(some, empty); });
  REQUIRE(empty_target);
  CHECK(empty_target->facts().argument == "target");
  const std::vector<std::string> other{"x", "y", "z"};
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(some, other); }),
                 "share no token (2 source, 3 target tokens)"));
  CHECK_THROWS_AS(clp::intersect_vocabularies(some, other), clp::invalid_argument);
}

TEST_CASE("intersect_vocabularies: duplicate tokens and ids are errors naming the token") {
  const std::vector<std::string> listed_twice{"a", "b", "a"};
  const std::vector<std::string> some{"a"};
  const auto twice = fixtures::thrown<clp::invalid_argument>([&] { clp::intersect_vocabularies(listed_twice, some); });
  REQUIRE(twice);
  CHECK(twice->facts().argument == "source");
  CHECK(twice->facts().row == 2);
  CHECK(twice->problem() == "(token 'a') repeats the token of row 0");
  const std::vector<std::pair<std::string, int>> shared_id{{"a", 0}, {"b", 1}, {"c", 1}};
  CHECK(error_of([&] { clp::intersect_vocabularies(some, shared_id); }) ==
        "clp::intersect_vocabularies: 'target' row 1 belongs to two tokens, 'b' and 'c'");
}

TEST_CASE("intersect_vocabularies: the normaliser matches differently spelled tokens, lowest source id wins") {
  // The source spells word starts with 'Ġ', the target with '▁'; "Ġthe" and "the" collide in the
  // source after normalisation, and the lower id (1) wins.
  const std::vector<std::string> source{"x", "the", "\xC4\xA0the",
                                        "\xC4\xA0"
                                        "cat"};
  const std::vector<std::string> target{
      "\xE2\x96\x81"
      "cat",
      "dog", "\xE2\x96\x81the"};
  auto normalize = [](std::string_view token) {
    for (std::string_view marker : {std::string_view("\xC4\xA0"), std::string_view("\xE2\x96\x81")})
      if (token.substr(0, marker.size()) == marker) return std::string(token.substr(marker.size()));
    return std::string(token);
  };
  CHECK_THROWS_AS(clp::intersect_vocabularies(source, target), clp::error);  // exact match: nothing shared
  const auto o = clp::intersect_vocabularies(source, target, {4, 3, normalize});
  CHECK(o.target_ids == std::vector<clp::Index>{0, 2});
  CHECK(o.source_ids == std::vector<clp::Index>{3, 1});
  CHECK(o.missing_ids == std::vector<clp::Index>{1});
  CHECK(o.source_vocab_size == 4);
  CHECK(o.target_vocab_size == 3);
}

// With a normaliser, two target tokens that normalise to the same string each find their source
// token (an earlier version merged them, dropping one from the overlap and from missing_ids).
TEST_CASE("intersect_vocabularies: with a normaliser every target token still finds its source token") {
  const std::vector<std::string> source{"the", "cat"};
  const std::vector<std::string> target{"\xC4\xA0the", "the"};  // both normalise to "the"
  auto strip = [](std::string_view token) { return strip_marker(token); };
  const auto o = clp::intersect_vocabularies(source, target, {2, -1, strip});
  CHECK(o.target_ids == std::vector<clp::Index>{0, 1});
  CHECK(o.source_ids == std::vector<clp::Index>{0, 0});
  CHECK(o.target_rows() == 2);
}

// ---------------------------------------------------------------------------------------------
// The real GPT-2 vocabulary.

TEST_CASE("GPT-2 vocabulary: parsed entries") {
  const auto& tokens = gpt2_tokens();
  REQUIRE(tokens.size() == 50257);
  CHECK(tokens[0] == "!");
  CHECK(tokens[1] == "\"");
  CHECK(tokens[256] == "\xC4\xA0t");
  CHECK(tokens[262] == "\xC4\xA0the");
  CHECK(tokens[4587] ==
        "\xC4\xA0"
        "der");
  CHECK(tokens[50255] == "\xC4\xA0gazed");
  CHECK(tokens[50256] == "<|endoftext|>");
  const std::unordered_set<std::string> unique(tokens.begin(), tokens.end());
  CHECK(unique.size() == tokens.size());
}

TEST_CASE("GPT-2 vocabulary: intersected with its first 30000 ids, both ways") {
  const auto& tokens = gpt2_tokens();
  std::vector<std::pair<std::string, int>> full;  // (token, id) pairs, as an encoder.json holds them
  for (std::size_t id = 0; id < tokens.size(); ++id) full.emplace_back(tokens[id], int(id));
  const std::vector<std::string> first(tokens.begin(), tokens.begin() + 30000);

  const auto o = clp::intersect_vocabularies(full, first, {50257, 30000, {}});
  CHECK(o.size() == 30000);
  CHECK(o.missing_ids.empty());
  CHECK(o.source_ids == o.target_ids);
  CHECK(o.target_ids.back() == 29999);
  CHECK(o.share_of_source() == doctest::Approx(30000.0 / 50257.0));
  CHECK(o.share_of_target() == 1.0);

  const auto back = clp::intersect_vocabularies(first, full);
  CHECK(back.size() == 30000);
  CHECK(back.missing_ids.size() == 20257);
  CHECK(back.missing_ids.front() == 30000);
  CHECK(back.missing_ids.back() == 50256);
  CHECK(back.share_of_source() == 1.0);
  CHECK(back.share_of_target() == doctest::Approx(30000.0 / 50257.0));
}

TEST_CASE("GPT-2 vocabulary: intersected with its tokens without the 'G-dot' marker") {
  const auto& tokens = gpt2_tokens();
  // The target: every token with a leading 'Ġ' removed, each distinct string once, ids in order
  // of first appearance.
  std::vector<std::string> stripped;
  std::unordered_set<std::string> seen;
  for (const std::string& t : tokens)
    if (std::string s = strip_marker(t); seen.insert(s).second) stripped.push_back(std::move(s));
  // Expected overlap, counted independently: the stripped strings that are GPT-2 tokens as they are.
  const std::unordered_map<std::string, clp::Index> id_of = [&] {
    std::unordered_map<std::string, clp::Index> m;
    for (std::size_t i = 0; i < tokens.size(); ++i) m.emplace(tokens[i], clp::Index(i));
    return m;
  }();
  std::vector<clp::Index> expected_target, expected_source;
  for (std::size_t i = 0; i < stripped.size(); ++i)
    if (auto hit = id_of.find(stripped[i]); hit != id_of.end()) {
      expected_target.push_back(clp::Index(i));
      expected_source.push_back(hit->second);
    }
  // The same counts as Python's json.load on this file gives.
  CHECK(stripped.size() == 41721);
  CHECK(expected_target.size() == 17122);

  const auto o = clp::intersect_vocabularies(tokens, stripped);
  CHECK(o.size() == clp::Index(expected_target.size()));
  CHECK(o.target_ids == expected_target);
  CHECK(o.source_ids == expected_source);
  CHECK(o.missing_ids.size() == stripped.size() - expected_target.size());
  CHECK(o.source_vocab_size == 50257);
  CHECK(o.target_vocab_size == clp::Index(stripped.size()));
  check_pairs_match(o, tokens, stripped);
}

TEST_CASE("GPT-2 vocabulary: a shuffled subset plus 500 invented tokens") {
  const auto& tokens = gpt2_tokens();
  std::vector<clp::Index> ids(tokens.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = clp::Index(i);
  std::mt19937_64 engine(20230501);
  std::shuffle(ids.begin(), ids.end(), engine);
  ids.resize(20000);

  const std::unordered_set<std::string> known(tokens.begin(), tokens.end());
  std::vector<std::string> target;    // position = target id
  std::vector<clp::Index> source_of;  // GPT-2 id per target id, -1 for an invented token
  for (clp::Index id : ids) {
    target.push_back(tokens[std::size_t(id)]);
    source_of.push_back(id);
  }
  for (int i = 0; i < 500; ++i) {
    std::string invented = "\xE2\x96\x81zz" + std::to_string(i * 7 + 3) + "\xC3\xA4";
    REQUIRE(known.count(invented) == 0);
    target.push_back(std::move(invented));
    source_of.push_back(-1);
  }
  // Shuffle the target ids again so invented tokens sit between real ones.
  std::vector<std::size_t> order(target.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), engine);
  std::vector<std::string> shuffled(target.size());
  std::vector<clp::Index> shuffled_source(target.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    shuffled[i] = target[order[i]];
    shuffled_source[i] = source_of[order[i]];
  }

  std::vector<clp::Index> expected_target, expected_source, expected_missing;
  for (std::size_t t = 0; t < shuffled.size(); ++t) {
    if (shuffled_source[t] >= 0) {
      expected_target.push_back(clp::Index(t));
      expected_source.push_back(shuffled_source[t]);
    } else {
      expected_missing.push_back(clp::Index(t));
    }
  }
  const auto o = clp::intersect_vocabularies(tokens, shuffled, {50257, 20500, {}});
  CHECK(o.size() == 20000);
  CHECK(o.missing_ids.size() == 500);
  CHECK(o.target_ids == expected_target);
  CHECK(o.source_ids == expected_source);
  CHECK(o.missing_ids == expected_missing);
  CHECK(o.share_of_target() == doctest::Approx(20000.0 / 20500.0));
  CHECK(o.share_of_source() == doctest::Approx(20000.0 / 50257.0));
  check_pairs_match(o, tokens, shuffled);
}

// ---------------------------------------------------------------------------------------------
// Matching by bytes: the rules, on hand-made vocabularies.

namespace {

using clp::token_match;
using clp::token_spelling;

const std::string sp = "\xE2\x96\x81";  // SentencePiece's '▁'
const std::string g = "\xC4\xA0";       // byte-level 'Ġ'

clp::intersect_options by_bytes(token_spelling source, token_spelling target) {
  clp::intersect_options options;
  options.match = token_match::bytes;
  options.source_spelling = source;
  options.target_spelling = target;
  return options;
}

std::vector<bool> flags(std::initializer_list<int> values) {
  std::vector<bool> out;
  for (int v : values) out.push_back(v != 0);
  return out;
}

/// Per pair: whether it was an exact string match.
std::vector<bool> exact_flags(const clp::vocabulary_overlap& o) {
  std::vector<bool> out;
  for (clp::match_reason reason : o.matched_by) out.push_back(reason == clp::match_reason::exact);
  return out;
}

}  // namespace

TEST_CASE("intersect_vocabularies by bytes: exact strings first, then the lowest id with the same bytes") {
  // SentencePiece source: a space is both "<0x20>" (id 0) and "▁" (id 1).
  const std::vector<std::pair<std::string, int>> source{{"<0x20>", 0},   {sp, 1},       {"the", 2},
                                                        {sp + "the", 3}, {"<0x61>", 4}, {"a", 5}};
  // Byte-level target.
  const std::vector<std::pair<std::string, int>> target{{g, 0}, {"the", 1}, {g + "the", 2}, {"x", 3}, {"a", 4}};
  const auto o =
      clp::intersect_vocabularies(source, target, by_bytes(token_spelling::sentencepiece, token_spelling::byte_level));
  CHECK(o.target_ids == std::vector<clp::Index>{0, 1, 2, 4});
  // "Ġ" (a space): no source token is spelled "Ġ"; of the two that are a space, the lowest id.
  // "a": "<0x61>" (id 4) is also the byte 'a', but the exact string "a" (id 5) wins.
  CHECK(o.source_ids == std::vector<clp::Index>{0, 2, 3, 5});
  CHECK(exact_flags(o) == flags({0, 1, 0, 1}));
  CHECK(o.exact_matches == 2);
  CHECK(o.byte_matches == 2);
  CHECK(o.shared_strings == 2);
  CHECK(o.missing_ids == std::vector<clp::Index>{3});

  // By string, the same vocabularies share "the" and "a" only.
  const auto exact = clp::intersect_vocabularies(source, target);
  CHECK(exact.target_ids == std::vector<clp::Index>{1, 4});
  CHECK(exact.source_ids == std::vector<clp::Index>{2, 5});
  CHECK(exact.exact_matches == 2);
  CHECK(exact.byte_matches == 0);
  CHECK(exact.shared_strings == 2);
  CHECK(exact_flags(exact) == flags({1, 1}));
}

TEST_CASE("intersect_vocabularies by bytes: a string that stands for other bytes takes the row with its bytes") {
  // Byte-level "¡" is the single byte 0xA1; SentencePiece "¡" is the character U+00A1 (C2 A1).
  const std::string inverted_exclamation = "\xC2\xA1";
  const std::vector<std::pair<std::string, int>> source{{inverted_exclamation, 2}, {"<0xA1>", 5}};
  const std::vector<std::pair<std::string, int>> target{{inverted_exclamation, 0}};
  const auto options = by_bytes(token_spelling::sentencepiece, token_spelling::byte_level);
  const auto o = clp::intersect_vocabularies(source, target, options);
  CHECK(o.source_ids == std::vector<clp::Index>{5});  // the byte, not the lower-id character
  CHECK(exact_flags(o) == flags({0}));
  CHECK(o.shared_strings == 1);
  CHECK(o.exact_matches == 0);
  CHECK(o.byte_matches == 1);
  // With no source token for the byte, the string match stands (matching by bytes never
  // matches fewer target tokens than matching by string).
  const std::vector<std::pair<std::string, int>> no_byte{{inverted_exclamation, 2}};
  const auto fallback = clp::intersect_vocabularies(no_byte, target, options);
  CHECK(fallback.source_ids == std::vector<clp::Index>{2});
  CHECK(exact_flags(fallback) == flags({1}));
  CHECK(fallback.exact_matches == 1);
}

TEST_CASE("intersect_vocabularies by bytes: every target token once, several may share a source row") {
  const std::vector<std::string> source{"x", g};                       // byte-level: id 1 is a space
  const std::vector<std::string> target{sp, "<0x20>", "y", "<0x78>"};  // SentencePiece
  const auto o =
      clp::intersect_vocabularies(source, target, by_bytes(token_spelling::byte_level, token_spelling::sentencepiece));
  CHECK(o.target_ids == std::vector<clp::Index>{0, 1, 3});
  CHECK(o.source_ids == std::vector<clp::Index>{1, 1, 0});
  CHECK(o.missing_ids == std::vector<clp::Index>{2});
  CHECK(o.byte_matches == 3);
  CHECK(o.target_rows() == 4);
}

TEST_CASE("intersect_vocabularies by bytes: the word '▁house', 'Ġhouse', 'house' in three families") {
  const std::vector<std::string> sentencepiece{sp + "house", "house", sp + "s"};
  const std::vector<std::string> byte_level{"s", g + "house", "house"};
  const std::vector<std::string> wordpiece{"##house", "house", "##s"};
  const auto sp_bl = clp::intersect_vocabularies(sentencepiece, byte_level,
                                                 by_bytes(token_spelling::sentencepiece, token_spelling::byte_level));
  CHECK(sp_bl.target_ids == std::vector<clp::Index>{1, 2});
  CHECK(sp_bl.source_ids == std::vector<clp::Index>{0, 1});
  CHECK(exact_flags(sp_bl) == flags({0, 1}));
  const auto wp_bl = clp::intersect_vocabularies(wordpiece, byte_level,
                                                 by_bytes(token_spelling::wordpiece, token_spelling::byte_level));
  // "house" is " house" in WordPiece: it meets "Ġhouse", not the byte-level "house"; "##house"
  // meets that one; "##s" meets "s".
  CHECK(wp_bl.target_ids == std::vector<clp::Index>{0, 1, 2});
  CHECK(wp_bl.source_ids == std::vector<clp::Index>{2, 1, 0});
  CHECK(exact_flags(wp_bl) == flags({0, 0, 0}));
  CHECK(wp_bl.shared_strings == 1);  // "house" is in both, standing for different bytes
}

TEST_CASE("intersect_vocabularies: the spellings are read only when matching by bytes") {
  const std::vector<std::string> source{sp + "a", "b"};
  const std::vector<std::string> target{g + "a", "b"};
  clp::intersect_options options;
  options.source_spelling = token_spelling::sentencepiece;
  options.target_spelling = token_spelling::byte_level;
  const auto o = clp::intersect_vocabularies(source, target, options);  // match = exact, the default
  CHECK(o.target_ids == std::vector<clp::Index>{1});
  CHECK(o.source_ids == std::vector<clp::Index>{1});
}

TEST_CASE("intersect_vocabularies by bytes: the normaliser maps the bytes") {
  const std::vector<std::string> source{g + "The", "cat"};
  const std::vector<std::string> target{sp + "the", "Cat", "cat"};
  auto options = by_bytes(token_spelling::byte_level, token_spelling::sentencepiece);
  options.normalize = [](std::string_view bytes) {
    std::string lower(bytes);
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return lower;
  };
  const auto o = clp::intersect_vocabularies(source, target, options);
  CHECK(o.target_ids == std::vector<clp::Index>{0, 1, 2});
  CHECK(o.source_ids == std::vector<clp::Index>{0, 1, 1});
  CHECK(exact_flags(o) == flags({0, 0, 1}));
}

TEST_CASE("intersect_vocabularies with a normaliser: the exact string wins over a lower id with the same key") {
  const std::vector<std::string> source{"The", "the"};
  const std::vector<std::string> target{"the", "THE"};
  clp::intersect_options options;
  options.normalize = [](std::string_view token) {
    std::string lower(token);
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return lower;
  };
  const auto o = clp::intersect_vocabularies(source, target, options);
  CHECK(o.source_ids == std::vector<clp::Index>{1, 0});
  CHECK(exact_flags(o) == flags({1, 0}));
}

TEST_CASE("intersect_vocabularies: an empty overlap may be a result, for counting") {
  const std::vector<std::string> some{"a", "b"};
  const std::vector<std::pair<std::string, int>> other{{"x", 0}, {"y", 3}};
  CHECK_THROWS_AS(clp::intersect_vocabularies(some, other), clp::error);
  CHECK(contains(error_of([&] {
                   clp::intersect_vocabularies(some, other,
                                               by_bytes(token_spelling::plain, token_spelling::byte_level));
                 }),
                 "share no token, by string or by bytes (2 source, 2 target tokens)"));
  clp::intersect_options options;
  options.allow_empty_overlap = true;
  const auto none = clp::intersect_vocabularies(some, other, options);
  CHECK(none.size() == 0);
  CHECK(none.missing_ids == std::vector<clp::Index>{0, 1, 2, 3});
  CHECK(none.exact_matches == 0);
  CHECK(none.byte_matches == 0);
  CHECK(none.shared_strings == 0);
  CHECK(none.share_of_source() == 0.0);
  options.target_rows = 6;
  CHECK(clp::intersect_vocabularies(some, other, options).missing_ids.size() == 6);
  // The other errors still are errors.
  const std::vector<std::string> empty;
  CHECK_THROWS_AS(clp::intersect_vocabularies(empty, other, options), clp::error);
}

// ---------------------------------------------------------------------------------------------
// Real tokenizers. tests/data/qwen3 ships (Apache-2.0); the others are fetched by
// tests/data/fetch_tokenizers.sh into tests/data/fetched/ and their tests skip without them.
// The expected counts are tests/data/count_overlaps.py's, run on the same files (docs/matching.md).

namespace {

using vocabulary = std::vector<std::pair<std::string, clp::Index>>;

/// model.vocab plus the added_tokens that are not in it, as (token, id) pairs.
vocabulary read_tokenizer_json(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  REQUIRE(file.good());
  const nlohmann::json document = nlohmann::json::parse(file);
  vocabulary entries;
  std::unordered_set<std::string> seen;
  for (const auto& [token, id] : document.at("model").at("vocab").items()) {
    entries.emplace_back(token, id.get<clp::Index>());
    seen.insert(token);
  }
  for (const auto& added : document.at("added_tokens")) {
    const std::string token = added.at("content").get<std::string>();
    if (seen.insert(token).second) entries.emplace_back(token, added.at("id").get<clp::Index>());
  }
  return entries;
}

/// A tokenizer by name: shipped in tests/data/<name>/, or fetched into tests/data/fetched/<name>/.
/// Read once; nullptr when it is not there.
const vocabulary* tokenizer(const std::string& name) {
  static std::map<std::string, vocabulary> cache;
  if (auto hit = cache.find(name); hit != cache.end()) return &hit->second;
  for (const std::string& folder :
       {std::string(CLP_TEST_DATA_DIR "/") + name, std::string(CLP_TEST_DATA_DIR "/fetched/") + name})
    if (std::filesystem::exists(folder + "/tokenizer.json"))
      return &cache.emplace(name, read_tokenizer_json(folder + "/tokenizer.json")).first->second;
  return nullptr;
}

vocabulary gpt2_vocabulary() {
  vocabulary entries;
  const auto& tokens = gpt2_tokens();
  for (std::size_t id = 0; id < tokens.size(); ++id) entries.emplace_back(tokens[id], clp::Index(id));
  return entries;
}

/// One line of count_overlaps.py's output.
struct oracle_counts {
  clp::Index shared_strings, size, exact_matches, byte_matches;
  std::uint64_t pair_checksum;
  std::vector<std::pair<clp::Index, clp::Index>> first_byte_pairs;
};

void check_against(const clp::vocabulary_overlap& o, const oracle_counts& want) {
  CHECK(o.shared_strings == want.shared_strings);
  CHECK(o.size() == want.size);
  CHECK(o.exact_matches == want.exact_matches);
  CHECK(o.byte_matches == want.byte_matches);
  std::uint64_t checksum = 0;  // wraps modulo 2^64, like the oracle's
  std::vector<std::pair<clp::Index, clp::Index>> first;
  std::size_t exact = 0;
  for (std::size_t i = 0; i < o.target_ids.size(); ++i) {
    checksum += std::uint64_t(o.target_ids[i] + 1) * std::uint64_t(o.source_ids[i] + 1);
    exact += o.matched_by[i] == clp::match_reason::exact;
    if (o.matched_by[i] != clp::match_reason::exact && first.size() < 3)
      first.emplace_back(o.target_ids[i], o.source_ids[i]);
  }
  CHECK(checksum == want.pair_checksum);
  CHECK(first == want.first_byte_pairs);
  CHECK(exact == std::size_t(want.exact_matches));
}

/// Intersects by bytes and by string, checking both against the oracle (exact: shared_strings).
void check_pair(const vocabulary& source, token_spelling source_spelling, const vocabulary& target,
                token_spelling target_spelling, const oracle_counts& want) {
  check_against(clp::intersect_vocabularies(source, target, by_bytes(source_spelling, target_spelling)), want);
  const auto exact = clp::intersect_vocabularies(source, target);
  CHECK(exact.size() == want.shared_strings);
  CHECK(exact.exact_matches == want.shared_strings);
}

#define CLP_NEED_TOKENIZER(variable, name)                                                         \
  const vocabulary* variable = tokenizer(name);                                                    \
  if (!variable) {                                                                                 \
    clp_test::skip("tests/data/fetched/" name " is absent (bash tests/data/fetch_tokenizers.sh)"); \
    return;                                                                                        \
  }

}  // namespace

TEST_CASE("real tokenizers: GPT-2 and Qwen3 (shipped, both byte-level): by bytes = by string") {
  const vocabulary* qwen3 = tokenizer("qwen3");
  REQUIRE(qwen3);
  CHECK(qwen3->size() == 151669);
  const vocabulary gpt2 = gpt2_vocabulary();
  const oracle_counts want{42257, 42257, 42257, 0, 50058004348886ull, {}};
  check_pair(gpt2, token_spelling::byte_level, *qwen3, token_spelling::byte_level, want);
  check_pair(*qwen3, token_spelling::byte_level, gpt2, token_spelling::byte_level, want);
}

TEST_CASE("real tokenizers: Llama 2 (SentencePiece) -> Llama 3 (byte-level)") {
  CLP_NEED_TOKENIZER(llama2, "llama2")
  CLP_NEED_TOKENIZER(llama3, "llama3")
  check_pair(*llama2, token_spelling::sentencepiece, *llama3, token_spelling::byte_level,
             {10606, 29110, 10472, 18638, 18281308139723ull, {{94, 164}, {95, 165}, {96, 166}}});
  check_pair(*llama3, token_spelling::byte_level, *llama2, token_spelling::sentencepiece,
             {10606, 29256, 10493, 18763, 18281646887683ull, {{3, 188}, {4, 189}, {5, 190}}});
}

TEST_CASE("real tokenizers: Gemma 3 (SentencePiece) -> Llama 3 (byte-level)") {
  CLP_NEED_TOKENIZER(gemma3, "gemma3")
  CLP_NEED_TOKENIZER(llama3, "llama3")
  check_pair(*gemma3, token_spelling::sentencepiece, *llama3, token_spelling::byte_level,
             {25036, 86435, 24877, 61558, 515950106379648ull, {{94, 399}, {95, 400}, {96, 401}}});
}

TEST_CASE("real tokenizers: Llama 3 -> Qwen3, GPT-4o -> Llama 3, DeepSeek-V3 -> Qwen3 (byte-level)") {
  CLP_NEED_TOKENIZER(llama3, "llama3")
  const vocabulary* qwen3 = tokenizer("qwen3");
  REQUIRE(qwen3);
  check_pair(*llama3, token_spelling::byte_level, *qwen3, token_spelling::byte_level,
             {109566, 109566, 109566, 0, 475020352948292ull, {}});
  CLP_NEED_TOKENIZER(gpt4o, "gpt4o")
  check_pair(*gpt4o, token_spelling::byte_level, *llama3, token_spelling::byte_level,
             {103245, 103245, 103245, 0, 561489786274165ull, {}});
  CLP_NEED_TOKENIZER(deepseek_v3, "deepseek_v3")
  check_pair(*deepseek_v3, token_spelling::byte_level, *qwen3, token_spelling::byte_level,
             {84030, 84030, 84030, 0, 318228387828419ull, {}});
}

TEST_CASE("real tokenizers: Llama 2 -> Gemma 3 (both SentencePiece), Gemma 3 and Llama 2 -> Qwen3") {
  CLP_NEED_TOKENIZER(llama2, "llama2")
  CLP_NEED_TOKENIZER(gemma3, "gemma3")
  const vocabulary* qwen3 = tokenizer("qwen3");
  REQUIRE(qwen3);
  // Gemma 3 holds "\n" as a character (id 107); Llama 2 only as "<0x0A>" (id 13).
  check_pair(*llama2, token_spelling::sentencepiece, *gemma3, token_spelling::sentencepiece,
             {31312, 31314, 31312, 2, 36782380005969ull, {{107, 13}, {255968, 12}}});
  check_pair(*gemma3, token_spelling::sentencepiece, *qwen3, token_spelling::byte_level,
             {24520, 95970, 24361, 71609, 857579556513345ull, {{94, 399}, {95, 400}, {96, 401}}});
  check_pair(*llama2, token_spelling::sentencepiece, *qwen3, token_spelling::byte_level,
             {10566, 29237, 10432, 18805, 19817723310515ull, {{94, 164}, {95, 165}, {96, 166}}});
}

// ---------------------------------------------------------------------------------------------
// A vocabulary respelled in another family's spelling, by a writer of each spelling written
// here: matched by bytes, every token it can spell meets itself, id for id.

namespace {

/// Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80)
      n = 1, cp = c;
    else if (c >= 0xC2 && c <= 0xDF)
      n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 4, cp = c & 0x07;
    else
      return false;
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}

/// GPT-2's byte-level string -> bytes, from the alphabet's two lists (not clp's table).
std::string byte_level_to_bytes(const std::string& token) {
  static const std::unordered_map<std::uint32_t, char> byte_of = [] {
    std::unordered_map<std::uint32_t, char> m;
    std::uint32_t shifted = 0;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      m[self ? b : 0x100 + shifted++] = char(b);
    }
    return m;
  }();
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    const auto c = static_cast<unsigned char>(token[i]);
    const std::uint32_t cp = c < 0x80 ? c : ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3Fu);
    i += c < 0x80 ? 1 : 2;
    bytes += byte_of.at(cp);
  }
  return bytes;
}

/// bytes -> SentencePiece, or "" when SentencePiece cannot spell them: a single byte outside
/// printable ASCII is "<0xNN>"; otherwise valid UTF-8 with ' ' written '▁', unless the bytes
/// hold a '▁' of their own or would read as a byte piece.
std::string spell_sentencepiece(const std::string& bytes) {
  if (bytes.size() == 1 &&
      (static_cast<unsigned char>(bytes[0]) < 0x21 || static_cast<unsigned char>(bytes[0]) > 0x7E)) {
    if (bytes[0] == ' ') return sp;
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", static_cast<unsigned char>(bytes[0]));
    return piece;
  }
  if (!valid_utf8(bytes) || bytes.find(sp) != std::string::npos) return "";
  if (bytes.size() == 6 && bytes.compare(0, 3, "<0x") == 0 && bytes[5] == '>') return "";
  std::string out;
  for (char c : bytes) out += c == ' ' ? sp : std::string(1, c);
  return out;
}

/// bytes -> WordPiece, or "" when WordPiece cannot spell them: " word" is "word", "piece"
/// without a space is "##piece"; spaces elsewhere, and a word that would read as "##...", cannot.
std::string spell_wordpiece(const std::string& bytes) {
  if (!valid_utf8(bytes) || bytes.empty()) return "";
  if (bytes[0] == ' ') {
    const std::string word = bytes.substr(1);
    if (word.empty() || word.find(' ') != std::string::npos || word.compare(0, 2, "##") == 0) return "";
    return word;
  }
  if (bytes.find(' ') != std::string::npos) return "";
  return "##" + bytes;
}

/// Respells a byte-level vocabulary; the tokens the spelling cannot write are left out.
vocabulary respell(const vocabulary& byte_level, token_spelling spelling) {
  vocabulary out;
  for (const auto& [token, id] : byte_level) {
    const std::string bytes = byte_level_to_bytes(token);
    std::string spelled =
        spelling == token_spelling::sentencepiece ? spell_sentencepiece(bytes) : spell_wordpiece(bytes);
    if (!spelled.empty()) out.emplace_back(std::move(spelled), id);
  }
  return out;
}

/// The respelled vocabulary as source, the byte-level one as target, and the other way round:
/// every respelled token meets its own id; a target token that could not be respelled meets a
/// source token only by its string (counted here by a plain lookup).
void check_respelled(const vocabulary& original, token_spelling spelling, std::size_t expected_spelled) {
  const vocabulary spelled = respell(original, spelling);
  CHECK(spelled.size() == expected_spelled);
  std::unordered_map<std::string, clp::Index> spelled_id;
  std::unordered_set<clp::Index> spelled_ids;
  for (const auto& [token, id] : spelled) {
    spelled_id.emplace(token, id);
    spelled_ids.insert(id);
  }
  std::vector<clp::Index> want_target, want_source;
  std::vector<bool> want_exact;
  std::map<clp::Index, std::string> token_of;
  for (const auto& [token, id] : original) token_of[id] = token;
  for (const auto& [id, token] : token_of) {
    const auto same = spelled_id.find(token);
    if (spelled_ids.count(id)) {
      want_target.push_back(id);
      want_source.push_back(id);
      want_exact.push_back(same != spelled_id.end() && same->second == id);
    } else if (same != spelled_id.end()) {
      want_target.push_back(id);
      want_source.push_back(same->second);
      want_exact.push_back(true);
    }
  }
  const auto o = clp::intersect_vocabularies(spelled, original, by_bytes(spelling, token_spelling::byte_level));
  CHECK(o.target_ids == want_target);
  CHECK(o.source_ids == want_source);
  CHECK(exact_flags(o) == want_exact);

  // The other way: every respelled token finds its own id in the full byte-level vocabulary.
  const auto back = clp::intersect_vocabularies(original, spelled, by_bytes(token_spelling::byte_level, spelling));
  CHECK(back.size() == clp::Index(spelled.size()));
  CHECK(back.target_ids == back.source_ids);
}

}  // namespace

TEST_CASE("respelled vocabularies: GPT-2 as SentencePiece and as WordPiece meets itself by bytes, id for id") {
  const vocabulary gpt2 = gpt2_vocabulary();
  // Left out: tokens longer than one byte that are not UTF-8 (parts of characters), and for
  // WordPiece the tokens with a space other than one leading space. The counts are Python's
  // (bytes.decode('utf-8') and str tests on count_overlaps.py's byte-level decoding).
  check_respelled(gpt2, token_spelling::sentencepiece, 50041);
  check_respelled(gpt2, token_spelling::wordpiece, 49906);
}

TEST_CASE("respelled vocabularies: Qwen3 as SentencePiece meets itself by bytes, id for id") {
  const vocabulary* qwen3 = tokenizer("qwen3");
  REQUIRE(qwen3);
  check_respelled(*qwen3, token_spelling::sentencepiece, 150349);
}

TEST_CASE("intersect_vocabularies: shared ids are found among sparse ids too, the first clash named") {
  const std::vector<std::pair<std::string, std::int64_t>> sparse{
      {"a", 5000000000}, {"b", 7}, {"c", 9000000000}, {"d", 7}, {"e", 5000000000}};
  const auto sparse_clash =
      fixtures::thrown<clp::invalid_argument>([&] { clp::intersect_vocabularies(sparse, sparse); });
  REQUIRE(sparse_clash);
  CHECK(sparse_clash->facts().argument == "source");
  CHECK(sparse_clash->facts().row == 7);
  CHECK(sparse_clash->problem() == "belongs to two tokens, 'b' and 'd'");
  const std::vector<std::pair<std::string, int>> dense{{"a", 1}, {"b", 0}, {"c", 1}, {"d", 0}};
  const auto dense_clash = fixtures::thrown<clp::invalid_argument>([&] { clp::intersect_vocabularies(dense, dense); });
  REQUIRE(dense_clash);
  CHECK(dense_clash->facts().row == 1);
  CHECK(dense_clash->problem() == "belongs to two tokens, 'a' and 'c'");
}

TEST_CASE("intersect_vocabularies: forced pairs replace a match or add one, and are counted apart") {
  // Target "c" (id 2) would match source "c" (id 2) exactly; "<eos>" (target 3) matches nothing.
  const std::vector<std::string> source{"a", "b", "c", "</s>"};
  const std::vector<std::string> target{"x", "b", "c", "<eos>", "y"};
  clp::intersect_options options;
  options.target_rows = 6;  // row 5 is padding, named by no token
  options.forced_pairs = {{3, 3}, {2, 0}};
  const clp::vocabulary_overlap o = clp::intersect_vocabularies(source, target, options);
  CHECK(o.target_ids == std::vector<clp::Index>{1, 2, 3});
  CHECK(o.source_ids == std::vector<clp::Index>{1, 0, 3});
  CHECK(o.matched_by ==
        std::vector<clp::match_reason>{clp::match_reason::exact, clp::match_reason::forced, clp::match_reason::forced});
  CHECK(o.exact_matches == 1);
  CHECK(o.byte_matches == 0);
  CHECK(o.forced_matches == 2);
  CHECK(o.exact_matches + o.byte_matches + o.forced_matches == o.size());
  CHECK(o.missing_ids == std::vector<clp::Index>{0, 4, 5});
  CHECK(o.unnamed_ids == std::vector<clp::Index>{5});
  CHECK(o.shared_strings == 2);  // what an exact match gives, forced pairs aside

  // A forced pair alone makes an overlap.
  clp::intersect_options only;
  only.forced_pairs = {{0, 0}};
  CHECK(clp::intersect_vocabularies(std::vector<std::string>{"p"}, std::vector<std::string>{"q"}, only).size() == 1);

  // Ids past the matrices, negative ids and a target forced twice are invalid arguments.
  const auto refused = [&](std::vector<clp::forced_pair> pairs, const std::string& words) {
    clp::intersect_options bad;
    bad.source_rows = 4;
    bad.target_rows = 6;
    bad.forced_pairs = std::move(pairs);
    try {
      clp::intersect_vocabularies(source, target, bad);
      FAIL("no error for ", words);
    } catch (const clp::invalid_argument& e) {
      CHECK(e.facts().argument == "forced_pairs");
      CHECK(contains(e.what(), words));
    }
  };
  refused({{6, 0}}, "target id is outside the 6 target rows");
  refused({{0, 4}}, "source id is outside the 4 source rows");
  refused({{-1, 0}}, "target id is outside");
  refused({{1, 0}, {1, 2}}, "target id 1 is forced twice");
}
