// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the engine's table of stages (what it does for each kind of weighting
// input, <clp/policy.hpp>) and the plan of a synthesis: which overlap panels are gathered once
// and shared, and how tall the blocks of missing rows are, for a tile budget.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/element_type.hpp>
#include <clp/policy.hpp>

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace clp::detail {

/// How a block's weights are formed from its cosines.
enum class weigher {
  dense_rows,       ///< the policy, row by row, on the row of cosines: dense weights
  neighbour_lists,  ///< the policy, row by row, on the row of cosines: a neighbour list
  pursuit,          ///< the engine's pursuit over the helper rows (pursuit.hpp): a neighbour list
  query_norms,      ///< no weights: each row's scale is its helper row's norm (linear_map.hpp)
};

/// How a block's output rows come from its weights.
enum class combiner {
  dense,       ///< the weights times the overlapping source rows, panel by panel
  projected,   ///< the normalised queries times a per-source d_helper x d_source matrix prepared
               ///< once (P = sum_j n_j a_j^T, or a least-squares map W), then the row scale
  neighbours,  ///< sum_k w_k a_{neighbour k}, reading only the chosen source rows
};

/// What the engine does for one kind of weighting input: one row of the table below. A new
/// kind of input adds a row (and, for a new stage, an enumerator above and its room).
struct stages {
  weigher weigh;
  combiner combine;
  bool cosines = true;  ///< the block's cosines with the overlap are formed
};

constexpr stages stages_for(weighting_input input) {
  switch (input) {
    case weighting_input::cosine_row:
      return {weigher::dense_rows, combiner::dense};
    case weighting_input::scaled_cosines:
      return {weigher::dense_rows, combiner::projected};
    case weighting_input::nearest_cosines:
      return {weigher::neighbour_lists, combiner::neighbours};
    case weighting_input::linear_map:
      return {weigher::query_norms, combiner::projected, false};
    case weighting_input::helper_rows:
      break;
  }
  return {weigher::pursuit, combiner::neighbours};
}

/// The stages of policy P.
template <class Policy>
inline constexpr stages stages_of = stages_for(Policy::input);

template <class P, class = void>
struct sets_norm_neighbours : std::false_type {};
template <class P>
struct sets_norm_neighbours<P, std::void_t<decltype(std::declval<const P&>().norm_neighbours)>> : std::true_type {};

/// A linear-map policy's neighbour-norm k (least_squares_map::norm_neighbours); 0 for a map
/// without that option.
template <class Policy>
Index norm_neighbours_of(const Policy& policy) {
  if constexpr (sets_norm_neighbours<Policy>::value)
    return std::max<Index>(0, Index(policy.norm_neighbours));
  else
    return 0;
}

/// Whether a linear-map policy's rows take the weighted mean of their neighbours' norms
/// (least_squares_map::neighbour_norm::mean) rather than the norm of their top-k row.
template <class Policy>
bool norm_mean_of(const Policy& policy) {
  if constexpr (sets_norm_neighbours<Policy>::value)
    return policy.norm_rule == Policy::neighbour_norm::mean;
  else
    return false;
}

struct synthesis_plan {
  Index d_helper = 0, d_source = 0;  ///< d_source: the widest source
  Index n_overlap = 0, n_missing = 0;
  Index k_max = 0;            ///< neighbours per row (a neighbour-list combine), else 0
  bool pursuit = false;       ///< the pursuit weighs the blocks
  bool gram = false;          ///< pursuit: Batch-OMP with the overlap's Gram matrix (the policy's max_gram_bytes)
  bool cosines = true;        ///< the blocks form cosines (and so read the overlap's normalised helper panels)
  bool linear_map = false;    ///< a least-squares map: W is fitted before the plan, not prepared by it
  Index norm_neighbours = 0;  ///< a map whose rows take their top-k neighbours' norms: that k, else 0
  bool norm_mean = false;     ///< those norms are the neighbours' norms averaged (else their top-k row's)
  /// The overlap's helper panels are gathered once and shared by every block (else each block
  /// gathers them panel by panel into its own panel of panel_width floats per row).
  bool resident = false;
  /// A dense combine's source panels likewise. One synthesis decides both together; a pass of
  /// several jobs shares the helper panels and leaves each job its own decision here.
  bool sources_resident = false;
  Index panel_width = 0;
  block_plan blocks;
};

/// The blocks for a tile budget (see clp::synthesis_options for how it is spent). The overlap
/// panels (normalised helper rows, and for a dense combine the source rows, as float32) are
/// shared when they fit in half the budget; both ways feed the products the same panels, so
/// they give the same bits.
template <class Policy>
synthesis_plan plan_synthesis(const Policy& policy, const std::vector<source_output>& pairs, Index d_helper,
                              Index n_overlap, Index n_missing, int threads, std::size_t tile_bytes) {
  constexpr stages stage = stages_of<Policy>;
  synthesis_plan plan;
  plan.d_helper = d_helper;
  plan.n_overlap = n_overlap;
  plan.n_missing = n_missing;
  plan.d_source = widest_source(pairs);
  if constexpr (stage.combine == combiner::neighbours) plan.k_max = policy.max_neighbours(n_overlap);
  plan.pursuit = stage.weigh == weigher::pursuit;
  plan.linear_map = stage.weigh == weigher::query_norms;
  if constexpr (stage.weigh == weigher::query_norms) {
    plan.norm_neighbours = std::min(norm_neighbours_of(policy), n_overlap);
    plan.norm_mean = plan.norm_neighbours > 0 && norm_mean_of(policy);
    plan.k_max = plan.norm_neighbours;
  }
  // Neighbour norms need top-k's cosines (and so its panels) beside the map.
  plan.cosines = stage.cosines || plan.norm_neighbours > 0;
  if constexpr (stage.weigh == weigher::pursuit)
    plan.gram = double(n_overlap) * double(n_overlap) * sizeof(float) <= double(policy.max_gram_bytes);
  Index resident_width = d_helper;
  Index projection_floats = 0;
  for (const source_output& pair : pairs) {
    if constexpr (stage.combine == combiner::dense) resident_width += pair.source.cols();
    if constexpr (stage.combine == combiner::projected) projection_floats += d_helper * pair.source.cols();
  }
  const Index budget = std::max<Index>(0, static_cast<Index>(tile_bytes / sizeof(float)) - projection_floats);
  // Without cosines the blocks read no overlap panel: nothing is gathered for them.
  plan.resident = plan.cosines && n_overlap * resident_width <= budget / 2;
  plan.sources_resident = plan.resident;
  plan.panel_width = plan.resident || !plan.cosines ? 0 : std::max(d_helper, plan.d_source);
  const Index shared = plan.resident ? n_overlap * resident_width : 0;
  // Batch-OMP's correlations and basis of the row being pursued (pursuit.hpp), per worker.
  const Index pursued = plan.gram ? n_overlap * (1 + plan.k_max) : 0;
  const Index per_thread = (budget - shared) / threads - panel_rows * plan.panel_width - pursued;
  const Index floats_per_row = (plan.cosines ? n_overlap : 0) + d_helper + plan.d_source + 2 * plan.k_max +
                               (plan.pursuit ? (plan.gram ? 0 : d_helper) + 1 : 0);
  Index max_rows = per_thread / floats_per_row;
  // With the panels shared nothing is re-gathered per block, and taller blocks only add
  // first-touch page faults and cache misses on the cosine block: cap them.
  if (plan.resident) max_rows = std::min(max_rows, max_shared_block);
  plan.blocks = balance_blocks(n_missing, max_rows, threads);
  return plan;
}

}  // namespace clp::detail
