// The screen for under-trained source rows (docs/undertrained.md, "In the program"): which of the
// source rows a transfer would copy look like rows the source's training barely saw, found on
// the matrices already read, and the overlap that a transfer or an evaluation then uses.
//
// The input embedding is screened with both of the library's indicators (row norm, cosine to a
// reference of unused rows); an untied output head, which CLP-Transfer copies row for row with
// the embedding, with the cosine indicator alone: the head is Land & Bartolo's indicator for
// untied models, where never-seen tokens' output rows are all pushed the same way, while its
// norms are no sign of training (the softmax reaches every output row). A shared token is
// flagged when either flags its row. The known-unused rows that serve as the reference are the
// source's tokens named like reserved specials and the rows no token names.
#pragma once

#include <clp/undertrained.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "errors.hpp"
#include "library_names.hpp"
#include "transfer/read_models.hpp"
#include "transfer/undertrained_choice.hpp"

namespace clp_transfer {

/// A flagged shared token, as the report lists it.
struct flagged_token {
  Index id = 0;      ///< its source row
  std::string text;  ///< its token in the source vocabulary
  bool by_norm = false, by_cosine = false, by_head_cosine = false;
};

/// What the screen found and what it looked at.
struct undertrained_screen {
  /// --undertrained; nullopt when the method copies no row (random), and nothing is screened.
  std::optional<undertrained_mode> mode;
  /// Known-unused source rows, ascending: the reference of the cosine indicators when any.
  std::vector<Index> unused_ids;
  Index reserved_named = 0;  ///< of unused_ids, those named like reserved specials; the rest have no token
  /// The input embedding's screen (norm and cosine), over the source rows of the overlap.
  clp::undertrained_rows embedding;
  /// An untied head's screen (cosine only), and the head's name; nullopt when tied or absent.
  std::optional<clp::undertrained_rows> head;
  std::string head_name;
  std::vector<flagged_token> flagged;  ///< ascending id

