// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// What a synthesis is told beyond its inputs: threads and tile budget, the rows to write, the
/// progress and streaming callbacks, and a caller's similarity product. Every synthesis entry
/// point takes it (<clp/synthesize.hpp>).

#include <clp/element_type.hpp>
#include <clp/execution.hpp>
#include <clp/similarity_product.hpp>

#include <functional>
#include <memory>

namespace clp {

class overlap_cache;  // <clp/overlap_cache.hpp>

/// Threads and tile budget (execution_options), plus the rows to write and a progress callback.
/// How synthesis spends the tile budget: a policy that scales cosines (paper_weights) first
/// takes 4 * d_helper * d_source bytes per source for P from it. When the overlap panels,
/// 4 * |overlap| * (d_helper + d_source) bytes (d_helper alone for a policy that returns
/// neighbours or one that scales cosines), fit in half of the rest they are gathered once and
/// shared; the rest is split between the threads, each needing about
/// 4 * m * (|overlap| + d_helper + d_source) bytes for a block of m rows (plus one panel of
/// panel_rows rows when the panels are not shared); m is a multiple of 48, 48 at least, and at
/// most 480 when the panels are shared. The default budget is default_tile_bytes
/// (<clp/execution.hpp>).
struct synthesis_options : execution_options {
  /// Only target rows in [first_row, last_row) are written (copied or synthesised); -1 means
  /// up to the last row. Lets callers split one transfer across processes or machines.
  Index first_row = 0;
  Index last_row = -1;
  /// Optional: called as blocks finish with (rows synthesised so far, rows to synthesise).
  /// Calls come from the worker threads, one at a time.
  std::function<void(Index done, Index total)> progress;
  /// Optional, for a caller that streams the output out as it is made instead of holding it
  /// all (clp-transfer writes it to disk and hands the memory back): called with a target row
  /// `end` once every row in [first_row, end) that the call writes is final, with `end`
  /// increasing from call to call and last_row (resolved) in the last call. The synthesis
  /// neither reads nor writes those rows again. Calls come from the worker threads, one at a
  /// time, and hold up the worker that makes them: hand the rows to a thread of your own.
  std::function<void(Index end)> rows_finished;
  /// Optional, the other edge of the same stretch, for a caller that moves the memory of
  /// finished rows to rows not yet made: called with a target row `end`, increasing, before the
  /// synthesis writes any row at or above the previous call's `end` (the first call: before any
  /// row), last_row (resolved) in the last. Each call comes when a block is about to write (its
  /// product and weights done), from the worker threads, one at a time, and holds up every
  /// worker about to write until it returns.
  std::function<void(Index end)> rows_started;
  /// Optional: the similarity product of a weighting that returns neighbour lists (top-k,
  /// softmax, and the top-k rows of a least_squares_map's neighbour norms), possibly of lower
  /// precision with a stated bound; its candidates are rescored in float32
  /// (<clp/similarity_product.hpp>). Null: the library's float32 product. Other weightings
  /// ignore it; so does a pass of several weightings (clp::synthesize_each) unless every one of
  /// them that reads cosines reads only neighbour lists: its one float32 product serves them all.
  std::shared_ptr<const similarity_product> product;
  /// Optional: what calls over the same helper and overlap share (omp's Gram matrix, the maps'
  /// moments), kept between the calls given the same cache (<clp/overlap_cache.hpp>). Null:
  /// each call computes its own. Results are the same either way, bit for bit.
  std::shared_ptr<overlap_cache> cache;
};

}  // namespace clp
