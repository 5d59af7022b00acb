// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What calls over the same helper and overlap can share, kept between them: omp's Gram matrix of
/// the overlap's normalised helper rows (|overlap|^2 floats), and a least-squares map's moments
/// over the overlap (per list of sources). Hand the same cache to the calls that should share,
/// `synthesis_options::cache` and `evaluation_options::cache`: clp-transfer evaluate's held-out
/// splits and its pass over the missing rows compute each once. An entry is used only by a call
/// whose helper (the same memory, type and shape), overlap (the same ids) and sources match the
/// ones it was made for; any other call makes its own and keeps it in their place. Results never
/// depend on the cache: what it holds is what the call would compute, bit for bit. One call at a
/// time: calls that run at once need caches of their own.
///     const auto cache = std::make_shared<clp::overlap_cache>();
///     options.cache = cache;   // in each call's options

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/synthesis/overlap_moments.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace clp {

class overlap_cache {
 public:
  overlap_cache() = default;
  overlap_cache(const overlap_cache&) = delete;
  overlap_cache& operator=(const overlap_cache&) = delete;

  /// Lets go of what it holds.
  void clear() {
    gram_ = {};
    moments_.clear();
  }

  /// The overlap's Gram matrix (|overlap| x |overlap|, row-major), made by `make` into the
  /// storage it is given when the cache holds none for this helper and overlap.
  const float* gram(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                    const std::function<void(detail::scratch_buffer<float>&)>& make) {
    if (!(gram_.made && gram_.key.matches(helper, overlap))) {
      gram_.made = false;
      make(gram_.storage);
      gram_.key = key_of(helper, overlap);
      gram_.made = true;
    }
    return gram_.storage.data();
  }

  /// A least-squares map's moments over the overlap for `pairs`' sources, made by `make` when the
  /// cache holds none for this helper, overlap and sources. Moments held for more sources serve
  /// fewer: a transfer's of the embedding and its untied head serve a check of the embedding
  /// alone (the Gram matrix and the sources' sums are copied, not summed again).
  const detail::overlap_moments& moments(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                         const std::vector<detail::source_output>& pairs,
                                         const std::function<detail::overlap_moments()>& make) {
    for (moments_entry& entry : moments_)
      if (entry.key.matches(helper, overlap) && detail::same_sources(entry.sources, pairs)) return entry.moments;
    for (moments_entry& entry : moments_)
      if (entry.key.matches(helper, overlap)) {
        std::optional<detail::overlap_moments> part = subset(entry, pairs);
        if (!part) continue;
        moments_.push_back({entry.key, pairs, std::move(*part)});
        return moments_.back().moments;
      }
    moments_.push_back({key_of(helper, overlap), pairs, make()});
    return moments_.back().moments;
  }

 private:
  struct entry_key {
    matrix_view<const void> helper;
    std::vector<Index> target_ids, source_ids;
    bool matches(const matrix_view<const void>& h, const vocabulary_overlap& o) const {
      return detail::same_view(helper, h) && target_ids == o.target_ids && source_ids == o.source_ids;
    }
  };
  static entry_key key_of(const matrix_view<const void>& helper, const vocabulary_overlap& overlap) {
    return {helper, overlap.target_ids, overlap.source_ids};
  }
  struct gram_entry {
    entry_key key;
    bool made = false;
    detail::scratch_buffer<float> storage;
  };
  struct moments_entry {
    entry_key key;
    std::vector<detail::source_output> sources;
    detail::overlap_moments moments;
  };
  /// The moments of `pairs`' sources taken from `entry`, when it holds every one of them.
  static std::optional<detail::overlap_moments> subset(const moments_entry& entry,
                                                       const std::vector<detail::source_output>& pairs) {
    detail::overlap_moments part;
    for (const detail::source_output& pair : pairs) {
      std::size_t at = 0;
      while (at < entry.sources.size() && !detail::same_view(entry.sources[at].source, pair.source)) ++at;
      if (at == entry.sources.size()) return std::nullopt;
      part.cross.push_back(entry.moments.cross[at]);
      part.sum_squares.push_back(entry.moments.sum_squares[at]);
      part.column_sums.push_back(entry.moments.column_sums[at]);
    }
    part.gram = entry.moments.gram;
    return part;
  }

  gram_entry gram_;
  std::deque<moments_entry> moments_;  // a deque: what moments() returned stays where it is
};

}  // namespace clp
