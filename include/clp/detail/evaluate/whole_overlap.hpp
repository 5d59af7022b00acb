// SPDX-License-Identifier: MIT
#pragma once

// Internal, evaluate: what the splits of an evaluation share, prepared once over the whole
// overlap before any split runs.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/synthesis/linear_map.hpp>
#include <clp/detail/synthesis/overlap_panels.hpp>
#include <clp/detail/synthesis/overlap_scan.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/detail/synthesis/synthesis_plan.hpp>
#include <clp/detail/weighting/visit_weighting.hpp>
#include <clp/matrix_view.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <optional>
#include <type_traits>
#include <vector>

namespace clp::detail {

/// What every split of an evaluation shares, prepared once over the whole overlap: for Batch-OMP
/// the overlap's Gram matrix (when a pursuit's budget holds it), for least-squares maps the
/// overlap's moments; its own, or the cache's. Each split reads its kept overlap's part of them
/// (overlap_givens), so a split costs neither a Gram matrix nor a pass over the kept rows of its
/// own.
struct whole_overlap {
  const float* gram = nullptr;
  const overlap_moments* moments = nullptr;
  scratch_buffer<float> own_gram;  // without a cache
  std::optional<overlap_moments> own_moments;
};

template <class Policy>
void prepare_whole_overlap(whole_overlap& whole, const std::vector<Policy>& policies,
                           const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                           const vocabulary_overlap& overlap, overlap_cache* cache, int threads) {
  bool gram = false, maps = false;
  const double gram_bytes = double(overlap.size()) * double(overlap.size()) * sizeof(float);
  for (const Policy& policy : policies)
    visit_weighting(policy, [&](const auto& p) {
      constexpr weigher weigh = stages_of<std::decay_t<decltype(p)>>.weigh;
      if constexpr (weigh == weigher::pursuit) gram = gram || gram_bytes <= double(p.max_gram_bytes);
      if constexpr (weigh == weigher::query_norms) maps = true;
    });
  const auto make_gram = [&](scratch_buffer<float>& storage) {
    compute_gram(storage, nullptr, helper, overlap, scan_overlap({}, helper, overlap, threads).inverse_norm, threads);
  };
  const auto make_moments = [&] { return sum_overlap_moments(pairs, helper, overlap, threads); };
  if (gram && cache != nullptr) {
    whole.gram = cache->gram(helper, overlap, make_gram);
  } else if (gram) {
    make_gram(whole.own_gram);
    whole.gram = whole.own_gram.data();
  }
  if (maps && cache != nullptr) {
    whole.moments = &cache->moments(helper, overlap, pairs, make_moments);
  } else if (maps) {
    whole.own_moments = make_moments();
    whole.moments = &*whole.own_moments;
  }
}

}  // namespace clp::detail
