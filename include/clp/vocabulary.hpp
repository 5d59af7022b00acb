// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Vocabulary intersection: which target tokens also exist in the source vocabulary (eq. 2
/// copies their embeddings) and which must be synthesised (eq. 3), with the paper's Table 1
/// statistics. Tokens match by string, as in the paper, or by the bytes they stand for, so
/// that two model families that spell bytes differently (see <clp/token_bytes.hpp>) meet.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/token_bytes.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp {

/// How intersect_vocabularies decides that a target token is a source token.
enum class token_match {
  /// By string, as the paper does: "Ġhouse" and "▁house" differ.
  exact,
  /// By the bytes each token stands for in its own tokenizer's spelling
  /// (intersect_options::source_spelling, target_spelling; see clp::token_bytes): byte-level
  /// "Ġhouse", SentencePiece "▁house" and WordPiece "house" are all " house".
  bytes,
};

/// Why a target token takes the row of a source token.
enum class match_reason : std::uint8_t {
  exact,   ///< the two tokens are the same string
  bytes,   ///< the strings differ but stand for the same bytes (or have the same normalised key)
  forced,  ///< the caller said so: intersect_options::forced_pairs (special tokens by role, say)
};

/// A target row that must take a source row, whatever the tokens' strings.
struct forced_pair {
  Index target_id = 0;
  Index source_id = 0;
};

/// The result of intersect_vocabularies.
struct vocabulary_overlap {
  /// Overlapping tokens as parallel arrays, sorted by target id: target token
  /// target_ids[i] takes the row of source token source_ids[i]. Each target id appears once.
  std::vector<Index> target_ids;
  std::vector<Index> source_ids;
  /// Parallel to target_ids: why the pair was made.
  std::vector<match_reason> matched_by;
  /// Every target row in [0, target_rows) that is not in target_ids, ascending. This includes
  /// rows no token names (padding rows of an embedding matrix larger than its vocabulary).
  std::vector<Index> missing_ids;
  /// The missing rows no target token names, ascending (a subset of missing_ids): padding of
  /// an embedding matrix to a multiple of 64 or 128 rows, and holes in the target ids.
  /// Synthesis writes them like any missing row but counts them as padding_rows, apart from
  /// the weighting's diagnostics. Empty for an overlap built by hand: every missing row is
  /// then a token's.
  std::vector<Index> unnamed_ids;
  /// Tokens in each vocabulary (the paper's |Vs| and |Vt|).
  Index source_vocab_size = 0;
  Index target_vocab_size = 0;
  /// Pairs whose two tokens are the same string (match_reason::exact).
  Index exact_matches = 0;
  /// Pairs whose strings differ but whose bytes (or normalised keys) are the same.
  Index byte_matches = 0;
  /// Pairs the caller forced (intersect_options::forced_pairs), whatever the strings.
  /// exact_matches + byte_matches + forced_matches == size().
  Index forced_matches = 0;
  /// Target tokens whose string is also a source token: the overlap an exact match gives
  /// (the paper's |Vs ∩ Vt|), whichever match was asked for. With token_match::bytes it can
  /// exceed exact_matches: a string both vocabularies hold but that stands for different
  /// bytes in each (Llama 3's "¡" is the byte 0xA1, Llama 2's the character U+00A1) takes the
  /// row of the source token with its bytes when there is one.
  Index shared_strings = 0;

  /// |Vs ∩ Vt|.
  Index size() const { return static_cast<Index>(target_ids.size()); }
  /// Rows of the target embedding: overlapping plus missing.
  Index target_rows() const { return size() + static_cast<Index>(missing_ids.size()); }
  /// |Vs ∩ Vt| / |Vs|: the normalisation of the paper's Table 1.
  double share_of_source() const { return source_vocab_size ? double(size()) / double(source_vocab_size) : 0.0; }
  /// |Vs ∩ Vt| / |Vt|.
  double share_of_target() const { return target_vocab_size ? double(size()) / double(target_vocab_size) : 0.0; }
};

