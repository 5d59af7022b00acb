// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// How the blocked kernels (synthesis, the k-NN overlap) run: how many threads, and how much
/// working memory they may take. One type, one default, for every kernel.

#include <cstddef>

namespace clp {

/// The working-memory budget every kernel gets unless told otherwise: 256 MiB. For synthesis it
/// is the smallest budget measured to keep re-gathering the overlap panels below the noise at
/// the BLOOM-7B1 shape (README, "Speed and memory"); for the k-NN overlap a larger budget only
/// means taller query blocks, so fewer passes over the whole vocabulary, at the same results.
/// One default for both keeps a program's memory use predictable whichever kernel it calls.
inline constexpr std::size_t default_tile_bytes = std::size_t(256) << 20;

/// Threads and tile budget; synthesis_options and knn_options extend it. Neither field changes a
/// result: every kernel's output is bit-identical for any thread count and any budget.
struct execution_options {
  /// Worker threads; 0 means all hardware threads.
  int threads = 0;
  /// Working memory for all threads together, in bytes (see each kernel for how it is spent).
  std::size_t tile_bytes = default_tile_bytes;
};

}  // namespace clp
