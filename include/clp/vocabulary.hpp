// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Vocabulary intersection: which target tokens also exist in the source vocabulary (eq. 2
/// copies their embeddings) and which must be synthesised (eq. 3), with the paper's Table 1
/// statistics.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace clp {

/// The result of intersect_vocabularies.
struct vocabulary_overlap {
  /// Overlapping tokens as parallel arrays, sorted by target id: target token
  /// target_ids[i] has the same string as source token source_ids[i].
  std::vector<Index> target_ids;
  std::vector<Index> source_ids;
  /// Every target row in [0, target_rows) that is not in target_ids, ascending. This includes
  /// rows no token names (padding rows of an embedding matrix larger than its vocabulary).
  std::vector<Index> missing_ids;
  /// Tokens in each vocabulary (the paper's |Vs| and |Vt|).
  Index source_vocab_size = 0;
  Index target_vocab_size = 0;

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
  /// Optional: tokens are compared after this mapping (for example stripping a word-start
  /// marker that two tokenizers spell differently). Empty: exact string match, as in the paper.
  /// When several source tokens map to one string, the lowest source id wins.
  std::function<std::string(std::string_view)> normalize;
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

/// The (token, id) entries of one vocabulary, rejecting an empty vocabulary, negative, too
/// large and duplicate ids, and a token listed twice.
template <class Vocabulary>
std::vector<std::pair<std::string_view, Index>> checked_entries(const Vocabulary& vocabulary, const char* which,
                                                                Index rows) {
  std::vector<std::pair<std::string_view, Index>> entries;
  std::unordered_map<Index, std::string_view> by_id;
  std::unordered_map<std::string_view, Index> by_token;
  if constexpr (has_size_v<Vocabulary>) {
    entries.reserve(std::size(vocabulary));
    by_id.reserve(std::size(vocabulary));
    by_token.reserve(std::size(vocabulary));
  }
  for_each_token(vocabulary, [&](std::string_view token, Index id) {
    // Messages are built only when they are needed: this runs for every token.
    auto named = [&](const std::string& problem) {
      fail(std::string("clp::intersect_vocabularies: ") + which + " token '" + std::string(token) + "' (id " +
           std::to_string(id) + ") " + problem);
    };
    if (id < 0) named("has a negative id");
    if (rows >= 0 && id >= rows)
      named("is past the " + std::to_string(rows) + " rows of its embedding matrix");
    if (auto [seen, fresh] = by_id.emplace(id, token); !fresh)
      fail(std::string("clp::intersect_vocabularies: ") + which + " tokens '" + std::string(seen->second) + "' and '" +
           std::string(token) + "' share id " + std::to_string(id));
    if (!by_token.emplace(token, id).second) named("is listed twice");
    entries.emplace_back(token, id);
  });
  if (entries.empty()) fail(std::string("clp::intersect_vocabularies: the ") + which + " vocabulary is empty");
  return entries;
}

}  // namespace detail

/// Intersects two vocabularies by token string.
///
/// @param[in] source   source vocabulary (the large model's): a range of strings indexed by
///                     id, or a range of (string, id) pairs such as std::map or
///                     std::unordered_map<std::string, int>
/// @param[in] target   target vocabulary (the helper model's), same accepted shapes
/// @param[in] options  embedding row counts to check ids against, optional normaliser
/// @return the overlapping (target id, source id) pairs sorted by target id, the missing
///         target ids and the vocabulary sizes
/// @throws clp::error for an empty vocabulary, a negative id, an id past its matrix, two
///         tokens sharing an id, a token listed twice, or an empty overlap; the message names
///         the token and id
template <class SourceVocabulary, class TargetVocabulary>
vocabulary_overlap intersect_vocabularies(const SourceVocabulary& source, const TargetVocabulary& target,
                                          const intersect_options& options = {}) {
  vocabulary_overlap result;
  const auto source_entries = detail::checked_entries(source, "source", options.source_rows);
  const auto target_entries = detail::checked_entries(target, "target", options.target_rows);
  result.source_vocab_size = static_cast<Index>(source_entries.size());
  result.target_vocab_size = static_cast<Index>(target_entries.size());
  // Source tokens that normalise to one string are one entry, the lowest id; every target
  // token is looked up on its own, so two target tokens may share a source row. Without a
  // normaliser the keys are views of the caller's strings (no copies).
  std::vector<std::pair<Index, Index>> pairs;
  Index max_target_id = -1;
  auto match = [&](auto&& key) {
    std::unordered_map<std::decay_t<decltype(key(std::string_view()))>, Index> source_index;
    source_index.reserve(source_entries.size());
    for (const auto& [token, id] : source_entries) {
      auto [slot, inserted] = source_index.emplace(key(token), id);
      if (!inserted) slot->second = std::min(slot->second, id);
    }
    for (const auto& [token, target_id] : target_entries) {
      max_target_id = std::max(max_target_id, target_id);
      if (auto hit = source_index.find(key(token)); hit != source_index.end()) pairs.emplace_back(target_id, hit->second);
    }
  };
  if (options.normalize)
    match([&](std::string_view token) { return options.normalize(token); });
  else
    match([](std::string_view token) { return token; });
  if (pairs.empty())
    detail::fail("clp::intersect_vocabularies: the vocabularies share no token (" +
                 std::to_string(result.source_vocab_size) + " source, " + std::to_string(result.target_vocab_size) +
                 " target tokens)");
  std::sort(pairs.begin(), pairs.end());
  result.target_ids.reserve(pairs.size());
  result.source_ids.reserve(pairs.size());
  for (const auto& [t, s] : pairs) {
    result.target_ids.push_back(t);
    result.source_ids.push_back(s);
  }
  const Index rows = options.target_rows >= 0 ? options.target_rows : max_target_id + 1;
  result.missing_ids.reserve(static_cast<std::size_t>(rows) - pairs.size());
  auto next_overlap = result.target_ids.begin();
  for (Index id = 0; id < rows; ++id) {
    if (next_overlap != result.target_ids.end() && *next_overlap == id)
      ++next_overlap;
    else
      result.missing_ids.push_back(id);
  }
  return result;
}

}  // namespace clp
