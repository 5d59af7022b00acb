// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The paper's baselines, ready made: "transfer without a helper model" (the overlapping rows
/// copied, the rest drawn at random) and a fresh random start, both drawing from a normal with
/// the source embeddings' per-column mean and standard deviation (<clp/random_init.hpp>), and
/// the copy of the overlapping rows (eq. 2) on its own. The arguments come in the order of every
/// entry point: source first, output last (before the seed).

#include <clp/detail/erased_view.hpp>
#include <clp/detail/validation.hpp>
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

namespace detail {

inline void check_copy(const input_view& source, const vocabulary_overlap& overlap, const output_view& output,
                       const char* context) {
  if (overlap.source_ids.size() != overlap.target_ids.size())
    fail(std::string(context) + ": overlap has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
         std::to_string(overlap.source_ids.size()) + " source ids");
  if (output.cols != source.cols)
    fail(std::string(context) + ": 'output' has " + std::to_string(output.cols) + " columns but 'source' has " +
         std::to_string(source.cols));
  check_ids(overlap.source_ids, source.rows, "overlap source", "source", context);
  check_ids(overlap.target_ids, output.rows, "overlap target", "output", context);
}

inline void copy_rows(const input_view& source, const vocabulary_overlap& overlap, const output_view& output) {
  std::vector<float> row(static_cast<std::size_t>(source.cols));
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i)
    copy_row(source, overlap.source_ids[i], output, overlap.target_ids[i], row.data());
}

}  // namespace detail

/// output(target_ids[i]) = source(source_ids[i]) for every overlap pair (eq. 2): an exact copy
/// when the element types match, else through float32. Other rows are not touched.
///
/// @param[in]  source   #source_rows by d: the source model's embeddings (or output head)
/// @param[in]  overlap  from intersect_vocabularies; may be empty (nothing is copied)
/// @param[out] output   #target_rows by d
/// @throws clp::error on different widths, ids outside a matrix, or unequal id lists
template <class Source, class Output>
void copy_overlap_rows(const Source& source, const vocabulary_overlap& overlap, Output&& output) {
  const auto in = detail::input_view::from(make_view(source));
  const auto out = detail::output_view::from(make_view(output));
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
/// @throws clp::error as copy_overlap_rows, or for a missing id outside 'output'
template <class Source, class Output>
void overlap_random(const Source& source, const vocabulary_overlap& overlap, Output&& output, std::uint64_t seed) {
  const auto in = detail::input_view::from(make_view(source));
  const auto out = detail::output_view::from(make_view(output));
  constexpr const char* context = "clp::overlap_random";
  detail::check_copy(in, overlap, out, context);
  detail::check_ids(overlap.missing_ids, out.rows, "missing target", "output", context);
  const column_statistics stats = column_statistics_of(source);
  detail::copy_rows(in, overlap, out);
  random_rows(stats, make_view(output), overlap.missing_ids, seed);
}

/// A fresh start: every row of `output` drawn from N(mean_c, stddev_c), the per-column
/// statistics of `source`. Draws depend only on (seed, row, column), as in random_rows.
///
/// @param[in]  source  #source_rows by d, at least one row
/// @param[out] output  #target_rows by d
/// @param[in]  seed    any value; the same seed gives the same rows
/// @throws clp::error on different widths or an empty source
template <class Source, class Output>
void random_init(const Source& source, Output&& output, std::uint64_t seed) {
  const auto out_view = make_view(output);
  const auto out = detail::output_view::from(out_view);
  const auto in = detail::input_view::from(make_view(source));
  if (out.cols != in.cols)
    detail::fail("clp::random_init: 'output' has " + std::to_string(out.cols) + " columns but 'source' has " +
                 std::to_string(in.cols));
  std::vector<Index> rows(static_cast<std::size_t>(out.rows));
  std::iota(rows.begin(), rows.end(), Index(0));
  random_rows(column_statistics_of(source), out_view, rows, seed);
}

}  // namespace clp
