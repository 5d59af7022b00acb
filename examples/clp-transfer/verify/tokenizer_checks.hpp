// The checks of the tokenizer against the tensors: every token id it can produce (its vocabulary,
// its added tokens, tokenizer_config.json's added_tokens_decoder) names a row of every per-token
// matrix, and every special token its files name by string is one of its tokens.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "verify/finding.hpp"
#include "verify/token_index.hpp"
#include "verify/token_tensors.hpp"

namespace clp_transfer::verify {

/// Every token id of the vocabulary (its added tokens included) below the rows of every
/// per-token matrix.
/// @param[in]  tokens    the tokenizer's vocabulary
/// @param[in]  tensors   the folder's per-token tensors
/// @param[out] findings  one finding at most, naming the tokenizer file
inline void check_token_ids(const token_index& tokens, const token_tensors& tensors, std::vector<finding>& findings) {
  const token_tensor& fewest = tensors.fewest_rows();
  std::vector<std::pair<std::int64_t, std::string>> past;
  for (const auto& [token, id] : tokens.vocabulary().ids)
    if (id >= fewest.rows) past.emplace_back(id, token);
  if (past.empty()) return;
  findings.push_back({finding_kind::token_id, tokens.file(),
                      token_examples(std::move(past)) + " past the " + std::to_string(fewest.rows) + " rows of " +
                          fewest.description() + "; text holding them makes the model look up rows that do not exist"});
}

/// tokenizer_config.json's added_tokens_decoder (id -> {"content": token}): each id below the
/// rows of every per-token matrix, and each entry agreeing with the vocabulary: its token there
/// with the same id, its id held by no other token, and, when the vocabulary is a tokenizer.json
/// (which lists the added tokens itself), its token there at all.
/// @param[in]  json      the folder's JSON files
/// @param[in]  tensors   the per-token tensors; null where they could not be found
/// @param[in]  tokens    the tokenizer's vocabulary; null where there is none
/// @param[out] findings  one per entry at fault
inline void check_added_tokens_decoder(const model_json_files& json, const token_tensors* tensors,
                                       const token_index* tokens, std::vector<finding>& findings) {
  if (!json.tokenizer_config || !json.tokenizer_config->is_object()) return;
  const auto decoder = json.tokenizer_config->find("added_tokens_decoder");
  if (decoder == json.tokenizer_config->end() || !decoder->is_object()) return;
  const std::filesystem::path file = json.path("tokenizer_config.json");
  const auto report = [&](finding_kind kind, std::string message) {
    findings.push_back({kind, file, "added_tokens_decoder " + std::move(message)});
  };
  for (const auto& [key, entry] : decoder->items()) {
    std::int64_t id = -1;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
    const auto content = entry.is_object() ? entry.find("content") : entry.end();
    if (error != std::errc() || end != key.data() + key.size() || id < 0 || content == entry.end() ||
        !content->is_string()) {
      report(finding_kind::special_id, "has the entry " + io::quoted_name(key) + ", not a token id with its content");
      continue;
    }
    const std::string token = content->get<std::string>();
    const std::string entry_text = io::quoted_name(token) + " id " + std::to_string(id);
    if (tensors && id >= tensors->fewest_rows().rows) {
      const token_tensor& fewest = tensors->fewest_rows();
      report(finding_kind::token_id, "gives " + entry_text + ", past the " + std::to_string(fewest.rows) + " rows of " +
                                         fewest.description() +
                                         "; text holding it makes the model look up a row that does not exist");
    }
    if (!tokens) continue;
    const auto there = tokens->vocabulary().ids.find(token);
    const std::string* holder = tokens->token_of(id);
    const std::string name = tokens->file_name();
    if (there != tokens->vocabulary().ids.end() && there->second != id)
      report(finding_kind::tokenizer_files, "gives " + entry_text + " but " + name + " gives it id " +
                                                std::to_string(there->second) +
                                                "; the slow and the fast tokenizer encode it differently");
    else if (there == tokens->vocabulary().ids.end() && holder)
      report(finding_kind::tokenizer_files, "gives " + entry_text + " but in " + name + " that id is " +
                                                io::quoted_name(*holder) + "; two tokens share one row");
    else if (there == tokens->vocabulary().ids.end() && name == "tokenizer.json")
      report(finding_kind::tokenizer_files, "gives " + entry_text + ", which " + name +
                                                " lacks; loading the tokenizer adds it again, at whichever id is "
                                                "next");
  }
}

namespace detail {

/// The token a tokenizer file names under `key`: a string, or an AddedToken {"content": ...}.
inline std::optional<std::string> named_token(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object())
    if (const auto content = value.find("content"); content != value.end() && content->is_string())
      return content->get<std::string>();
  return std::nullopt;
}

/// Whether tokenizer_config.json's added_tokens_decoder lists `token`.
inline bool in_added_tokens_decoder(const model_json_files& json, const std::string& token) {
  if (!json.tokenizer_config || !json.tokenizer_config->is_object()) return false;
  const auto decoder = json.tokenizer_config->find("added_tokens_decoder");
  if (decoder == json.tokenizer_config->end() || !decoder->is_object()) return false;
  for (const auto& [key, entry] : decoder->items())
    if (named_token(entry) == token) return true;
  return false;
}

}  // namespace detail

/// The special tokens tokenizer_config.json and special_tokens_map.json name by string (bos, eos,
/// unk, sep, pad, cls and mask tokens, and additional_special_tokens) are tokens of the
/// vocabulary, or of added_tokens_decoder (which a tokenizer without tokenizer.json adds).
/// @param[in]  json      the folder's JSON files
/// @param[in]  tokens    the tokenizer's vocabulary
/// @param[out] findings  one per token at fault
inline void check_named_special_tokens(const model_json_files& json, const token_index& tokens,
                                       std::vector<finding>& findings) {
  static constexpr const char* keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                         "pad_token", "cls_token", "mask_token"};
  const auto check = [&](const char* file_name, const std::string& key, const nlohmann::ordered_json& value) {
    const std::optional<std::string> token = detail::named_token(value);
    if (!token || tokens.vocabulary().ids.count(*token) || detail::in_added_tokens_decoder(json, *token)) return;
    findings.push_back({finding_kind::special_id, json.path(file_name),
                        key + " is " + io::quoted_name(*token) + ", which is not a token of " + tokens.file_name() +
                            "; loading the tokenizer adds it as a new token, past the " +
                            std::to_string(tokens.vocabulary().size) + " ids the vocabulary has"});
  };
  for (const auto& [file, name] : {std::pair{&json.tokenizer_config, "tokenizer_config.json"},
                                   std::pair{&json.special_tokens_map, "special_tokens_map.json"}}) {
    if (!*file || !(*file)->is_object()) continue;
    const nlohmann::ordered_json& object = **file;
    for (const char* key : keys)
      if (const auto found = object.find(key); found != object.end()) check(name, key, *found);
    if (const auto extra = object.find("additional_special_tokens"); extra != object.end() && extra->is_array())
      for (const auto& value : *extra) check(name, "additional_special_tokens", value);
  }
}

}  // namespace clp_transfer::verify