struct intersect_options {
  /// Rows of the source embedding; every source id must be below it. -1: not checked.
  Index source_rows = -1;
  /// Rows of the helper (and output) embedding; every target id must be below it, and
  /// missing_ids covers [0, target_rows). -1: one past the largest target id.
  Index target_rows = -1;
  /// Optional: tokens are compared after this mapping (for example lower-casing). With
  /// token_match::exact it maps the token strings; with token_match::bytes it maps the bytes
  /// the tokens stand for. Empty: no mapping (the paper's exact string match).
  std::function<std::string(std::string_view)> normalize;
  /// By string (the paper, the default) or by the bytes the tokens stand for.
  token_match match = token_match::exact;
  /// How each vocabulary spells bytes; read only by token_match::bytes.
  token_spelling source_spelling = token_spelling::plain;
  token_spelling target_spelling = token_spelling::plain;
  /// false: an overlap without a shared token is an error (a transfer from it copies nothing).
  /// true: it is a result, for counting (every target row is then missing).
  bool allow_empty_overlap = false;
  /// Pairs decided before any matching: target row target_id takes source row source_id
  /// (special tokens matched by their role, say). A forced pair replaces the target token's
  /// match or adds one (also for a row no target token names); it counts as forced_matches.
  /// Each target id at most once; ids must fit source_rows and target_rows where those are
  /// given.
  std::vector<forced_pair> forced_pairs{};
};

namespace detail {

template <class T>
inline constexpr bool is_string_like_v = std::is_convertible_v<const T&, std::string_view>;

template <class T, class = void>
inline constexpr bool has_size_v = false;
template <class T>
inline constexpr bool has_size_v<T, std::void_t<decltype(std::size(std::declval<const T&>()))>> = true;

/// Calls f(token, id) for every entry of a vocabulary. Accepted shapes:
/// - a range of strings (std::vector<std::string>, ...): the id is the position;
/// - a range of (token, id) pairs: std::map / std::unordered_map<std::string, Int>,
///   std::vector<std::pair<std::string, Int>>, ...
template <class Vocabulary, class F>
void for_each_token(const Vocabulary& vocabulary, F&& f) {
  using entry = std::decay_t<decltype(*std::begin(vocabulary))>;
  if constexpr (is_string_like_v<entry>) {
    Index id = 0;
    for (const auto& token : vocabulary) f(std::string_view(token), id++);
  } else {
    static_assert(is_string_like_v<decltype(std::declval<entry>().first)> &&
                      std::is_integral_v<std::decay_t<decltype(std::declval<entry>().second)>>,
                  "clp::intersect_vocabularies: a vocabulary is a range of strings (id = position) "
                  "or of (string, integer id) pairs");
    for (const auto& [token, id] : vocabulary) f(std::string_view(token), static_cast<Index>(id));
  }
}

/// A string -> id hash table with open addressing: one allocation for a whole vocabulary
/// (std::unordered_map allocates a node per token, which dominated intersecting 250k-token
/// vocabularies). The keys are views; their characters must outlive the table.
class string_index {
 public:
  explicit string_index(std::size_t expected = 0) {
    std::size_t capacity = 16;
    while (capacity < expected + expected / 2 + 1) capacity *= 2;
    slots_.resize(capacity);
  }

  /// Inserts (key, id) unless the key is there; returns the id stored for the key and
  /// whether it was inserted.
  std::pair<Index*, bool> emplace(std::string_view key, Index id) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const std::size_t hash = std::hash<std::string_view>()(key);
    for (std::size_t at = hash & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      slot& s = slots_[at];
      if (s.id < 0) {
        s = {hash, key, id};
        ++size_;
        return {&s.id, true};
      }
      if (s.hash == hash && s.key == key) return {&s.id, false};
    }
  }

  /// The id stored for `key`, or nullptr.
  const Index* find(std::string_view key) const {
    const std::size_t hash = std::hash<std::string_view>()(key);
    for (std::size_t at = hash & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      const slot& s = slots_[at];
      if (s.id < 0) return nullptr;
      if (s.hash == hash && s.key == key) return &s.id;
    }
  }

 private:
  struct slot {
    std::size_t hash = 0;
    std::string_view key;
    Index id = -1;  // -1: empty (stored ids are never negative)
  };
  void grow() {
    std::vector<slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const slot& s : old)
      if (s.id >= 0) emplace(s.key, s.id);
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
};

