// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Everything of the core: views and element types, vocabulary intersection, weighting
/// policies, synthesis (the transfer), its evaluation, the random baselines, the neighbourhood
/// diagnostics, and the tools they share (the parallel loop, the NaN screen, the top-k
/// selection, SplitMix64). The xtensor and libtorch adapters are not included: include
/// <clp/adapters/xtensor.hpp> or <clp/adapters/torch.hpp> to use one.

#include <clp/adapters/eigen.hpp>
#include <clp/baselines.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/evaluate.hpp>
#include <clp/execution.hpp>
#include <clp/finite.hpp>
#include <clp/knn_overlap.hpp>
#include <clp/matrix_view.hpp>
#include <clp/nearest_neighbours.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/parallel.hpp>
#include <clp/policy.hpp>
#include <clp/random_init.hpp>
#include <clp/similarity_product.hpp>
#include <clp/splitmix64.hpp>
#include <clp/synthesis_options.hpp>
#include <clp/synthesis_report.hpp>
#include <clp/synthesize.hpp>
#include <clp/token_bytes.hpp>
#include <clp/top_k.hpp>
#include <clp/undertrained.hpp>
#include <clp/version.hpp>
#include <clp/vocabulary.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>