  /// Whether a screen ran (not under keep, nor for a method that copies no row).
  bool screened() const { return mode && *mode != undertrained_mode::keep; }
  /// Whether the flagged rows are synthesised instead of copied.
  bool synthesised() const { return mode == undertrained_mode::synthesise; }
  std::vector<Index> flagged_ids() const {
    std::vector<Index> ids;
    for (const flagged_token& t : flagged) ids.push_back(t.id);
    return ids;
  }
};

namespace detail {

/// A token named like a reserved special: "<|reserved_special_token_3|>", "<unused12>",
/// "[unused7]"; bracketed by <> or [], with "reserved" or "unused" inside, in any case.
inline bool reserved_special_name(const std::string& token) {
  if (token.size() < 3) return false;
  const char open = token.front(), close = token.back();
  if (!((open == '<' && close == '>') || (open == '[' && close == ']'))) return false;
  std::string lower(token);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find("reserved") != std::string::npos || lower.find("unused") != std::string::npos;
}

/// The source rows known to be unused: tokens named like reserved specials, and rows below
/// `rows` that no token names. `reserved` counts the first kind.
inline std::vector<Index> known_unused_rows(const io::token_vocabulary& vocabulary, Index rows, Index& reserved) {
  std::vector<char> named(static_cast<std::size_t>(rows), 0);
  std::vector<Index> unused;
  reserved = 0;
  for (const auto& [token, id] : vocabulary.ids) {
    if (id >= rows) continue;  // refused by read_models before any screen
    named[static_cast<std::size_t>(id)] = 1;
    if (reserved_special_name(token)) {
      unused.push_back(id);
      ++reserved;
    }
  }
  for (Index r = 0; r < rows; ++r)
    if (!named[static_cast<std::size_t>(r)]) unused.push_back(r);
  std::sort(unused.begin(), unused.end());
  return unused;
}

/// The token of each id in `ids` (ascending), from one pass over the vocabulary.
inline std::vector<std::string> tokens_of(const io::token_vocabulary& vocabulary, const std::vector<Index>& ids) {
  std::vector<std::string> tokens(ids.size());
  for (const auto& [token, id] : vocabulary.ids) {
    const auto at = std::lower_bound(ids.begin(), ids.end(), Index(id));
    if (at != ids.end() && *at == id) tokens[std::size_t(at - ids.begin())] = token;
  }
  return tokens;
}

/// `matrix` screened over `rows` with `options`; its errors name the tensor.
inline clp::undertrained_rows screen_matrix(const embedding_matrix& matrix, const clp::undertrained_options& options) {
  return error_origins().add("embeddings", matrix.origin()).otherwise(matrix.origin().file).run([&] {
    return clp::find_undertrained_rows(matrix.view(), options);
  });
}

/// The union of both screens' flags, each with the indicators that flagged it.
inline std::vector<flagged_token> flagged_union(const undertrained_screen& s, const io::token_vocabulary& vocabulary) {
  std::vector<Index> ids = s.embedding.flagged;
  if (s.head) ids.insert(ids.end(), s.head->flagged.begin(), s.head->flagged.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const std::vector<std::string> texts = tokens_of(vocabulary, ids);
  std::vector<flagged_token> flagged;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto r = static_cast<std::size_t>(ids[i]);
    flagged_token t{ids[i], texts[i]};
    t.by_norm = s.embedding.norms[r] < s.embedding.norm_threshold;
    t.by_cosine = s.embedding.cosine_threshold && s.embedding.cosines[r] > *s.embedding.cosine_threshold;
    t.by_head_cosine = s.head && s.head->cosine_threshold && s.head->cosines[r] > *s.head->cosine_threshold;
    flagged.push_back(std::move(t));
  }
  return flagged;
}

}  // namespace detail

/// Screens the source rows of `overlap` under `mode` (no screen under keep, nor with no mode: a
/// method that copies no row): the input embedding with both indicators, an untied head with its
/// cosine alone, the known-unused rows as the reference. Reads each screened matrix a few times,
/// copies none. Throws naming the tensor for a NaN or infinity in it.
/// @param[in] source   the source model as read, its embedding #rows by d
/// @param[in] overlap  the matched overlap; its source rows are the ones flagged
/// @param[in] threads  worker threads, 0: all
inline undertrained_screen screen_undertrained(const loaded_model& source, const vocabulary_overlap& overlap,
                                               std::optional<undertrained_mode> mode, int threads) {
  undertrained_screen screen;
  screen.mode = mode;
  if (!screen.screened()) return screen;
  const io::token_vocabulary& vocabulary = source.checkpoint.tokenizer.vocabulary;
  clp::undertrained_options options;
  options.threads = threads;
  options.rows = overlap.source_ids;
  options.unused_ids = screen.unused_ids =
      detail::known_unused_rows(vocabulary, source.embedding.rows(), screen.reserved_named);
  screen.embedding = detail::screen_matrix(source.embedding, options);
  for (const transferred_tensor& t : source.transferred)
    if (source.head_name && t.entry.name == *source.head_name && t.source.rows() == source.embedding.rows()) {
      options.norm_threshold = 0;  // the cosine indicator alone
      screen.head = detail::screen_matrix(t.source, options);
      screen.head_name = t.entry.name;
    }
  screen.flagged = detail::flagged_union(screen, vocabulary);
  return screen;
}

/// The overlap a command uses: without the flagged rows' pairs when they are synthesised
/// (clp::without_source_rows: their target rows become missing rows), else `overlap` itself.
inline vocabulary_overlap screened_overlap(const vocabulary_overlap& overlap, const undertrained_screen& screen) {
  if (!screen.synthesised() || screen.flagged.empty()) return overlap;
  return clp::without_source_rows(overlap, screen.flagged_ids());
}

}  // namespace clp_transfer
