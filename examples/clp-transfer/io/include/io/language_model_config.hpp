// config.json read and written where the model reads it. Multimodal and wrapper models keep the
// language model's settings in a nested object (Gemma-3, Llava, Idefics, Mllama, PaliGemma:
// "text_config"); the vocabulary size, the hidden size and the special-token ids must be read
// there, and the transferred model's values written there. Token ids of the source vocabulary
// elsewhere in the config (image_token_index, boi_token_index, forced_eos_token_id, ...) are
// carried over by their token string: rewritten to the token's id in the new vocabulary, or
// dropped and reported when the new vocabulary lacks the token.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"

namespace clp_transfer {

/// Where the language model's settings nest, tried in this order; the first that is a JSON
/// object is the language-model config, else the top level is:
/// - text_config: Gemma-3, Llava, Llava-Next, PaliGemma, Idefics2/3, Mllama, Blip-2, Chameleon-style
///   multimodal models;
/// - thinker_config.text_config: Qwen2.5-Omni;
/// - llm_config: InternVL;
/// - language_config: DeepSeek-VL2, Janus.
/// ("decoder" of encoder-decoder wrappers is not in the list: there both halves may read token ids.)
inline const std::vector<std::vector<std::string>>& language_model_config_paths() {
  static const std::vector<std::vector<std::string>> paths = {
      {"text_config"}, {"thinker_config", "text_config"}, {"llm_config"}, {"language_config"}};
  return paths;
}

/// config.json keys of special-token ids. A transferred model takes them from the helper model,
/// which shares its tokenizer.
inline constexpr std::array<std::string_view, 8> special_token_keys = {
    "bos_token_id", "eos_token_id", "pad_token_id",  "unk_token_id",
    "sep_token_id", "cls_token_id", "mask_token_id", "decoder_start_token_id"};

/// Hidden-size keys, in order of preference: n_embd (GPT-2), n_embed (BLOOM-176B's config),
/// hidden_size (most), d_model (T5, BART).
inline constexpr std::array<std::string_view, 4> hidden_size_keys = {"n_embd", "n_embed", "hidden_size", "d_model"};

/// Whether `key` holds token ids of the vocabulary other than the special-token keys: a name
/// ending in "_token_index", "_token_id" or "_token_ids" (image_token_index, image_token_id,
/// video_token_index, boi_token_index, eoi_token_index, audio_token_id, vision_start_token_id,
/// forced_bos_token_id, forced_eos_token_id, ...).
inline bool is_vocabulary_id_key(std::string_view key) {
  for (std::string_view special : special_token_keys)
    if (key == special) return false;
  for (std::string_view ending :
       {std::string_view("_token_index"), std::string_view("_token_id"), std::string_view("_token_ids")})
    if (key.size() > ending.size() && key.substr(key.size() - ending.size()) == ending) return true;
  return false;
}

/// The path of the language-model config in `config` (language_model_config_paths); empty when
/// it is the top level.
/// @param[in] config  parsed config.json
inline std::vector<std::string> language_model_config_path(const nlohmann::ordered_json& config) {
  for (const std::vector<std::string>& path : language_model_config_paths()) {
    const nlohmann::ordered_json* at = &config;
    for (const std::string& key : path) {
      if (!at->is_object() || !at->contains(key)) {
        at = nullptr;
        break;
      }
      at = &(*at)[key];
    }
    if (at && at->is_object()) return path;
  }
  return {};
}

namespace detail {

inline std::string path_text(const std::vector<std::string>& path) {
  std::string text;
  for (const std::string& part : path) text += (text.empty() ? "" : ".") + part;
  return text;
}

inline std::string dotted(const std::vector<std::string>& path, std::string_view key) {
  std::string text;
  for (const std::string& part : path) text += part + ".";
  return text + std::string(key);
}

inline const nlohmann::ordered_json& at_path(const nlohmann::ordered_json& config,
                                             const std::vector<std::string>& path) {
  const nlohmann::ordered_json* at = &config;
  for (const std::string& key : path) at = &(*at)[key];
  return *at;
}

inline nlohmann::ordered_json& at_path(nlohmann::ordered_json& config, const std::vector<std::string>& path) {
  nlohmann::ordered_json* at = &config;
  for (const std::string& key : path) at = &(*at)[key];
  return *at;
}

/// A key's value: in the language-model config, else at the top level.
struct found_value {
  std::string where;  ///< "text_config.vocab_size" or "vocab_size"
  const nlohmann::ordered_json* value = nullptr;
};

inline std::optional<found_value> find_model_value(const nlohmann::ordered_json& config, std::string_view key) {
  const std::vector<std::string> path = language_model_config_path(config);
  const std::string name(key);
  const nlohmann::ordered_json& nested = at_path(config, path);
  if (nested.contains(name)) return found_value{dotted(path, key), &nested[name]};
  if (!path.empty() && config.is_object() && config.contains(name)) return found_value{name, &config[name]};
  return std::nullopt;
}

inline std::int64_t positive_value(const found_value& found, const std::filesystem::path& file) {
  const auto value = io::as_int64(*found.value);
  if (!value || *value <= 0)
    io::malformed(file, found.where + " is " + io::json_excerpt(*found.value) + ", not a positive integer");
  return *value;
}

}  // namespace detail

/// The language model's vocab_size: in the language-model config, else at the top level;
/// nullopt when neither states it (Gemma-3's text_config relies on its class default; the
/// embedding's rows then stand for it). Throws naming `file` and the key when the value is not a
/// positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::optional<std::int64_t> language_model_vocab_size(const nlohmann::ordered_json& config,
                                                             const std::filesystem::path& file) {
  const auto found = detail::find_model_value(config, "vocab_size");
  if (!found) return std::nullopt;
  return detail::positive_value(*found, file);
}

