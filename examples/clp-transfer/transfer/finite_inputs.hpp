// Before the synthesis: a NaN or infinity anywhere in a matrix the program reads means a broken
// checkpoint, and is refused naming the file, even in a row no target token uses. Each row is
// screened once: the library screens the rows it reads (clp::synthesize_rows: every helper row, the
// source rows of the overlap; its errors name the file through synthesise.hpp's origins), the
// program the others, here.
#pragma once

#include <clp/vocabulary.hpp>

#include <algorithm>
#include <vector>

#include "library_names.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesis_choice.hpp"

namespace clp_transfer {

namespace detail {

/// The rows of [0, rows) not in `ids`, ascending.
inline std::vector<Index> rows_outside(Index rows, std::vector<Index> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<Index> outside;
  outside.reserve(static_cast<std::size_t>(std::max<Index>(0, rows - Index(ids.size()))));
  auto next = ids.begin();
  for (Index r = 0; r < rows; ++r) {
    while (next != ids.end() && *next < r) ++next;
    if (next == ids.end() || *next != r) outside.push_back(r);
  }
  return outside;
}

}  // namespace detail

/// Screens the rows of the inputs that the library call for `method` does not screen: for
/// CLP-Transfer the source rows outside the overlap, for the baselines (which screen nothing)
/// every matrix.
/// @param[in] source  the source's embedding and transferred tensors
/// @param[in] helper  the helper's embedding
inline void require_finite_elsewhere(const loaded_model& source, const embedding_matrix& helper,
                                     const vocabulary_overlap& overlap, transfer_method method, int threads) {
  if (method == transfer_method::clp) {
    const std::vector<Index> outside = detail::rows_outside(source.embedding.rows(), overlap.source_ids);
    require_finite(source.embedding, outside, threads);
    for (const transferred_tensor& t : source.transferred) require_finite(t.source, outside, threads);
    return;
  }
  require_finite(source.embedding, threads);
  require_finite(helper, threads);
  for (const transferred_tensor& t : source.transferred) require_finite(t.source, threads);
}

}  // namespace clp_transfer
