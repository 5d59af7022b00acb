// SPDX-License-Identifier: MIT
#pragma once

// Internal, evaluate: which overlapping tokens a split of clp::evaluate holds out, and the one
// partition of the overlap into the held-out tokens and the kept ones that every later step
// reads. A token's fate depends only on the seed and its target id.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/splitmix64.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace clp::detail {

/// The overlap positions held out: the round(share * n) (at least 1, at most n - 1) with the
/// smallest splitmix64(splitmix64(seed) ^ target id), ascending.
inline std::vector<Index> held_out_positions(const vocabulary_overlap& overlap, double share, std::uint64_t seed,
                                             const char* context) {
  const Index n = overlap.size();
  if (!(share > 0 && share < 1))
    throw invalid_argument(error_facts::in(context).with_argument("held_out_share"),
                           "must be between 0 and 1 (exclusive), got " + std::to_string(share));
  if (n < 2)
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has " + std::to_string(n) +
                               " token(s): at least 2 are needed to hold one out and synthesise it from the rest");
  const Index count = std::clamp<Index>(Index(std::llround(share * double(n))), 1, n - 1);
  std::vector<std::pair<std::uint64_t, Index>> keyed;
  keyed.reserve(std::size_t(n));
  const std::uint64_t salt = splitmix64(seed);
  for (Index j = 0; j < n; ++j)
    keyed.emplace_back(splitmix64(salt ^ std::uint64_t(overlap.target_ids[std::size_t(j)])), j);
  std::partial_sort(keyed.begin(), keyed.begin() + count, keyed.end());
  std::vector<Index> held;
  for (Index i = 0; i < count; ++i) held.push_back(keyed[std::size_t(i)].second);
  std::sort(held.begin(), held.end());
  return held;
}

/// The overlap cut in two by a split's held-out positions. No row is copied: ids only.
struct held_out_split {
  std::vector<Index> held_out;  ///< overlap positions held out, ascending
  std::vector<Index> kept_at;   ///< the other positions, ascending: kept.target_ids[i] is at kept_at[i]
  /// What the held-out rows are synthesised from: the kept pairs as its overlap, the held-out
  /// target ids as its missing ids.
  vocabulary_overlap kept;
  /// The held-out pairs alone: their source ids are the rows the synthesised ones are scored
  /// against.
  vocabulary_overlap held;
};

/// The split of `overlap` that holds out the positions `held_out` (ascending).
inline held_out_split split_overlap(const vocabulary_overlap& overlap, std::vector<Index> held_out) {
  held_out_split split;
  for (vocabulary_overlap* part : {&split.kept, &split.held}) {
    part->source_vocab_size = overlap.source_vocab_size;
    part->target_vocab_size = overlap.target_vocab_size;
  }
  std::size_t next = 0;
  for (Index j = 0; j < overlap.size(); ++j) {
    const Index target = overlap.target_ids[std::size_t(j)], source = overlap.source_ids[std::size_t(j)];
    if (next < held_out.size() && held_out[next] == j) {
      ++next;
      split.kept.missing_ids.push_back(target);
      split.held.target_ids.push_back(target);
      split.held.source_ids.push_back(source);
    } else {
      split.kept_at.push_back(j);
      split.kept.target_ids.push_back(target);
      split.kept.source_ids.push_back(source);
    }
  }
  split.held_out = std::move(held_out);
  return split;
}

}  // namespace clp::detail
