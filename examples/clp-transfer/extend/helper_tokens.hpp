// Where the tokens `extend` adds come from: the helper's tokens in the order its training made
// them (merge rank for a BPE tokenizer.json, score for a SentencePiece or Unigram vocabulary, id
// for the others), special and added tokens left out, each as the bytes it stands for in the
// helper's spelling; or a list the user gives (--tokens FILE).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include <clp/token_bytes.hpp>
#include <nlohmann/json.hpp>

#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"
#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "special_tokens.hpp"

namespace clp_transfer {

/// The helper's tokens an extension may add, in the helper's order.
struct helper_candidates {
  std::vector<std::string> bytes;  ///< what each token stands for
  std::vector<std::int64_t> ids;   ///< its id in the helper, parallel to bytes
  std::string order;               ///< "merge rank", "score" or "id", for the report
  /// The helper's BPE model, when its tokenizer.json is one extend can encode with (for the
  /// helper's own tokens per word); nullopt otherwise.
  std::optional<extend::bpe_model> model;
};

namespace detail {

/// Ids ordered by score, highest first, ties by id.
inline std::vector<std::int64_t> by_score(std::vector<std::pair<std::int64_t, double>> scored) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::int64_t> ids;
  for (const auto& entry : scored) ids.push_back(entry.first);
  return ids;
}

/// The order of a tokenizer.json's tokens: merge rank (BPE), score (Unigram), else id; added
/// tokens left out. Sets `order`, and `model` for a BPE extend can encode with.
inline std::vector<std::int64_t> tokenizer_json_order(const std::filesystem::path& file, std::int64_t size,
                                                      std::string& order, std::optional<extend::bpe_model>& model) {
  const nlohmann::json document = nlohmann::json::parse(io::read_text_file(file), nullptr, false);
  std::unordered_set<std::int64_t> added;
  std::vector<std::int64_t> ids;
  if (document.is_object() && document.contains("added_tokens") && document["added_tokens"].is_array())
    for (const nlohmann::json& entry : document["added_tokens"])
      if (entry.is_object() && entry.contains("id") && entry["id"].is_number_integer())
        added.insert(entry["id"].get<std::int64_t>());
  const nlohmann::json* json_model = document.is_object() && document.contains("model") ? &document["model"] : nullptr;
  const std::string type =
      json_model && json_model->is_object() ? json_model->value("type", std::string()) : std::string();
  if (type == "BPE") {
    try {
      model = extend::read_bpe_model(document, file.string());
      for (const extend::token_id id : extend::merge_rank_order(*model)) ids.push_back(id);
      order = "merge rank";
    } catch (const clp::invalid_argument&) {  // a BPE extend cannot encode still has its ids
      ids.clear();
      model.reset();
    }
  } else if (type == "Unigram" && json_model->contains("vocab") && (*json_model)["vocab"].is_array()) {
    std::vector<std::pair<std::int64_t, double>> scored;
    const nlohmann::json& vocab = (*json_model)["vocab"];
    for (std::size_t id = 0; id < vocab.size(); ++id)
      if (vocab[id].is_array() && vocab[id].size() == 2 && vocab[id][1].is_number())
        scored.emplace_back(static_cast<std::int64_t>(id), vocab[id][1].get<double>());
    ids = by_score(std::move(scored));
    order = "score";
  }
  if (ids.empty()) {
    for (std::int64_t id = 0; id < size; ++id) ids.push_back(id);
    order = "id";
  }
  ids.erase(std::remove_if(ids.begin(), ids.end(), [&](std::int64_t id) { return added.count(id) > 0; }), ids.end());
  return ids;
}

/// A SentencePiece model's normal pieces by score (control, unknown, byte, user-defined and
/// unused pieces left out).
inline std::vector<std::int64_t> sentencepiece_order(const std::filesystem::path& file) {
  const io::sentencepiece_model model = io::read_sentencepiece_model(file);
  std::vector<std::pair<std::int64_t, double>> scored;
  for (std::size_t id = 0; id < model.pieces.size(); ++id)
    if (model.pieces[id].type == io::piece_type::normal)
      scored.emplace_back(static_cast<std::int64_t>(id), model.pieces[id].score);
  return by_score(std::move(scored));
}

/// A vocab.json's or vocab.txt's tokens by id, the special tokens by role and, in a WordPiece
/// vocabulary, its bracketed control tokens ("[CLS]", "[unused0]") left out.
inline std::vector<std::int64_t> id_order(const hf_checkpoint& helper, const std::vector<const std::string*>& tokens) {
  std::unordered_set<std::int64_t> special;
  const special_tokens roles = read_special_tokens(helper.json, helper.tokenizer.vocabulary);
  for (const auto& role : roles.by_role)
    if (role) special.insert(role->id);
  const bool wordpiece = helper.tokenizer.file.filename() == "vocab.txt";
  std::vector<std::int64_t> ids;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const std::string* token = tokens[id];
    if (!token || special.count(static_cast<std::int64_t>(id))) continue;
    if (wordpiece && token->size() > 2 && token->front() == '[' && token->back() == ']') continue;
    ids.push_back(static_cast<std::int64_t>(id));
  }
  return ids;
}

}  // namespace detail

