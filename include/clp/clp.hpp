// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Everything of the core: views, vocabulary intersection, weighting policies, synthesis,
/// the one-call transfer, the random baselines and the neighbourhood diagnostics.
/// The xtensor adapter is not included; include <clp/adapters/xtensor.hpp> to use it.

#include <clp/adapters/eigen.hpp>
#include <clp/baselines.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
#include <clp/knn_overlap.hpp>
#include <clp/matrix_view.hpp>
#include <clp/random_init.hpp>
#include <clp/synthesize.hpp>
#include <clp/token_bytes.hpp>
#include <clp/transfer.hpp>
#include <clp/version.hpp>
#include <clp/vocabulary.hpp>
#include <clp/weights.hpp>
