// The order of the new ids. An extension numbers its new tokens as it makes them; a token made
// early as an intermediate and asked for later keeps its early id, and so does a character a
// token needed. The ids are only labels (merges name tokens by their strings), so the new ids
// may be given out again in any order among themselves. Given out in the order of the helper
// rows the engine makes them from, the output's rows come out of the engine in row order and
// leave for the disk as they come (extended_rows_writer), instead of waiting in memory for an
// early id whose helper row comes last.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/extension.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// `extension` with its new ids given out again: the asked-for tokens the helper has in the order
/// of their helper ids, every other new token (an intermediate, a token the helper lacks) just
/// before the next of those in the extension's own order (at the end when none follows). The
/// same ids, the same tokens and merges; only which new token has which new id changes. Without
/// a helper (`helper_ids` empty) the order stays.
/// @param[in] helper_ids  the helper id of each helper token, by its bytes (chosen_tokens)
inline extend::bpe_extension in_helper_order(extend::bpe_extension extension,
                                             const std::unordered_map<std::string, Index>& helper_ids) {
  const std::vector<extend::written_token>& written = extension.written;
  const std::size_t n = written.size();
  if (n == 0 || helper_ids.empty()) return extension;
  std::vector<Index> key(n);
  Index next = std::numeric_limits<Index>::max();
  for (std::size_t i = n; i-- > 0;) {
    const auto helper = written[i].requested ? helper_ids.find(written[i].bytes) : helper_ids.end();
    if (helper != helper_ids.end()) next = helper->second;
    key[i] = next;
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });

  // written is in id order: the k-th new id goes to written[order[k]].
  const extend::token_id first = written.front().id;
  std::vector<extend::token_id> renamed(n);  // by old id - first
  for (std::size_t k = 0; k < n; ++k) renamed[std::size_t(written[order[k]].id - first)] = written[k].id;
  const auto rename = [&](extend::token_id id) { return id < first ? id : renamed[std::size_t(id - first)]; };
  extend::bpe_model model = extension.table.model();
  for (std::size_t i = 0; i < n; ++i)
    model.tokens[std::size_t(rename(written[i].id))] = extension.table.token(written[i].id);
  for (auto& [left, right] : model.merges) {
    left = rename(left);
    right = rename(right);
  }
  std::vector<extend::written_token> reordered;
  reordered.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    reordered.push_back(written[order[k]]);
    reordered.back().id = written[k].id;
  }
  extension.table = extend::bpe_table(std::move(model));
  extension.written = std::move(reordered);
  return extension;
}

}  // namespace clp_transfer