/// The helper's tokens an extension may add (see the file's comment), as bytes in the helper's
/// spelling. Throws naming the helper's tokenizer file when its spelling is unknown (tokens are
/// compared by their bytes) or the file cannot be read.
inline helper_candidates read_helper_candidates(const hf_checkpoint& helper) {
  const tokenizer_reading& tokenizer = helper.tokenizer;
  if (!tokenizer.spelling.kind)
    throw clp::invalid_argument(io::about(tokenizer.file), "spelling unknown (" + tokenizer.spelling.evidence +
                                                               "); extend compares tokens by the bytes they stand for");
  std::vector<const std::string*> tokens(static_cast<std::size_t>(tokenizer.vocabulary.size), nullptr);
  for (const auto& [token, id] : tokenizer.vocabulary.ids) tokens[static_cast<std::size_t>(id)] = &token;
  helper_candidates candidates;
  std::vector<std::int64_t> ids;
  const std::filesystem::path& file = tokenizer.file;
  if (file.filename() == "tokenizer.json") {
    ids = detail::tokenizer_json_order(file, tokenizer.vocabulary.size, candidates.order, candidates.model);
  } else if (file.extension() == ".model") {
    ids = detail::sentencepiece_order(file);
    candidates.order = "score";
  } else {
    ids = detail::id_order(helper, tokens);
    candidates.order = "id";
  }
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= static_cast<std::int64_t>(tokens.size()) || !tokens[static_cast<std::size_t>(id)]) continue;
    candidates.bytes.push_back(clp::token_bytes(*tokens[static_cast<std::size_t>(id)], *tokenizer.spelling.kind));
    candidates.ids.push_back(id);
  }
  return candidates;
}

/// The longest --tokens entry, in bytes: several times the longest token of the tokenizers the
/// program reads. A token of n bytes may need up to n - 1 intermediates, each encoded and
/// checked as it is made, so the work grows faster than n; the limit keeps it to a second.
inline constexpr std::size_t max_listed_token_bytes = 1024;

/// The tokens of a --tokens file: one a line, each line's bytes as they are (nothing trimmed); a
/// final newline ends the last line rather than starting an empty one. Empty lines are kept, for
/// extend::choose_tokens to refuse naming the file; a line longer than max_listed_token_bytes is
/// refused here, before any model is read.
/// @param[in] file  the --tokens file
inline std::vector<std::string> read_token_list(const std::filesystem::path& file) {
  std::error_code ignored;
  if (std::filesystem::is_directory(file, ignored))
    throw clp::invalid_argument(io::about(file), "is a folder; --tokens names a file with one token a line");
  const std::string text = io::read_text_file(file);
  std::vector<std::string> tokens;
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t end = std::min(text.find('\n', from), text.size());
    if (end > from && text[end - 1] == '\r')
      throw clp::invalid_argument(io::about(file), "entry " + std::to_string(tokens.size() + 1) +
                                                       " ends with a carriage return (CRLF line ends): save the file "
                                                       "with LF line ends");
    if (end - from > max_listed_token_bytes)
      throw clp::invalid_argument(io::about(file), "entry " + std::to_string(tokens.size() + 1) + " is " +
                                                       std::to_string(end - from) + " bytes long; a token may hold at most " +
                                                       std::to_string(max_listed_token_bytes) + " bytes");
    tokens.push_back(text.substr(from, end - from));
    from = end + 1;
  }
  if (tokens.empty()) throw clp::invalid_argument(io::about(file), "names no token (one token a line)");
  return tokens;
}

}  // namespace clp_transfer