/// The language model's hidden size: the first of hidden_size_keys in the language-model config,
/// else the first at the top level. Throws naming `file` when none is there or the value is not a
/// positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::int64_t language_model_hidden_size(const nlohmann::ordered_json& config,
                                               const std::filesystem::path& file) {
  const std::vector<std::string> path = language_model_config_path(config);
  const nlohmann::ordered_json& nested = detail::at_path(config, path);
  for (const nlohmann::ordered_json* level : {&nested, &config}) {
    if (!level->is_object()) continue;
    for (std::string_view key : hidden_size_keys)
      if (level->contains(std::string(key)))
        return detail::positive_value(
            {detail::dotted(level == &nested ? path : std::vector<std::string>{}, key), &(*level)[std::string(key)]},
            file);
  }
  std::string list;
  for (std::string_view key : hidden_size_keys) list += (list.empty() ? "" : " or ") + std::string(key);
  if (!path.empty()) list += " (looked in " + detail::path_text(path) + " and at the top level)";
  io::malformed(file, "no " + list);
}

/// The special-token ids the model reads: for each special_token_keys entry, its value in the
/// language-model config, else at the top level; absent keys are absent. Values are kept as
/// they are (eos_token_id may be a list).
/// @param[in] config  parsed config.json
inline nlohmann::ordered_json language_model_special_token_ids(const nlohmann::ordered_json& config) {
  nlohmann::ordered_json ids = nlohmann::ordered_json::object();
  for (std::string_view key : special_token_keys)
    if (const auto found = detail::find_model_value(config, key)) ids[std::string(key)] = *found->value;
  return ids;
}

/// A token id of the source vocabulary in config.json, carried over by its token string.
struct token_id_change {
  std::string key;                        ///< "image_token_index", "text_config.boi_token_index", ...
  std::int64_t source_id = 0;             ///< the id in the source config
  std::optional<std::string> token;       ///< the source token with that id; nullopt when no token has it
  std::optional<std::int64_t> target_id;  ///< the token's id in the new vocabulary; nullopt: dropped
};

/// The config to write, and what happened to its other token ids.
struct transferred_config {
  nlohmann::ordered_json config;
  /// Every source id under an is_vocabulary_id_key key (a list contributes one entry per
  /// element), the language-model config's first, then the top level's, each in key order: rewritten (target_id) or
  /// dropped (no target_id). The program names the dropped ones in a warning.
  std::vector<token_id_change> token_ids;
};

