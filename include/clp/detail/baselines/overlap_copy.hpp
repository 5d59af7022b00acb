// SPDX-License-Identifier: MIT
#pragma once

// Internal, baselines: the copy of the overlapping rows (eq. 2) on its own, its refusals, and
// the source statistics the random baselines draw from.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/matrices/validation.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/random_init.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <string>
#include <vector>

namespace clp::detail {

/// The refusals of a copy of the overlapping rows from `source` to `output`.
inline void check_copy(const matrix_view<const void>& source, const vocabulary_overlap& overlap,
                       const matrix_view<void>& output, const char* context) {
  if (overlap.source_ids.size() != overlap.target_ids.size())
    throw invalid_argument(error_facts::in(context).with_argument("overlap"),
                           "has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
                               std::to_string(overlap.source_ids.size()) + " source ids");
  check_columns(output.cols(), source.cols(), "output", "source", context);
  check_ids(overlap.source_ids, source.rows(), "overlap source", "source", context);
  check_ids(overlap.target_ids, output.rows(), "overlap target", "output", context);
}

inline void copy_rows(const matrix_view<const void>& source, const vocabulary_overlap& overlap,
                      const matrix_view<void>& output) {
  std::vector<float> row(static_cast<std::size_t>(source.cols()));
  for (std::size_t i = 0; i < overlap.target_ids.size(); ++i)
    copy_row(source, overlap.source_ids[i], output, overlap.target_ids[i], row.data());
}

/// The per-column statistics of `source`, refusing a source without rows under the caller's
/// name.
inline column_statistics source_statistics(const matrix_view<const void>& source, const char* context) {
  if (source.rows() < 1) throw invalid_argument(error_facts::in(context).with_argument("source"), "has no rows");
  return column_statistics_of(source);
}

}  // namespace clp::detail
