// SPDX-License-Identifier: MIT
#pragma once

// Internal, vocabulary: the steps of clp::intersect_vocabularies on checked entries: each
// token's key (its bytes in its spelling, or the normaliser's mapping), the source index by
// key, the match of every target token by the rules of intersect_vocabularies, the forced
// pairs, and the overlap's arrays and counts. Included by <clp/vocabulary.hpp> after
// intersect_options, which it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/vocabulary/string_index.hpp>
#include <clp/detail/vocabulary/vocabulary_entries.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/token_bytes.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clp::detail {

/// One overlapping pair before sorting: target row `target` takes source row `source`.
struct matched_pair {
  Index target, source;
  match_reason reason;
};

/// The key a token is matched by when matching by bytes or through a normaliser: the bytes it
/// stands for in its spelling, or the normaliser's mapping (of those bytes, by bytes).
class token_keys {
 public:
  explicit token_keys(const intersect_options& options) : options_(options) {}

  bool keyed() const { return by_bytes() || static_cast<bool>(options_.normalize); }
  bool by_bytes() const { return options_.match == token_match::bytes; }

  void append(std::string_view token, token_spelling spelling, std::string& out) {
    if (!options_.normalize) {
      append_token_bytes(token, spelling, out);
      return;
    }
    if (by_bytes()) {
      bytes_.clear();
      append_token_bytes(token, spelling, bytes_);
      token = bytes_;
    }
    out += options_.normalize(token);
  }

 private:
  const intersect_options& options_;
  std::string bytes_;
};

/// The source vocabulary by key: tokens with one key are one entry, the lowest id. The keys
/// live in one buffer, each a view of it: no allocation per token (beyond the normaliser's).
struct source_key_index {
  std::string buffer;
  string_index id_of;
};

inline void index_source_keys(const checked_vocabulary& source, token_spelling spelling, token_keys& keys,
                              source_key_index& index) {
  const auto& entries = source.entries;
  std::vector<std::size_t> key_end;
  key_end.reserve(entries.size());
  for (const auto& entry : entries) {
    keys.append(entry.first, spelling, index.buffer);
    key_end.push_back(index.buffer.size());
  }
  index.id_of = string_index(entries.size());
  std::size_t begin = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string_view key(index.buffer.data() + begin, key_end[i] - begin);
    begin = key_end[i];
    auto [id, inserted] = index.id_of.emplace(key, entries[i].second);
    if (!inserted) *id = std::min(*id, entries[i].second);
  }
}

/// The source row of every target token that has one (the rules of intersect_vocabularies),
/// unsorted; counts the target tokens whose string is also a source token.
inline std::vector<matched_pair> match_tokens(const checked_vocabulary& source, const vocabulary_entries& target,
                                              const intersect_options& options, Index& shared_strings) {
  token_keys keys(options);
  source_key_index by_key;
  if (keys.keyed()) index_source_keys(source, options.source_spelling, keys, by_key);
  // A string read by one spelling has one key in both vocabularies unless their spellings
  // differ (only then can an exact string match stand for different bytes).
  const bool one_key_per_string = !keys.by_bytes() || options.source_spelling == options.target_spelling;
  std::vector<matched_pair> pairs;
  std::string key, source_key;
  for (const auto& [token, target_id] : target) {
    const Index* const same = source.id_of.find(token);
    shared_strings += same != nullptr;
    if (!keys.keyed()) {
      if (same) pairs.push_back({target_id, *same, match_reason::exact});
      continue;
    }
    key.clear();
    keys.append(token, options.target_spelling, key);
    if (same) {
      if (!one_key_per_string) {
        source_key.clear();
        keys.append(token, options.source_spelling, source_key);
      }
      if (one_key_per_string || source_key == key) {
        pairs.push_back({target_id, *same, match_reason::exact});
        continue;
      }
    }
    if (const Index* const hit = by_key.id_of.find(key))
      pairs.push_back({target_id, *hit, match_reason::bytes});
    else if (same)
      pairs.push_back({target_id, *same, match_reason::exact});
  }
  return pairs;
}

