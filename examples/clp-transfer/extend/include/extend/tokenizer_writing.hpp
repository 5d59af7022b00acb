// The extended tokenizer files, from the source's own contents: tokenizer.json with the new
// tokens appended to model.vocab and the new merges to model.merges, in the form the source
// uses ("a b" strings or ["a", "b"] pairs), everything else untouched and in its order (callers
// pass nlohmann::ordered_json, parsed by parse_ordered_json in linear time); and, where the
// source folder has them, vocab.json and merges.txt extended the same way, so that the slow and
// fast tokenizers agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

namespace detail {

/// A new merge as one "a b" line; refuses a side holding a space, which the line could not tell.
inline std::string merge_line(const bpe_table& table, std::size_t rank, const std::string& origin) {
  const auto [left, right] = table.model().merges[rank];
  const std::string& a = table.token(left);
  const std::string& b = table.token(right);
  if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
    unsupported(origin, "writes merges as \"a b\" strings, and the new merge of " + quoted_token(a) + " and " +
                            quoted_token(b) + " holds a space");
  return a + " " + b;
}

/// Appends the new tokens to a token -> id object; refuses a token or id already there.
inline void append_tokens(nlohmann::ordered_json& vocab, const bpe_extension& extension, const std::string& origin,
                          const std::string& where) {
  if (!vocab.is_object()) malformed_tokenizer(origin, where + " is not an object of token -> id");
  std::unordered_set<std::string> tokens;
  std::unordered_set<std::int64_t> used;
  tokens.reserve(vocab.size());
  for (const auto& [token, id] : vocab.get_ref<const nlohmann::ordered_json::object_t&>()) {
    tokens.insert(token);
    if (id.is_number_integer()) used.insert(id.get<std::int64_t>());
  }
  for (const written_token& token : extension.written) {
    const std::string& text = extension.table.token(token.id);
    if (tokens.count(text))
      malformed_tokenizer(origin, where + " already holds the new token " + quoted_token(text) +
                                      ": it is not the file the source model was read from");
    if (used.count(token.id))
      malformed_tokenizer(origin, where + " already uses id " + std::to_string(token.id) +
                                      ", which the extension gave to " + quoted_token(text));
    append_key(vocab, text, token.id);
  }
}

}  // namespace detail

/// The extended tokenizer.json: the new tokens appended to model.vocab, the new merges to
/// model.merges (or, where the extension's merges were rewritten, model.merges replaced by them).
/// @param[in] document   the source's tokenizer.json as parsed, the one `extension` was built from
/// @param[in] extension  the extension
/// @param[in] origin     the source file's name, for messages
/// @throws io::malformed_file when `document` is not the one the extension was built from (its
///         merge count differs, or it holds a new token already)
inline nlohmann::ordered_json extended_tokenizer_json(nlohmann::ordered_json document, const bpe_extension& extension,
                                                      const std::string& origin) {
  auto model = document.find("model");
  if (model == document.end() || !model->is_object()) malformed_tokenizer(origin, "has no \"model\" object");
  auto merges = model->find("merges");
  auto vocab = model->find("vocab");
  if (merges == model->end() || !merges->is_array() || vocab == model->end())
    malformed_tokenizer(origin, "model has no \"vocab\" or no \"merges\" array");
  if (merges->size() != extension.source_merges)
    malformed_tokenizer(origin, "model.merges holds " + std::to_string(merges->size()) +
                                    " merges, but the extension was built from a model with " +
                                    std::to_string(extension.source_merges));
  detail::append_tokens(*vocab, extension, origin, "model.vocab");
  const bool pairs = extension.table.model().merges_as_pairs;
  if (extension.merges_rewritten) merges->clear();
  for (std::size_t rank = extension.merges_rewritten ? 0 : extension.source_merges;
       rank < extension.table.model().merges.size(); ++rank) {
    const auto [left, right] = extension.table.model().merges[rank];
    if (pairs)
      merges->push_back(nlohmann::ordered_json::array({extension.table.token(left), extension.table.token(right)}));
    else
      merges->push_back(detail::merge_line(extension.table, rank, origin));
  }
  return document;
}

/// The extended vocab.json (GPT-2's slow-tokenizer layout): the new tokens appended.
/// @param[in] vocab      the source folder's vocab.json as parsed
/// @param[in] extension  the extension
/// @param[in] origin     that file's name, for messages
inline nlohmann::ordered_json extended_vocab_json(nlohmann::ordered_json vocab, const bpe_extension& extension,
                                                  const std::string& origin) {
  detail::append_tokens(vocab, extension, origin, "the vocabulary");
  return vocab;
}

/// The extended merges.txt: the source's lines, then one "a b" line per new merge (or, where the
/// extension's merges were rewritten, its header line and then every merge).
/// @param[in] text       the source folder's merges.txt: an optional "#version" line, then one
///                       merge a line
/// @param[in] extension  the extension
/// @param[in] origin     that file's name, for messages
/// @throws io::malformed_file when its merge count is not the source model's
inline std::string extended_merges_txt(std::string text, const bpe_extension& extension, const std::string& origin) {
  std::size_t merges = 0;
  for (std::size_t from = 0; from < text.size();) {
    std::size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + from, end - from);
    if (!line.empty() && line.rfind("#version", 0) != 0) ++merges;
    from = end + 1;
  }
  if (merges != extension.source_merges)
    malformed_tokenizer(origin, "holds " + std::to_string(merges) +
                                    " merges, but the tokenizer the extension was "
                                    "built from has " +
                                    std::to_string(extension.source_merges));
  if (!text.empty() && text.back() != '\n') text += '\n';
  if (extension.merges_rewritten) {  // the header line stays; the merges are the whole new list
    const std::size_t header = text.rfind("#version", 0) == 0 ? text.find('\n') + 1 : 0;
    text.resize(header);
  }
  for (std::size_t rank = extension.merges_rewritten ? 0 : extension.source_merges;
       rank < extension.table.model().merges.size(); ++rank)
    text += detail::merge_line(extension.table, rank, origin) + "\n";
  return text;
}

}  // namespace clp_transfer::extend