/// One vocabulary's (token, id) entries in the caller's order and its token -> id index; the
/// strings are views of the caller's.
struct checked_vocabulary {
  std::vector<std::pair<std::string_view, Index>> entries;
  string_index id_of;
};

/// The entries of one vocabulary, rejecting an empty vocabulary, negative, too large and
/// duplicate ids, and a token listed twice.
template <class Vocabulary>
checked_vocabulary checked_entries(const Vocabulary& vocabulary, const char* which, Index rows) {
  checked_vocabulary checked;
  auto& entries = checked.entries;
  if constexpr (has_size_v<Vocabulary>) entries.reserve(std::size(vocabulary));
  auto named = [&](std::string_view token, Index id, const std::string& problem) {
    // Messages are built only when they are needed.
    fail(std::string("clp::intersect_vocabularies: ") + which + " token '" + std::string(token) + "' (id " +
         std::to_string(id) + ") " + problem);
  };
  for_each_token(vocabulary, [&](std::string_view token, Index id) {
    if (id < 0) named(token, id, "has a negative id");
    if (rows >= 0 && id >= rows)
      named(token, id, "is past the " + std::to_string(rows) + " rows of its embedding matrix");
    entries.emplace_back(token, id);
  });
  if (entries.empty()) fail(std::string("clp::intersect_vocabularies: the ") + which + " vocabulary is empty");

  // Two tokens with one id: the clash whose second token comes first in the caller's order is
  // reported. Ids are nearly always dense (0..n-1): one owner per id in a table; sparse ids
  // are sorted instead.
  const std::size_t none = entries.size();
  std::size_t clash = none, clash_first = none;
  Index max_id = 0;
  for (const auto& entry : entries) max_id = std::max(max_id, entry.second);
  if (static_cast<std::size_t>(max_id) < 4 * entries.size() + 1024) {
    std::vector<std::size_t> owner(static_cast<std::size_t>(max_id) + 1, none);
    for (std::size_t i = 0; i < entries.size() && clash == none; ++i) {
      std::size_t& o = owner[static_cast<std::size_t>(entries[i].second)];
      if (o != none) clash = i, clash_first = o;
      o = i;
    }
  } else {
    std::vector<std::pair<Index, std::size_t>> by_id(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) by_id[i] = {entries[i].second, i};
    std::sort(by_id.begin(), by_id.end());
    for (std::size_t i = 1; i < by_id.size(); ++i)
      if (by_id[i].first == by_id[i - 1].first && by_id[i].second < clash) {
        clash = by_id[i].second;
        std::size_t k = i - 1;
        while (k > 0 && by_id[k - 1].first == by_id[i].first) --k;
        clash_first = by_id[k].second;
      }
  }
  if (clash != none)
    fail(std::string("clp::intersect_vocabularies: ") + which + " tokens '" + std::string(entries[clash_first].first) +
         "' and '" + std::string(entries[clash].first) + "' share id " + std::to_string(entries[clash].second));

  checked.id_of = string_index(entries.size());
  for (const auto& [token, id] : entries)
    if (!checked.id_of.emplace(token, id).second) named(token, id, "is listed twice");
  return checked;
}

}  // namespace detail

