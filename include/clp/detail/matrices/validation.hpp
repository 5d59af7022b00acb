// SPDX-License-Identifier: MIT
#pragma once

// Internal: the input checks shared by the kernels, each a typed clp::error whose facts name
// the public function (context), the argument and the row at fault.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/finite.hpp>
#include <clp/matrix_view.hpp>

#include <string>
#include <vector>

namespace clp::detail {

/// Throws clp::non_finite_input naming `name`, the row and the column of the first (in `rows`
/// order) row of v with a NaN or infinite element. The rows are screened in parallel.
inline void require_finite_rows(const matrix_view<const void>& v, const std::string& name,
                                const std::vector<Index>& rows, int threads, const char* context) {
  if (const auto at = find_non_finite(v, rows, threads))
    throw non_finite_input(error_facts::in(context).with_argument(name).at(at->row, at->column));
}

/// Throws clp::invalid_argument unless `id`, an entry of the id list `ids_name`, is a row of
/// `matrix` (which has `rows` rows).
inline void check_id(Index id, Index rows, const char* ids_name, const std::string& matrix, const char* context) {
  if (id < 0)
    throw invalid_argument(error_facts::in(context).with_argument(ids_name),
                           "id " + std::to_string(id) + " is negative: not a row of '" + matrix + "'");
  if (id >= rows)
    throw invalid_argument(error_facts::in(context).with_argument(ids_name).at_row(id),
                           "is outside the " + std::to_string(rows) + " rows of '" + matrix + "'");
}

/// Throws unless every id is a row of `matrix` and the ids ascend strictly.
inline void check_sorted_ids(const std::vector<Index>& ids, Index rows, const char* ids_name, const std::string& matrix,
                             const char* context) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    check_id(ids[i], rows, ids_name, matrix, context);
    if (i > 0 && ids[i] <= ids[i - 1])
      throw invalid_argument(error_facts::in(context).with_argument(ids_name),
                             "ids are not strictly ascending at position " + std::to_string(i));
  }
}

/// Throws unless every id is a row of `matrix`.
inline void check_ids(const std::vector<Index>& ids, Index rows, const char* ids_name, const std::string& matrix,
                      const char* context) {
  for (Index id : ids) check_id(id, rows, ids_name, matrix, context);
}

/// Throws clp::invalid_argument naming `name` unless it has `expected` rows (a matrix that
/// must have one row per token of the other, named `other`).
inline void check_rows(Index rows, Index expected, const std::string& name, const std::string& other,
                       const char* context) {
  if (rows != expected)
    throw invalid_argument(error_facts::in(context).with_argument(name),
                           "has " + std::to_string(rows) + " rows but '" + other + "' has " + std::to_string(expected));
}

/// Throws clp::invalid_argument naming `name` unless it has `expected` columns, those of `other`.
inline void check_columns(Index cols, Index expected, const std::string& name, const std::string& other,
                          const char* context) {
  if (cols != expected)
    throw invalid_argument(
        error_facts::in(context).with_argument(name),
        "has " + std::to_string(cols) + " columns but '" + other + "' has " + std::to_string(expected));
}

}  // namespace clp::detail
