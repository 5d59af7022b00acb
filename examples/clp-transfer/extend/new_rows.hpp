// The rows of an extended model. Rows [0, source rows) are the source's, byte for byte (the
// padding rows among them until a new token takes one); each new token's row, in every tensor
// that follows the vocabulary (input embedding, untied head, per-token biases, --transfer-tensor;
// tied copies are written from the embedding), comes from one of:
// - the helper: an asked-for token the helper has gets the row `transfer` makes for that helper
//   token from the same pair and options. The engine runs on transfer's own overlap, with only
//   those helper rows to make, so the weights (and a least-squares map) are the same;
// - the source, copied: where transfer's overlap already pairs that helper token with a source row
//   (a role or an exact match) transfer copies that row, and so does extend;
// - the mean of the source rows of the pieces the source tokenizer splits the token's text into:
//   intermediates (which the helper need not have), listed tokens the helper lacks, and every
//   token without a helper. A text the source encodes to nothing takes the mean of all source rows.
// Source rows screened out as under-trained (--undertrained synthesise) support no new row: they
// leave the engine's overlap as they leave transfer's, and every mean, which then averages the
// token's other pieces (every source row not screened out, when no piece is left).
#pragma once

#include <clp/element_type.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/extension.hpp"
#include "io/embedding_matrix.hpp"
#include "library_names.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"

namespace clp_transfer {

/// Where a new token's rows come from (see the file's comment).
enum class row_origin { helper, source_copy, mean_of_pieces };

/// "helper", "source copy" or "mean of pieces".
inline const char* row_origin_name(row_origin origin) {
  switch (origin) {
    case row_origin::helper:
      return "helper";
    case row_origin::source_copy:
      return "source copy";
    case row_origin::mean_of_pieces:
      break;
  }
  return "mean of pieces";
}

/// One new token's rows.
struct new_row {
  Index id = 0;  ///< its id: its row in every output tensor
  row_origin origin = row_origin::mean_of_pieces;
  Index helper_id = -1;       ///< helper: the helper row the engine makes it from
  Index source_id = -1;       ///< source_copy: the source row copied
  std::vector<Index> pieces;  ///< mean_of_pieces: the source rows averaged (empty: every source row)
};

/// Every new token's rows and the shape they give the output.
struct new_rows_plan {
  std::vector<new_row> rows;  ///< in id order
  Index source_rows = 0;      ///< rows of the source's embedding
  Index output_rows = 0;      ///< rows of the output's: the source's, or past the last new id
  /// transfer's overlap with missing_ids the helper rows of the `helper` entries alone (empty
  /// without a helper).
  vocabulary_overlap synthesis_overlap;