/// The config.json of the transferred model: the source's, key order kept, with
/// - vocab_size = `target_rows` in the language-model config (added there when absent, since the
///   model would otherwise read its class default, the source's size) and at the top level when
///   the source has it there (and always for a flat config, as before);
/// - the helper's special-token ids (language_model_special_token_ids of the helper) in the
///   language-model config: each key the helper has is set, each it lacks is removed (the
///   source's id would name an unrelated token of the new vocabulary). In a nested config, a
///   special key at the top level is likewise replaced or removed, and not added when absent.
///   For a flat config: vocab_size replaced, the special ids from the helper, else dropped;
/// - every other token id at the top level and in the language-model config (is_vocabulary_id_key,
///   a non-negative integer or a list of them) rewritten to the new id of the token it names, or
///   removed (a list element: left out) when the new vocabulary lacks that token or no source
///   token has that id. Negative values (-1 for "unset", LLaVA's -200 placeholder) are kept.
///
/// @param[in] source         the source model's config.json
/// @param[in] helper         the helper model's config.json
/// @param[in] target_rows    rows of the output embedding
/// @param[in] source_tokens  the source vocabulary, token -> id (io::token_vocabulary::ids);
///                           searched for ids, once per config token id
/// @param[in] target_tokens  the new (helper's) vocabulary, token -> id
inline transferred_config transfer_config(const nlohmann::ordered_json& source, const nlohmann::ordered_json& helper,
                                          std::int64_t target_rows,
                                          const std::unordered_map<std::string, std::int64_t>& source_tokens,
                                          const std::unordered_map<std::string, std::int64_t>& target_tokens) {
  transferred_config out;
  out.config = source;
  const std::vector<std::string> path = language_model_config_path(source);
  const nlohmann::ordered_json helper_ids = language_model_special_token_ids(helper);

  // other token ids, by token string
  auto token_of = [&](std::int64_t id) -> std::optional<std::string> {
    for (const auto& [token, token_id] : source_tokens)
      if (token_id == id) return token;
    return std::nullopt;
  };
  auto carry = [&](const std::string& where, std::int64_t id) -> std::optional<std::int64_t> {
    token_id_change change{where, id, token_of(id), std::nullopt};
    if (change.token)
      if (const auto hit = target_tokens.find(*change.token); hit != target_tokens.end())
        change.target_id = hit->second;
    out.token_ids.push_back(change);
    return change.target_id;
  };
  auto rewrite_level = [&](nlohmann::ordered_json& level, const std::vector<std::string>& level_path) {
    std::vector<std::string> removed;
    for (auto item = level.begin(); item != level.end(); ++item) {
      if (!is_vocabulary_id_key(item.key())) continue;
      const std::string where = detail::dotted(level_path, item.key());
      if (const auto id = io::as_int64(item.value())) {
        if (*id < 0) continue;
        if (const auto target = carry(where, *id))
          item.value() = *target;
        else
          removed.push_back(item.key());
      } else if (item.value().is_array()) {
        nlohmann::ordered_json kept = nlohmann::ordered_json::array();
        bool all_ids = true;
        for (const auto& element : item.value()) all_ids = all_ids && io::as_int64(element).has_value();
        if (!all_ids) continue;
        for (const auto& element : item.value()) {
          const std::int64_t id = *io::as_int64(element);
          if (id < 0) {
            kept.push_back(element);
          } else if (const auto target = carry(where, id)) {
            kept.push_back(*target);
          }
        }
        if (kept.empty() && !item.value().empty())
          removed.push_back(item.key());
        else
          item.value() = std::move(kept);
      }
    }
    for (const std::string& key : removed) level.erase(key);
  };
  // The language-model config first, then (nested case) the top level: a change to the top
  // level's keys may move the nested object, so no reference to it outlives its block.
  {
    nlohmann::ordered_json& nested = detail::at_path(out.config, path);
    nested["vocab_size"] = target_rows;
    for (std::string_view key : special_token_keys) {
      const std::string name(key);
      if (helper_ids.contains(name))
        nested[name] = helper_ids[name];
      else
        nested.erase(name);
    }
    rewrite_level(nested, path);
  }
  if (!path.empty()) {
    if (source.contains("vocab_size")) out.config["vocab_size"] = target_rows;
    for (std::string_view key : special_token_keys) {
      const std::string name(key);
      if (!out.config.contains(name)) continue;
      if (helper_ids.contains(name))
        out.config[name] = helper_ids[name];
      else
        out.config.erase(name);
    }
    rewrite_level(out.config, {});
  }
  return out;
}

}  // namespace clp_transfer