namespace detail {

/// Puts options.forced_pairs into `pairs` (target, source, reason; not yet sorted), replacing
/// the pair of the same target id, and raises max_target_id to cover them.
template <class Pair>
void apply_forced_pairs(const intersect_options& options, Index& max_target_id, std::vector<Pair>& pairs) {
  if (options.forced_pairs.empty()) return;
  const auto refuse = [](const std::string& problem) {
    throw invalid_argument({"clp::intersect_vocabularies", "", "", "forced_pairs", -1, -1}, problem);
  };
  std::vector<forced_pair> forced = options.forced_pairs;
  std::sort(forced.begin(), forced.end(),
            [](const forced_pair& a, const forced_pair& b) { return a.target_id < b.target_id; });
  for (std::size_t i = 0; i < forced.size(); ++i) {
    const forced_pair& f = forced[i];
    const std::string which =
        "pair (target " + std::to_string(f.target_id) + ", source " + std::to_string(f.source_id) + ")";
    if (f.target_id < 0 || (options.target_rows >= 0 && f.target_id >= options.target_rows))
      refuse(which + ": target id is outside the " + std::to_string(std::max<Index>(options.target_rows, 0)) +
             " target rows");
    if (f.source_id < 0 || (options.source_rows >= 0 && f.source_id >= options.source_rows))
      refuse(which + ": source id is outside the " + std::to_string(std::max<Index>(options.source_rows, 0)) +
             " source rows");
    if (i > 0 && forced[i - 1].target_id == f.target_id)
      refuse("target id " + std::to_string(f.target_id) + " is forced twice");
  }
  const auto is_forced = [&forced](Index target) {
    return std::binary_search(forced.begin(), forced.end(), forced_pair{target, 0},
                              [](const forced_pair& a, const forced_pair& b) { return a.target_id < b.target_id; });
  };
  pairs.erase(std::remove_if(pairs.begin(), pairs.end(), [&](const Pair& p) { return is_forced(p.target); }),
              pairs.end());
  for (const forced_pair& f : forced) {
    pairs.push_back({f.target_id, f.source_id, match_reason::forced});
    max_target_id = std::max(max_target_id, f.target_id);
  }
}

}  // namespace detail