  /// New ids below source_rows: padding rows of the source that new tokens now name.
  Index padding_rows_filled() const {
    return Index(std::count_if(rows.begin(), rows.end(), [&](const new_row& r) { return r.id < source_rows; }));
  }
  Index rows_grown() const { return output_rows - source_rows; }
  Index count(row_origin origin) const {
    return Index(std::count_if(rows.begin(), rows.end(), [&](const new_row& r) { return r.origin == origin; }));
  }
};

namespace detail {

/// The rows of `pieces` that `screened_out` (ascending) does not name; when that leaves none and
/// some are screened out, every source row below `source_rows` that is not (an empty list means
/// every source row, which only an unscreened source may average).
template <class Pieces>
std::vector<Index> unscreened_pieces(const Pieces& pieces, const std::vector<Index>& screened_out, Index source_rows) {
  std::vector<Index> kept;
  for (const auto piece : pieces)
    if (!std::binary_search(screened_out.begin(), screened_out.end(), Index(piece))) kept.push_back(Index(piece));
  if (!kept.empty() || screened_out.empty()) return kept;
  for (Index r = 0; r < source_rows; ++r)
    if (!std::binary_search(screened_out.begin(), screened_out.end(), r)) kept.push_back(r);
  return kept;
}

}  // namespace detail

/// Where each new token of `extension` takes its rows from.
/// @param[in] extension    the extension (its written tokens, in id order)
/// @param[in] source       the source's model before extension: it splits texts into pieces
/// @param[in] helper_ids   the helper's id of each token it has, by bytes; empty without a helper
/// @param[in] overlap      transfer's overlap of the pair (screened as transfer screens it); null
///                         without a helper
/// @param[in] source_rows  rows of the source's embedding
/// @param[in] screened_out source rows no mean may read, ascending (the under-trained ones)
template <class SourceTable>
new_rows_plan plan_new_rows(const extend::bpe_extension& extension, const SourceTable& source,
                            const std::unordered_map<std::string, Index>& helper_ids, const vocabulary_overlap* overlap,
                            Index source_rows, const std::vector<Index>& screened_out) {
  new_rows_plan plan;
  plan.source_rows = plan.output_rows = source_rows;
  std::vector<Index> missing;
  for (const extend::written_token& token : extension.written) {
    new_row row;
    row.id = token.id;
    plan.output_rows = std::max(plan.output_rows, row.id + 1);
    const auto helper = token.requested ? helper_ids.find(token.bytes) : helper_ids.end();
    if (overlap && helper != helper_ids.end()) {
      row.helper_id = helper->second;
      const auto at = std::lower_bound(overlap->target_ids.begin(), overlap->target_ids.end(), row.helper_id);
      if (at != overlap->target_ids.end() && *at == row.helper_id) {
        row.origin = row_origin::source_copy;
        row.source_id = overlap->source_ids[std::size_t(at - overlap->target_ids.begin())];
      } else {
        row.origin = row_origin::helper;
        missing.push_back(row.helper_id);
      }
    } else {
      row.pieces = detail::unscreened_pieces(source.encode(extension.table.token(token.id)), screened_out, source_rows);
    }
    plan.rows.push_back(std::move(row));
  }
  if (overlap) {
    plan.synthesis_overlap = *overlap;
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    plan.synthesis_overlap.missing_ids = std::move(missing);
    plan.synthesis_overlap.unnamed_ids.clear();
  }
  return plan;
}

namespace detail {

/// Bytes of one row of `m`.
inline std::size_t row_bytes(const embedding_matrix& m) {
  return std::size_t(m.cols()) * clp::element_size(m.view().type());
}

/// Row `row` of `from` into row `to_row` of `to` (same dtype and width).
inline void copy_row(const embedding_matrix& from, Index row, const embedding_matrix& to, Index to_row) {
  const std::size_t bytes = row_bytes(from);
  std::memcpy(static_cast<char*>(to.output_view().data()) + std::size_t(to_row) * bytes,
              static_cast<const char*>(from.bytes()) + std::size_t(row) * bytes, bytes);
}

/// Row `to_row` of `to` = the mean of rows `rows` of `from` (every row when empty), summed in
/// double and rounded once to the dtype.
inline void mean_row(const embedding_matrix& from, const std::vector<Index>& rows, const embedding_matrix& to,
                     Index to_row) {
  clp::visit_element_type(from.view().type(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto as_double = [](T x) {
      if constexpr (std::is_same_v<T, double>)
        return x;
      else
        return static_cast<double>(static_cast<float>(x));
    };
    const Index cols = from.cols();
    const auto* values = static_cast<const T*>(from.bytes());
    std::vector<double> sum(std::size_t(cols), 0.0);
    const Index count = rows.empty() ? from.rows() : Index(rows.size());
    for (Index i = 0; i < count; ++i) {
      const T* row = values + (rows.empty() ? i : rows[std::size_t(i)]) * cols;
      for (Index c = 0; c < cols; ++c) sum[std::size_t(c)] += as_double(row[c]);
    }
    T* out = static_cast<T*>(to.output_view().data()) + to_row * cols;
    for (Index c = 0; c < cols; ++c) {
      const double mean = sum[std::size_t(c)] / double(count);
      if constexpr (std::is_same_v<T, double>)
        out[c] = mean;
      else
        out[c] = T(static_cast<float>(mean));
    }
  });
}

}  // namespace detail

/// Writes the output matrices (the embedding and each transferred tensor, #plan.output_rows) in
/// row order, as far as they can be written, and says how far they are final, so that the write
/// phase takes them and their memory goes back as the engine goes (weights_output): each row is
/// the source's (a row below source_rows that no new token takes), a copy of a source row, the
/// mean of its pieces, or the engine's row for a helper token, copied from the helper-shaped
/// matrix the engine writes once the engine has finished it.
class extended_rows_writer {
 public:
  /// Screens the source rows the means read (throwing as require_finite does); writes nothing.
  /// @param[in]  source    the source's embedding and transferred tensors, #plan.source_rows each
  /// @param[out] out       allocate_outputs(source, plan.output_rows)
  /// @param[in]  finished  called with an increasing `end` once rows [0, end) of `out` are final
  ///                       (weights_output::rows_finished)
  extended_rows_writer(const loaded_model& source, const new_rows_plan& plan, synthesised_embeddings& out,
                       std::function<void(Index end)> finished, int threads)
      : plan_(plan),
        finished_(std::move(finished)),
        by_id_(std::size_t(plan.output_rows), nullptr),
        copied_(std::size_t(plan.output_rows), false) {
    from_.push_back(&source.embedding);
    to_.push_back(&out.embedding);
    for (std::size_t i = 0; i < source.transferred.size(); ++i) {
      from_.push_back(&source.transferred[i].source);
      to_.push_back(&out.transferred[i]);
    }
    std::vector<Index> read;
    for (const new_row& row : plan.rows) {
      by_id_[std::size_t(row.id)] = &row;
      if (row.origin == row_origin::helper) helper_order_.emplace_back(row.helper_id, row.id);
      read.insert(read.end(), row.pieces.begin(), row.pieces.end());
    }
    std::sort(helper_order_.begin(), helper_order_.end());
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (const embedding_matrix* m : from_) require_finite(*m, read, threads);
  }