/// options.forced_pairs, sorted by target id and checked.
inline std::vector<forced_pair> checked_forced_pairs(const intersect_options& options) {
  const auto refuse = [](const std::string& problem) {
    throw invalid_argument(error_facts::in("clp::intersect_vocabularies").with_argument("forced_pairs"), problem);
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
  return forced;
}

/// Puts options.forced_pairs into `pairs`, replacing the pair of the same target id.
inline void apply_forced_pairs(const intersect_options& options, std::vector<matched_pair>& pairs) {
  if (options.forced_pairs.empty()) return;
  const std::vector<forced_pair> forced = checked_forced_pairs(options);
  const auto is_forced = [&forced](Index target) {
    return std::binary_search(forced.begin(), forced.end(), forced_pair{target, 0},
                              [](const forced_pair& a, const forced_pair& b) { return a.target_id < b.target_id; });
  };
  pairs.erase(std::remove_if(pairs.begin(), pairs.end(), [&](const matched_pair& p) { return is_forced(p.target); }),
              pairs.end());
  for (const forced_pair& f : forced) pairs.push_back({f.target_id, f.source_id, match_reason::forced});
}

/// The pairs, sorted by target id, into the overlap's parallel arrays and counts.
inline void record_pairs(std::vector<matched_pair> pairs, vocabulary_overlap& overlap) {
  std::sort(pairs.begin(), pairs.end(),
            [](const matched_pair& a, const matched_pair& b) { return a.target < b.target; });
  overlap.target_ids.reserve(pairs.size());
  overlap.source_ids.reserve(pairs.size());
  overlap.matched_by.reserve(pairs.size());
  for (const matched_pair& p : pairs) {
    overlap.target_ids.push_back(p.target);
    overlap.source_ids.push_back(p.source);
    overlap.matched_by.push_back(p.reason);
    overlap.exact_matches += p.reason == match_reason::exact;
    overlap.byte_matches += p.reason == match_reason::bytes;
    overlap.forced_matches += p.reason == match_reason::forced;
  }
}

/// The missing rows of [0, rows) (those not in overlap.target_ids), and those of them no
/// target token names.
inline void record_missing_rows(const vocabulary_entries& target, Index rows, vocabulary_overlap& overlap) {
  overlap.missing_ids.reserve(static_cast<std::size_t>(rows) - overlap.target_ids.size());
  std::vector<bool> named(static_cast<std::size_t>(rows), false);
  for (const auto& entry : target) named[static_cast<std::size_t>(entry.second)] = true;
  auto next_overlap = overlap.target_ids.begin();
  for (Index id = 0; id < rows; ++id) {
    if (next_overlap != overlap.target_ids.end() && *next_overlap == id) {
      ++next_overlap;
    } else {
      overlap.missing_ids.push_back(id);
      if (!named[static_cast<std::size_t>(id)]) overlap.unnamed_ids.push_back(id);
    }
  }
}

/// intersect_vocabularies on checked entries: match, force, refuse an empty overlap unless
/// allowed, record the pairs and the missing rows.
inline vocabulary_overlap intersect_entries(const checked_vocabulary& source, const vocabulary_entries& target_entries,
                                            const intersect_options& options) {
  vocabulary_overlap result;
  result.source_vocab_size = static_cast<Index>(source.entries.size());
  result.target_vocab_size = static_cast<Index>(target_entries.size());
  std::vector<matched_pair> pairs = match_tokens(source, target_entries, options, result.shared_strings);
  apply_forced_pairs(options, pairs);
  if (pairs.empty() && !options.allow_empty_overlap)
    throw invalid_argument(error_facts::in("clp::intersect_vocabularies"),
                           std::string("the vocabularies share no token") +
                               (options.match == token_match::bytes ? ", by string or by bytes" : "") + " (" +
                               std::to_string(result.source_vocab_size) + " source, " +
                               std::to_string(result.target_vocab_size) + " target tokens)");
  Index max_target_id = -1;
  for (const auto& entry : target_entries) max_target_id = std::max(max_target_id, entry.second);
  for (const forced_pair& f : options.forced_pairs) max_target_id = std::max(max_target_id, f.target_id);
  record_pairs(std::move(pairs), result);
  record_missing_rows(target_entries, options.target_rows >= 0 ? options.target_rows : max_target_id + 1, result);
  return result;
}

}  // namespace clp::detail
