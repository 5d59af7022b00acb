// The checks of config.json and generation_config.json against the tensors and the tokenizer:
// the vocabulary size, the tie flag and the special-token ids, each read where the model reads
// it (the language-model config of a multimodal model first, io/language_model_config.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/language_model_config.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "verify/finding.hpp"
#include "verify/token_index.hpp"
#include "verify/token_tensors.hpp"

namespace clp_transfer::verify {

/// A key of config.json where the model reads it, and the value there.
struct config_value {
  std::string where;  ///< "text_config.vocab_size" or "vocab_size"
  const nlohmann::ordered_json* value = nullptr;
};

/// `key` in the language-model config, else at the top level; nullopt where neither has it.
/// @param[in] config  parsed config.json (an object)
/// @param[in] key     the key
inline std::optional<config_value> model_value(const nlohmann::ordered_json& config, const std::string& key) {
  const std::vector<std::string> path = language_model_config_path(config);
  const nlohmann::ordered_json* level = &config;
  std::string prefix;
  for (const std::string& part : path) {
    level = &(*level)[part];
    prefix += part + ".";
  }
  if (const auto found = level->find(key); found != level->end()) return config_value{prefix + key, &*found};
  if (const auto found = config.find(key); !path.empty() && found != config.end()) return config_value{key, &*found};
  return std::nullopt;
}

/// config.json's vocabulary size where the model reads it; nullopt when it states none, or states
/// something that is not a positive integer (a finding).
/// @param[in]  config_file  config.json, for findings
/// @param[in]  config       its contents (an object)
/// @param[out] findings     where a bad value is reported
inline std::optional<std::int64_t> config_vocab_size(const std::filesystem::path& config_file,
                                                     const nlohmann::ordered_json& config,
                                                     std::vector<finding>& findings) {
  const std::optional<config_value> found = model_value(config, "vocab_size");
  if (!found) return std::nullopt;
  const auto size = io::as_int64(*found->value);
  if (size && *size > 0) return size;
  findings.push_back({finding_kind::vocab_size, config_file,
                      found->where + " is " + io::json_excerpt(*found->value) +
                          ", not a positive integer; transformers cannot build the embedding from it"});
  return std::nullopt;
}

/// Every per-token tensor has as many rows as config.json's vocab_size says, or, where it says
/// none, as the input embedding.
/// @param[in]  config_file  config.json, for findings
/// @param[in]  config       its contents (an object)
/// @param[in]  vocab_size   config_vocab_size's answer
/// @param[in]  tensors      the folder's per-token tensors
/// @param[out] findings     one per tensor that disagrees
inline void check_vocab_size(const std::filesystem::path& config_file, const nlohmann::ordered_json& config,
                             std::optional<std::int64_t> vocab_size, const token_tensors& tensors,
                             std::vector<finding>& findings) {
  const token_tensor& embedding = tensors.embedding();
  for (const token_tensor& t : tensors.tensors) {
    if (vocab_size && t.rows != *vocab_size) {
      findings.push_back({finding_kind::vocab_size, config_file,
                          model_value(config, "vocab_size")->where + " is " + std::to_string(*vocab_size) + " but " +
                              t.description() + ", the " + role_name(t.role) + ", has " + std::to_string(t.rows) +
                              " rows; loading the weights fails with a size mismatch"});
    } else if (!vocab_size && t.rows != embedding.rows) {
      findings.push_back({finding_kind::vocab_size, t.file->path(),
                          t.description() + ", the " + role_name(t.role) + ", has " + std::to_string(t.rows) +
                              " rows but the input embedding " + io::quoted_name(embedding.name) + " has " +
                              std::to_string(embedding.rows) + "; they cannot stand for the same tokens"});
    }
  }
}

/// Whether two tensors hold the same bytes (tensor_values.hpp streams them).
using same_bytes = std::function<bool(const token_tensor&, const token_tensor&)>;

/// Name endings of output heads beyond the causal-LM ones io::find_output_embedding knows: the
/// masked-LM heads of BERT, RoBERTa, ALBERT, DistilBERT and ELECTRA.
inline constexpr std::string_view masked_lm_head_suffixes[] = {"lm_head.decoder.weight", "predictions.decoder.weight",
                                                               "vocab_projector.weight", "generator_lm_head.weight"};

/// tie_word_embeddings, where config.json states it (true or false), against the tensors: true
/// with an output head whose bytes differ from the embedding's, or false with no output head.
/// Where config.json leaves it out, the model class's default applies, which differs by class:
/// not checked.
/// @param[in]  config_file  config.json, for findings
/// @param[in]  config       its contents (an object)
/// @param[in]  tensors      the folder's per-token tensors
/// @param[in]  equal        compares two tensors' bytes
/// @param[out] findings     one finding at most
inline void check_tie_flag(const std::filesystem::path& config_file, const nlohmann::ordered_json& config,
                           const token_tensors& tensors, const same_bytes& equal, std::vector<finding>& findings) {
  const std::optional<config_value> tie = model_value(config, "tie_word_embeddings");
  if (!tie || !tie->value->is_boolean()) return;
  std::vector<const token_tensor*> heads;
  for (std::size_t i = 1; i < tensors.tensors.size(); ++i) {
    const token_tensor& t = tensors.tensors[i];
    bool head = t.role == token_tensor_role::head;
    for (std::string_view suffix : masked_lm_head_suffixes) head = head || detail::ends_with_part(t.name, suffix);
    if (head) heads.push_back(&t);
  }
  const token_tensor& embedding = tensors.embedding();
  if (tie->value->get<bool>()) {
    for (const token_tensor* head : heads)
      if (!equal(*head, embedding)) {
        findings.push_back({finding_kind::tie_flag, config_file,
                            tie->where + " is true but " + head->description() + " differs from the input embedding " +
                                io::quoted_name(embedding.name) +
                                "; transformers ties the head to the embedding and ignores the saved head"});
        return;
      }
  } else if (heads.empty()) {
    findings.push_back({finding_kind::tie_flag, config_file,
                        tie->where + " is false but the weights hold no output head (a tensor named *lm_head.weight, "
                                     "*embed_out.weight or *output.weight); transformers starts the head from random "
                                     "values"});
  }
}

namespace detail {

/// What a special token's role is for, in a finding.
inline std::string role_of_key(std::string_view key) {
  const std::size_t end = key.find("_token_id");
  return std::string(key.substr(0, end));
}

/// One special-token value (an id, a list of ids, or null) of `file`'s `key`.
inline void check_special_value(const std::filesystem::path& file, const std::string& key,
                                const nlohmann::ordered_json& value, const token_tensors* tensors,
                                const token_index* tokens, std::vector<finding>& findings) {
  if (value.is_null()) return;
  std::vector<std::int64_t> ids;
  if (const auto id = io::as_int64(value)) ids.push_back(*id);
  if (value.is_array())
    for (const auto& element : value)
      if (const auto id = io::as_int64(element)) ids.push_back(*id);
  if (ids.empty() || (value.is_array() && ids.size() != value.size())) {
    findings.push_back({finding_kind::special_id, file,
                        key + " is " + io::json_excerpt(value) + ", not a token id or a list of them"});
    return;
  }
  const std::string role = role_of_key(key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1));
  for (const std::int64_t id : ids) {
    if (id < 0) continue;  // -1 and the like: "unset" to several libraries
    if (tensors && id >= tensors->fewest_rows().rows) {
      const token_tensor& fewest = tensors->fewest_rows();
      findings.push_back({finding_kind::special_id, file,
                          key + " is " + std::to_string(id) + ", past the " + std::to_string(fewest.rows) +
                              " rows of " + fewest.description() + "; the model looks up a row that does not exist"});
    } else if (tokens && !tokens->token_of(id)) {
      findings.push_back({finding_kind::special_id, file,
                          key + " is " + std::to_string(id) + ", which no token of " + tokens->file_name() +
                              " has; the model's " + role + " token is one the tokenizer never produces"});
    }
  }
}

}  // namespace detail

/// The special-token ids of config.json (special_token_keys, where the model reads them) and of
/// generation_config.json (bos, eos, pad and decoder_start): each a single id or a list of ids,
/// below the rows of every per-token matrix and, where there is a tokenizer, the id of one of its
/// tokens. Negative ids are left alone.
/// @param[in]  json      the folder's JSON files (those that are JSON objects are checked)
/// @param[in]  tensors   the per-token tensors; null where they could not be found
/// @param[in]  tokens    the tokenizer's ids; null where there is no tokenizer
/// @param[out] findings  one per id at fault
inline void check_special_ids(const model_json_files& json, const token_tensors* tensors, const token_index* tokens,
                              std::vector<finding>& findings) {
  if (json.config && json.config->is_object())
    for (std::string_view key : special_token_keys)
      if (const auto found = model_value(*json.config, std::string(key)))
        detail::check_special_value(json.path("config.json"), found->where, *found->value, tensors, tokens, findings);
  if (json.generation_config && json.generation_config->is_object())
    for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"})
      if (const auto found = json.generation_config->find(key); found != json.generation_config->end())
        detail::check_special_value(json.path("generation_config.json"), key, *found, tensors, tokens, findings);
}

}  // namespace clp_transfer::verify