  /// Writes rows from the last final one on up to the first helper row not copied yet (all of
  /// them once every helper row is), and tells `finished` when that moves the end.
  void advance() {
    const Index start = final_;
    for (; final_ < plan_.output_rows; ++final_) {
      const new_row* row = by_id_[std::size_t(final_)];
      if (row && row->origin == row_origin::helper && !copied_[std::size_t(final_)]) break;
      for (std::size_t m = 0; m < from_.size(); ++m) {
        if (!row)
          detail::copy_row(*from_[m], final_, *to_[m], final_);
        else if (row->origin == row_origin::source_copy)
          detail::copy_row(*from_[m], row->source_id, *to_[m], final_);
        else if (row->origin == row_origin::mean_of_pieces)
          detail::mean_row(*from_[m], row->pieces, *to_[m], final_);
      }
    }
    if (final_ > start) finished_(final_);
  }

  /// The synthesis's rows_finished (output_rows_watch::finished) over `scratch`, the engine's
  /// helper-shaped output: rows [0, end) of it are final. Copies the helper rows among them to
  /// their ids, hands their memory back, and advances.
  void helper_rows_finished(synthesised_embeddings& scratch, Index end) {
    std::vector<embedding_matrix*> made{&scratch.embedding};
    for (embedding_matrix& m : scratch.transferred) made.push_back(&m);
    for (; next_helper_ < helper_order_.size() && helper_order_[next_helper_].first < end; ++next_helper_) {
      const auto [helper_id, id] = helper_order_[next_helper_];
      for (std::size_t m = 0; m < made.size(); ++m) detail::copy_row(*made[m], helper_id, *to_[m], id);
      copied_[std::size_t(id)] = true;
    }
    for (embedding_matrix* m : made)
      if (end > released_)
        m->release_pages(std::size_t(released_) * detail::row_bytes(*m),
                         std::size_t(end - released_) * detail::row_bytes(*m));
    released_ = std::max(released_, end);
    advance();
  }

 private:
  const new_rows_plan& plan_;
  std::function<void(Index end)> finished_;
  std::vector<const embedding_matrix*> from_;
  std::vector<const embedding_matrix*> to_;
  /// The new row of each output row; null: a source row (new ids leave no gap past source_rows).
  std::vector<const new_row*> by_id_;
  std::vector<std::pair<Index, Index>> helper_order_;  ///< (helper row, output id), by helper row
  std::vector<bool> copied_;                           ///< by output row: a helper row copied there
  std::size_t next_helper_ = 0;
  Index released_ = 0;  ///< rows of the helper-shaped matrices whose memory was handed back
  Index final_ = 0;     ///< output rows [0, final_) are written
};

}  // namespace clp_transfer
