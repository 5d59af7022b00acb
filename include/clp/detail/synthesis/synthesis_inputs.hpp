// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: what a synthesis reads and writes (its (source, output) pairs and the
// target rows in range) and the checks of both. Every problem a caller can cause is reported
// here, before any output is written.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace clp::detail {

/// One (source, output) pair of the synthesis: the embedding, then an untied head or the
/// matrix_pairs, if any. The names are the arguments' in messages.
struct source_output {
  matrix_view<const void> source;
  matrix_view<void> output;
  std::string source_name = "source";
  std::string output_name = "output";
  /// No output: the rows are made and measured for the report, and not stored (a job of a pass
  /// that only reports, clp::synthesis_job).
  bool report_only = false;
};

/// Whether two views are the same matrix: same memory, element type, shape and layout.
inline bool same_view(const matrix_view<const void>& a, const matrix_view<const void>& b) {
  return a.data() == b.data() && a.type() == b.type() && a.rows() == b.rows() && a.cols() == b.cols() &&
         a.outer_stride() == b.outer_stride() && a.order() == b.order();
}

/// Whether two lists of pairs read the same sources.
inline bool same_sources(const std::vector<source_output>& a, const std::vector<source_output>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (!same_view(a[p].source, b[p].source)) return false;
  return true;
}

/// The most columns a source has: what a row buffer that serves every pair holds.
inline Index widest_source(const std::vector<source_output>& pairs) {
  Index widest = 0;
  for (const source_output& pair : pairs) widest = std::max(widest, pair.source.cols());
  return widest;
}

/// The overlap's id lists fit the helper (and so the output) and each source.
inline void validate_shapes(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                            const vocabulary_overlap& overlap, const char* context) {
  if (overlap.size() == 0) throw invalid_argument(error_facts::in(context).with_argument("overlap"), "is empty");
  if (overlap.source_ids.size() != overlap.target_ids.size())
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
                               std::to_string(overlap.source_ids.size()) + " source ids");
  if (helper.cols() < 1) throw invalid_argument(error_facts::in(context).with_argument("helper"), "has no columns");
  check_sorted_ids(overlap.target_ids, helper.rows(), "overlap target", "helper", context);
  check_sorted_ids(overlap.missing_ids, helper.rows(), "missing target", "helper", context);
  check_sorted_ids(overlap.unnamed_ids, helper.rows(), "unnamed target", "helper", context);
  if (!std::includes(overlap.missing_ids.begin(), overlap.missing_ids.end(), overlap.unnamed_ids.begin(),
                     overlap.unnamed_ids.end()))
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has unnamed ids that are not missing ids");
  for (const source_output& pair : pairs) {
    if (!pair.report_only) {
      check_rows(pair.output.rows(), helper.rows(), pair.output_name, "helper", context);
      check_columns(pair.output.cols(), pair.source.cols(), pair.output_name, pair.source_name, context);
    }
    check_ids(overlap.source_ids, pair.source.rows(), "overlap source", pair.source_name, context);
  }
}

/// The target rows to write: the overlap entries [copy_begin, copy_end) to copy and the
/// missing ids to synthesise, those inside [first_row, last_row).
struct rows_to_write {
  Index first = 0, last = 0;  ///< the target row range [first, last)
  Index copy_begin = 0, copy_end = 0;
  std::vector<Index> missing;
  std::vector<bool> padding;  ///< parallel to missing: no token names the row
};

/// @param last_row  -1: up to the last target row
inline rows_to_write select_rows(const vocabulary_overlap& overlap, Index first_row, Index last_row, Index target_rows,
                                 const char* context) {
  const Index first = first_row;
  const Index last = last_row < 0 ? target_rows : last_row;
  if (first < 0 || first > last || last > target_rows)
    throw invalid_argument(error_facts::in(context).with_argument("options"),
                           "row range [" + std::to_string(first) + ", " + std::to_string(last) + ") is outside the " +
                               std::to_string(target_rows) + " target rows");
  const auto position = [](const std::vector<Index>& ids, Index row) {
    return Index(std::lower_bound(ids.begin(), ids.end(), row) - ids.begin());
  };
  rows_to_write rows;
  rows.first = first;
  rows.last = last;
  rows.copy_begin = position(overlap.target_ids, first);
  rows.copy_end = position(overlap.target_ids, last);
  rows.missing.assign(overlap.missing_ids.begin() + position(overlap.missing_ids, first),
                      overlap.missing_ids.begin() + position(overlap.missing_ids, last));
  rows.padding.resize(rows.missing.size());
  auto unnamed = overlap.unnamed_ids.begin();
  for (std::size_t i = 0; i < rows.missing.size(); ++i) {
    unnamed = std::lower_bound(unnamed, overlap.unnamed_ids.end(), rows.missing[i]);
    rows.padding[i] = unnamed != overlap.unnamed_ids.end() && *unnamed == rows.missing[i];
  }
  return rows;
}

/// The copies (eq. 2) of the target rows in [from, to): the overlap entries [begin, end) among
/// `rows`' to copy.
inline std::pair<Index, Index> copies_between(const vocabulary_overlap& overlap, const rows_to_write& rows, Index from,
                                              Index to) {
  const auto position = [&](Index row) {
    return Index(std::lower_bound(overlap.target_ids.begin(), overlap.target_ids.end(), row) -
                 overlap.target_ids.begin());
  };
  const Index begin = std::max(rows.copy_begin, position(from));
  return {begin, std::max(begin, std::min(rows.copy_end, position(to)))};
}

/// eq. 2 for overlap entries [begin, end): each pair's source row copied to its output row.
/// @param scratch  widest_source(pairs) floats
inline void copy_overlap_rows(const std::vector<source_output>& pairs, const vocabulary_overlap& overlap,
                              std::pair<Index, Index> entries, float* scratch) {
  for (const source_output& pair : pairs)
    if (!pair.report_only)
      for (Index j = entries.first; j < entries.second; ++j)
        copy_row(pair.source, overlap.source_ids[j], pair.output, overlap.target_ids[j], scratch);
}

/// The NaN screen of every row the synthesis reads.
inline void screen_inputs(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                          const vocabulary_overlap& overlap, const std::vector<Index>& missing, int threads,
                          const char* context) {
  require_finite_rows(helper, "helper", overlap.target_ids, threads, context);
  require_finite_rows(helper, "helper", missing, threads, context);
  for (const source_output& pair : pairs)
    require_finite_rows(pair.source, pair.source_name, overlap.source_ids, threads, context);
}

}  // namespace clp::detail
