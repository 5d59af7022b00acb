// A bpe_model read from a parsed tokenizer.json: model.vocab, model.merges in either form ("a b"
// strings or ["a", "b"] pairs), the flags that change encoding, the added tokens' ids, and the
// text rules (read_text_rules.hpp). What extend cannot reproduce exactly is refused naming it:
// another model type, dropout, a continuing_subword_prefix or an end_of_word_suffix.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/read_text_rules.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

namespace detail {

/// model.vocab into model.tokens, checked: an object of distinct, non-empty tokens to distinct
/// ids from 0 below 2^31.
template <class Json>
void read_vocab(const Json& vocab, const std::string& origin, bpe_model& model,
                std::unordered_map<std::string, token_id>& ids) {
  if (!vocab.is_object()) malformed_tokenizer(origin, "model.vocab is not an object of token -> id");
  ids.reserve(vocab.size());
  std::vector<bool> used;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().template get<std::int64_t>() < 0 ||
        it.value().template get<std::int64_t>() >= INT32_MAX)
      malformed_tokenizer(origin, "model.vocab[" + quoted_token(it.key()) + "] is not an id from 0 below 2^31");
    if (it.key().empty()) unsupported(origin, "model.vocab holds the empty token, which no BPE merge can make");
    const auto id = static_cast<std::size_t>(it.value().template get<std::int64_t>());
    if (id >= used.size()) used.resize(id + 1, false);
    if (used[id]) malformed_tokenizer(origin, "model.vocab gives id " + std::to_string(id) + " to two tokens");
    used[id] = true;
    ids.emplace(it.key(), static_cast<token_id>(id));
  }
  model.tokens.assign(used.size(), std::string());
  for (const auto& [token, id] : ids) model.tokens[static_cast<std::size_t>(id)] = token;
}

/// One entry of model.merges as its two sides; records which form the file uses.
template <class Json>
std::pair<std::string, std::string> merge_sides(const Json& entry, std::size_t rank, const std::string& origin,
                                                bool& pairs_seen, bool& strings_seen) {
  const std::string where = "model.merges[" + std::to_string(rank) + "]";
  if (entry.is_string()) {
    strings_seen = true;
    const std::string line = entry.template get<std::string>();
    // Split at the first space, as Hugging Face tokenizers and transformers.js do.
    const std::size_t space = line.find(' ');
    if (space == std::string::npos)
      malformed_tokenizer(origin, where + " " + quoted_token(line) + " is not two tokens joined by a space");
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
    pairs_seen = true;
    return {entry[0].template get<std::string>(), entry[1].template get<std::string>()};
  }
  malformed_tokenizer(origin, where + " is neither an \"a b\" string nor an [\"a\", \"b\"] pair");
}

/// model.merges into model.merges, each side and their concatenation a token, as Hugging Face
/// requires.
template <class Json>
void read_merges(const Json& merges, const std::string& origin, bpe_model& model,
                 const std::unordered_map<std::string, token_id>& ids) {
  if (!merges.is_array()) malformed_tokenizer(origin, "model.merges is not an array");
  bool pairs_seen = false, strings_seen = false;
  model.merges.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = merge_sides(merges[rank], rank, origin, pairs_seen, strings_seen);
    for (const std::string& side : {left, right, left + right})
      if (ids.find(side) == ids.end())
        malformed_tokenizer(origin, "model.merges[" + std::to_string(rank) + "] needs " + quoted_token(side) +
                                        ", which model.vocab lacks");
    model.merges.emplace_back(ids.at(left), ids.at(right));
  }
  if (pairs_seen && strings_seen) malformed_tokenizer(origin, "model.merges mixes \"a b\" strings and pairs");
  model.merges_as_pairs = pairs_seen;
}

/// Refuses the model keys that change encoding in a way extend does not reproduce.
template <class Json>
void check_model_options(const Json& model, const std::string& origin) {
  const auto present = [&](const char* key) {
    const auto it = model.find(key);
    return it != model.end() && !it->is_null() && !(it->is_string() && it->template get<std::string>().empty());
  };
  if (text_member(model, "type", "BPE") != "BPE")
    unsupported(origin, "model type " + quoted_token(text_member(model, "type")) +
                            " cannot be extended: extend writes BPE merges (WordPiece vocab.txt and SentencePiece "
                            "sources are not supported yet)");
  if (const auto it = model.find("dropout"); it != model.end() && !it->is_null() && !(it->is_number() && *it == 0))
    unsupported(origin, "model.dropout is set: a model that encodes at random cannot be extended");
  if (present("continuing_subword_prefix"))
    unsupported(origin, "model.continuing_subword_prefix is set: extend does not support continuation prefixes");
  if (present("end_of_word_suffix"))
    unsupported(origin, "model.end_of_word_suffix is set: extend does not support word-end suffixes");
}

}  // namespace detail

/// The BPE model of the tokenizer.json `tokenizer`.
/// @param[in] tokenizer  a parsed tokenizer.json (nlohmann::json or ordered_json)
/// @param[in] origin     its file, for messages
/// @throws io::malformed_file for an impossible model, clp::invalid_argument for one extend
///         does not support (see the file's comment and read_text_rules)
template <class Json>
bpe_model read_bpe_model(const Json& tokenizer, const std::string& origin) {
  if (!tokenizer.is_object()) malformed_tokenizer(origin, "is not a JSON object");
  const auto model_it = tokenizer.find("model");
  if (model_it == tokenizer.end() || !model_it->is_object()) malformed_tokenizer(origin, "has no \"model\" object");
  const Json& json_model = *model_it;
  detail::check_model_options(json_model, origin);
  bpe_model model;
  model.rules = read_text_rules(tokenizer, origin);
  std::unordered_map<std::string, token_id> ids;
  const auto vocab = json_model.find("vocab");
  const auto merges = json_model.find("merges");
  if (vocab == json_model.end() || merges == json_model.end())
    malformed_tokenizer(origin, "model has no \"vocab\" or no \"merges\"");
  detail::read_vocab(*vocab, origin, model, ids);
  detail::read_merges(*merges, origin, model, ids);
  model.byte_fallback = detail::flag_member(json_model, "byte_fallback", false);
  model.ignore_merges = detail::flag_member(json_model, "ignore_merges", false);
  model.fuse_unk = detail::flag_member(json_model, "fuse_unk", false);
  if (const std::string unknown = detail::text_member(json_model, "unk_token"); !unknown.empty()) {
    const auto it = ids.find(unknown);
    if (it == ids.end())
      malformed_tokenizer(origin, "model.unk_token " + quoted_token(unknown) + " is not in model.vocab");
    model.unknown = it->second;
  }
  if (const auto added = tokenizer.find("added_tokens"); added != tokenizer.end() && added->is_array())
    for (const Json& entry : *added)
      if (const auto id = entry.find("id"); id != entry.end() && id->is_number_integer() && *id >= 0)
        model.reserved_ids.push_back(id->template get<token_id>());
  return model;
}

/// The first id after every id the model and its added tokens use: where new tokens may start.
inline token_id first_unused_id(const bpe_model& model) {
  token_id next = static_cast<token_id>(model.tokens.size());
  for (const token_id id : model.reserved_ids) next = std::max(next, id + 1);
  return next;
}

}  // namespace clp_transfer::extend
