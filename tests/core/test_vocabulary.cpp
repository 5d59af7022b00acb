// SPDX-License-Identifier: MIT
// clp/vocabulary.hpp: intersect_vocabularies on hand-made vocabularies of every accepted shape,
// its errors, the normaliser, the Table 1 statistics, and the real GPT-2 vocabulary.

#include "fixtures.hpp"

#include <clp/vocabulary.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
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
      if (c >= '0' && c <= '9') value |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') value |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= unsigned(c - 'A' + 10);
      else fail("bad hex digit");
    }
    return value;
  }
  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
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
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
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
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
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

TEST_CASE("intersect_vocabularies: ids outside the matrices are errors naming the token") {
  const std::vector<std::string> source{"a", "b", "c"};
  const std::vector<std::pair<std::string, int>> target{{"a", 0}, {"c", 7}};
  const std::string target_past = error_of([&] { clp::intersect_vocabularies(source, target, {3, 5, {}}); });
  CHECK(contains(target_past, "target token 'c' (id 7) is past the 5 rows"));
  const std::string source_past = error_of([&] { clp::intersect_vocabularies(source, target, {2, 8, {}}); });
  CHECK(contains(source_past, "source token 'c' (id 2) is past the 2 rows"));
  const std::vector<std::pair<std::string, int>> negative{{"a", 0}, {"b", -1}};
  const std::string negative_id = error_of([&] { clp::intersect_vocabularies(negative, source); });
  CHECK(contains(negative_id, "source token 'b' (id -1) has a negative id"));
}

TEST_CASE("intersect_vocabularies: empty vocabularies and an empty overlap are errors") {
  const std::vector<std::string> empty;
  const std::vector<std::string> some{"a", "b"};
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(empty, some); }), "the source vocabulary is empty"));
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(some, empty); }), "the target vocabulary is empty"));
  const std::vector<std::string> other{"x", "y", "z"};
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(some, other); }),
                 "share no token (2 source, 3 target tokens)"));
  CHECK_THROWS_AS(clp::intersect_vocabularies(some, other), std::invalid_argument);
}

TEST_CASE("intersect_vocabularies: duplicate tokens and ids are errors naming the token") {
  const std::vector<std::string> listed_twice{"a", "b", "a"};
  const std::vector<std::string> some{"a"};
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(listed_twice, some); }),
                 "source token 'a' (id 2) is listed twice"));
  const std::vector<std::pair<std::string, int>> shared_id{{"a", 0}, {"b", 1}, {"c", 1}};
  CHECK(contains(error_of([&] { clp::intersect_vocabularies(some, shared_id); }),
                 "target tokens 'b' and 'c' share id 1"));
}

TEST_CASE("intersect_vocabularies: the normaliser matches differently spelled tokens; lowest source id wins") {
  // The source spells word starts with 'Ġ', the target with '▁'; "Ġthe" and "the" collide in the
  // source after normalisation, and the lower id (1) wins.
  const std::vector<std::string> source{"x", "the", "\xC4\xA0the", "\xC4\xA0" "cat"};
  const std::vector<std::string> target{"\xE2\x96\x81" "cat", "dog", "\xE2\x96\x81the"};
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
  CHECK(tokens[4587] == "\xC4\xA0" "der");
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
  std::vector<std::string> target;  // position = target id
  std::vector<clp::Index> source_of;     // GPT-2 id per target id, -1 for an invented token
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
