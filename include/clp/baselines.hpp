// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The paper's baselines, ready made: "transfer without a helper model" (the overlapping rows
/// copied, the rest drawn at random) and a fresh random start, both drawing from a normal with
/// the source embeddings' per-column mean and standard deviation (<clp/random_init.hpp>), and
/// the copy of the overlapping rows (eq. 2) on its own. The arguments come in the order of every
/// entry point: source first, output last (before the seed).

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/baselines/overlap_copy.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/random_init.hpp>
#include <clp/vocabulary.hpp>

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace clp {

/// output(target_ids[i]) = source(source_ids[i]) for every overlap pair (eq. 2): an exact copy
/// when the element types match, else through float32. Other rows are not touched.
///
/// @param[in]  source   #source_rows by d: the source model's embeddings (or output head)
/// @param[in]  overlap  from intersect_vocabularies; may be empty (nothing is copied)
/// @param[out] output   #target_rows by d
/// @throws clp::invalid_argument on different widths (argument "output"), ids outside a matrix
///         ("overlap source", "overlap target", with the row) or unequal id lists ("overlap")
template <class Source, class Output>
void copy_overlap_rows(const Source& source, const vocabulary_overlap& overlap, Output&& output) {
  const matrix_view<const void> in = make_view(source);
  const matrix_view<void> out = make_view(output);
  detail::check_copy(in, overlap, out, "clp::copy_overlap_rows");
  detail::copy_rows(in, overlap, out);
}

/// The paper's "transfer without a helper model": overlapping rows copied from `source`, every
/// missing row drawn from N(mean_c, stddev_c), the per-column statistics of all of `source`'s
/// rows. Draws depend only on (seed, target row, column), as in random_rows.
///
/// @param[in]  source   #source_rows by d, at least one row
/// @param[in]  overlap  from intersect_vocabularies(source vocabulary, target vocabulary, ...)
/// @param[out] output   #target_rows by d; rows in neither the overlap nor the missing list
///                      are not touched
/// @param[in]  seed     any value; the same seed gives the same rows
/// @throws clp::invalid_argument as copy_overlap_rows, for a missing id outside 'output'
///         ("missing target") or a source without rows ("source")
template <class Source, class Output>
void overlap_random(const Source& source, const vocabulary_overlap& overlap, Output&& output, std::uint64_t seed) {
  const matrix_view<const void> in = make_view(source);
  const matrix_view<void> out = make_view(output);
  constexpr const char* context = "clp::overlap_random";
  detail::check_copy(in, overlap, out, context);
  detail::check_ids(overlap.missing_ids, out.rows(), "missing target", "output", context);
  const column_statistics stats = detail::source_statistics(in, context);
  detail::copy_rows(in, overlap, out);
  detail::draw_rows(stats, out, overlap.missing_ids, seed);
}

/// A fresh start: every row of `output` drawn from N(mean_c, stddev_c), the per-column
/// statistics of `source`. Draws depend only on (seed, row, column), as in random_rows.
///
/// @param[in]  source  #source_rows by d, at least one row
/// @param[out] output  #target_rows by d
/// @param[in]  seed    any value; the same seed gives the same rows
/// @throws clp::invalid_argument on different widths (argument "output") or a source without
///         rows ("source")
template <class Source, class Output>
void random_init(const Source& source, Output&& output, std::uint64_t seed) {
  const matrix_view<const void> in = make_view(source);
  const matrix_view<void> out = make_view(output);
  constexpr const char* context = "clp::random_init";
  detail::check_columns(out.cols(), in.cols(), "output", "source", context);
  std::vector<Index> rows(static_cast<std::size_t>(out.rows()));
  std::iota(rows.begin(), rows.end(), Index(0));
  detail::draw_rows(detail::source_statistics(in, context), out, rows, seed);
}

}  // namespace clp