/// Intersects two vocabularies: which target tokens take the row of which source token.
///
/// The source row of a target token t:
/// - token_match::exact without a normaliser (the paper): the source token spelled like t.
/// - with a key (token_match::bytes: the bytes a token stands for in its vocabulary's
///   spelling; a normaliser: its mapping, of the bytes under token_match::bytes):
///   1. the source token spelled like t, if it has t's key (an exact string match wins over
///      every other token with the same key);
///   2. else the lowest-id source token with t's key;
///   3. else the source token spelled like t, if any: a string both hold keeps its match even
///      when no source token has its key, so matching by bytes never matches fewer target
///      tokens than matching by string.
///   A string both vocabularies hold but that stands for different bytes in each takes, by
///   rule 2, the source token with its bytes: Llama 3's byte-level "¡" is the byte 0xA1 and
///   takes Llama 2's "<0xA1>", not Llama 2's "¡" (the character U+00A1, bytes C2 A1). This is
///   what makes a vocabulary respelled in another family's spelling match itself, id for id.
/// Every target token takes at most one source row; several target tokens may share one.
///
/// @param[in] source   source vocabulary (the large model's): a range of strings indexed by
///                     id, or a range of (string, id) pairs such as std::map or
///                     std::unordered_map<std::string, int>
/// @param[in] target   target vocabulary (the helper model's), same accepted shapes
/// @param[in] options  embedding row counts to check ids against, the match (exact or by
///                     bytes, with each vocabulary's spelling), an optional normaliser, and
///                     whether an empty overlap is a result
/// @return the overlapping (target id, source id) pairs sorted by target id, whether each was
///         an exact string match, the counts of exact and byte matches, the missing target ids
///         and the vocabulary sizes
/// @throws clp::error for an empty vocabulary, a negative id, an id past its matrix, two
///         tokens sharing an id, a token listed twice, or an empty overlap (unless
///         options.allow_empty_overlap); the message names the token and id
template <class SourceVocabulary, class TargetVocabulary>
vocabulary_overlap intersect_vocabularies(const SourceVocabulary& source, const TargetVocabulary& target,
                                          const intersect_options& options = {}) {
  vocabulary_overlap result;
  const detail::checked_vocabulary source_checked = detail::checked_entries(source, "source", options.source_rows);
  const auto target_entries = detail::checked_entries(target, "target", options.target_rows).entries;
  const auto& source_entries = source_checked.entries;
  result.source_vocab_size = static_cast<Index>(source_entries.size());
  result.target_vocab_size = static_cast<Index>(target_entries.size());

  const bool by_bytes = options.match == token_match::bytes;
  const bool keyed = by_bytes || static_cast<bool>(options.normalize);
  std::string scratch;
  auto append_key = [&](std::string_view token, token_spelling spelling, std::string& out) {
    if (!options.normalize) {
      append_token_bytes(token, spelling, out);
      return;
    }
    if (by_bytes) {
      scratch.clear();
      append_token_bytes(token, spelling, scratch);
      token = scratch;
    }
    out += options.normalize(token);
  };

  // The source keys live in one buffer, each a view of it: no allocation per token (beyond
  // the normaliser's own). Tokens with one key are one entry, the lowest id.
  std::string key_buffer;
  detail::string_index source_by_key;
  if (keyed) {
    std::vector<std::size_t> key_end;
    key_end.reserve(source_entries.size());
    for (const auto& entry : source_entries) {
      append_key(entry.first, options.source_spelling, key_buffer);
      key_end.push_back(key_buffer.size());
    }
    source_by_key = detail::string_index(source_entries.size());
    std::size_t begin = 0;
    for (std::size_t i = 0; i < source_entries.size(); ++i) {
      const std::string_view key(key_buffer.data() + begin, key_end[i] - begin);
      begin = key_end[i];
      auto [id, inserted] = source_by_key.emplace(key, source_entries[i].second);
      if (!inserted) *id = std::min(*id, source_entries[i].second);
    }
  }
  // A string read by one spelling has one key in both vocabularies unless their spellings
  // differ (only then can an exact string match stand for different bytes).
  const bool one_key_per_string = !by_bytes || options.source_spelling == options.target_spelling;

  struct pair {
    Index target, source;
    match_reason reason;
  };
  std::vector<pair> pairs;
  Index max_target_id = -1;
  std::string key, source_key;
  for (const auto& [token, target_id] : target_entries) {
    max_target_id = std::max(max_target_id, target_id);
    const Index* const same = source_checked.id_of.find(token);
    const bool shared = same != nullptr;
    result.shared_strings += shared;
    if (!keyed) {
      if (shared) pairs.push_back({target_id, *same, match_reason::exact});
      continue;
    }
    key.clear();
    append_key(token, options.target_spelling, key);
    if (shared) {
      bool same_key = one_key_per_string;
      if (!same_key) {
        source_key.clear();
        append_key(token, options.source_spelling, source_key);
        same_key = source_key == key;
      }
      if (same_key) {
        pairs.push_back({target_id, *same, match_reason::exact});
        continue;
      }
    }
    if (const Index* const hit = source_by_key.find(key))
      pairs.push_back({target_id, *hit, match_reason::bytes});
    else if (shared)
      pairs.push_back({target_id, *same, match_reason::exact});
  }
  detail::apply_forced_pairs(options, max_target_id, pairs);
  if (pairs.empty() && !options.allow_empty_overlap)
    detail::fail(std::string("clp::intersect_vocabularies: the vocabularies share no token") +
                 (by_bytes ? ", by string or by bytes" : "") + " (" + std::to_string(result.source_vocab_size) +
                 " source, " + std::to_string(result.target_vocab_size) + " target tokens)");

  std::sort(pairs.begin(), pairs.end(), [](const pair& a, const pair& b) { return a.target < b.target; });
  result.target_ids.reserve(pairs.size());
  result.source_ids.reserve(pairs.size());
  result.matched_by.reserve(pairs.size());
  for (const pair& p : pairs) {
    result.target_ids.push_back(p.target);
    result.source_ids.push_back(p.source);
    result.matched_by.push_back(p.reason);
    result.exact_matches += p.reason == match_reason::exact;
    result.byte_matches += p.reason == match_reason::bytes;
    result.forced_matches += p.reason == match_reason::forced;
  }

  const Index rows = options.target_rows >= 0 ? options.target_rows : max_target_id + 1;
  result.missing_ids.reserve(static_cast<std::size_t>(rows) - pairs.size());
  std::vector<bool> named(static_cast<std::size_t>(rows), false);
  for (const auto& entry : target_entries) named[static_cast<std::size_t>(entry.second)] = true;
  auto next_overlap = result.target_ids.begin();
  for (Index id = 0; id < rows; ++id) {
    if (next_overlap != result.target_ids.end() && *next_overlap == id) {
      ++next_overlap;
    } else {
      result.missing_ids.push_back(id);
      if (!named[static_cast<std::size_t>(id)]) result.unnamed_ids.push_back(id);
    }
  }
  return result;
}

}  // namespace clp
