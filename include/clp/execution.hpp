// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// How the blocked kernels (synthesis, the k-NN overlap) run: how many threads, and how much
/// working memory they may take. One type, one default, for every kernel.

#include <clp/element_type.hpp>

#include <cstddef>

namespace clp {

/// The working-memory budget every kernel gets unless told otherwise: 256 MiB. For synthesis it
/// is about the smallest that keeps the re-gathering of the overlap panels cheap at 7B-model
/// shapes (docs/performance.md, "The tile budget"); for the k-NN overlap a larger
/// budget only means taller query blocks, so fewer passes over the whole vocabulary, at the
/// same results.
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

/// How a blocked kernel cuts its work: `blocks` blocks of at most `block_rows` query rows (the
/// rows of one task), each multiplied by fixed panels of `panel_rows` rows of the matrix it is
/// compared with. The panels are fixed and every block height is a multiple of the same
/// quantum, which is why no tiling changes a result; the tiling only decides the memory a
/// kernel takes and how often it reads the panels. For capacity planning and for benchmarks
/// that time a kernel's products alone (see clp::knn_tiling).
struct tiling {
  Index block_rows = 0;
  Index blocks = 0;
  Index panel_rows = 0;
};

}  // namespace clp
