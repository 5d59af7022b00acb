// SPDX-License-Identifier: MIT
#pragma once

// Internal: one vocabulary as intersect_vocabularies reads it, whatever container the caller
// holds it in, and the checks of its entries: an empty vocabulary, negative and too large ids,
// two tokens with one id, one token listed twice. Each refusal is a clp::invalid_argument
// naming the vocabulary ("source" or "target", the parameter) and, where it has one, the row.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/vocabulary/string_index.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp::detail {

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

/// A vocabulary's (token, id) entries in the caller's order; the strings are views of the
/// caller's.
using vocabulary_entries = std::vector<std::pair<std::string_view, Index>>;

/// One vocabulary's entries and its token -> id index.
struct checked_vocabulary {
  vocabulary_entries entries;
  string_index id_of;
};

[[noreturn]] inline void refuse_vocabulary(const char* which, Index row, std::string problem) {
  throw invalid_argument(error_facts::in("clp::intersect_vocabularies").with_argument(which).at_row(row),
                         std::move(problem));
}

inline std::string quoted_token(std::string_view token) { return "'" + std::string(token) + "'"; }

/// The first two entries (in the caller's order of the second) that share an id, or none.
/// Ids are nearly always dense (0..n-1): one owner per id in a table; sparse ids are sorted.
inline std::pair<std::size_t, std::size_t> first_shared_id(const vocabulary_entries& entries) {
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
    return {clash_first, clash};
  }
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
  return {clash_first, clash};
}

/// The entries of one vocabulary, checked.
/// @param which  "source" or "target": the argument, for the refusals
/// @param rows   rows of its embedding matrix, -1: not checked
template <class Vocabulary>
checked_vocabulary checked_entries(const Vocabulary& vocabulary, const char* which, Index rows) {
  checked_vocabulary checked;
  auto& entries = checked.entries;
  if constexpr (has_size_v<Vocabulary>) entries.reserve(std::size(vocabulary));
  for_each_token(vocabulary, [&](std::string_view token, Index id) {
    // Messages are built only when they are needed.
    if (id < 0)
      refuse_vocabulary(which, -1, "token " + quoted_token(token) + " has a negative id, " + std::to_string(id));
    if (rows >= 0 && id >= rows)
      refuse_vocabulary(
          which, id,
          "(token " + quoted_token(token) + ") is past the " + std::to_string(rows) + " rows of its embedding matrix");
    entries.emplace_back(token, id);
  });
  if (entries.empty()) refuse_vocabulary(which, -1, "holds no token");
  const auto [first, second] = first_shared_id(entries);
  if (second != entries.size())
    refuse_vocabulary(
        which, entries[second].second,
        "belongs to two tokens, " + quoted_token(entries[first].first) + " and " + quoted_token(entries[second].first));
  checked.id_of = string_index(entries.size());
  for (const auto& [token, id] : entries)
    if (const auto [stored, inserted] = checked.id_of.emplace(token, id); !inserted)
      refuse_vocabulary(which, id,
                        "(token " + quoted_token(token) + ") repeats the token of row " + std::to_string(*stored));
  return checked;
}

}  // namespace clp::detail
