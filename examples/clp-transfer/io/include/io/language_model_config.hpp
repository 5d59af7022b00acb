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
const std::vector<std::vector<std::string>>& language_model_config_paths();

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
bool is_vocabulary_id_key(std::string_view key);

/// The path of the language-model config in `config` (language_model_config_paths); empty when
/// it is the top level.
/// @param[in] config  parsed config.json
std::vector<std::string> language_model_config_path(const nlohmann::ordered_json& config);

namespace detail {

std::string path_text(const std::vector<std::string>& path);

std::string dotted(const std::vector<std::string>& path, std::string_view key);

const nlohmann::ordered_json& at_path(const nlohmann::ordered_json& config, const std::vector<std::string>& path);

nlohmann::ordered_json& at_path(nlohmann::ordered_json& config, const std::vector<std::string>& path);

/// A key's value: in the language-model config, else at the top level.
struct found_value {
  std::string where;  ///< "text_config.vocab_size" or "vocab_size"
  const nlohmann::ordered_json* value = nullptr;
};

std::optional<found_value> find_model_value(const nlohmann::ordered_json& config, std::string_view key);

std::int64_t positive_value(const found_value& found, const std::filesystem::path& file);

}  // namespace detail

/// The language model's vocab_size: in the language-model config, else at the top level;
/// nullopt when neither states it (Gemma-3's text_config relies on its class default; the
/// embedding's rows then stand for it). Throws naming `file` and the key when the value is not a
/// positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
std::optional<std::int64_t> language_model_vocab_size(const nlohmann::ordered_json& config,
                                                      const std::filesystem::path& file);

/// The language model's hidden size: the first of hidden_size_keys in the language-model config,
/// else the first at the top level. Throws naming `file` when none is there or the value is not a
/// positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
std::int64_t language_model_hidden_size(const nlohmann::ordered_json& config, const std::filesystem::path& file);

/// The special-token ids the model reads: for each special_token_keys entry, its value in the
/// language-model config, else at the top level; absent keys are absent. Values are kept as
/// they are (eos_token_id may be a list).
/// @param[in] config  parsed config.json
nlohmann::ordered_json language_model_special_token_ids(const nlohmann::ordered_json& config);

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
transferred_config transfer_config(const nlohmann::ordered_json& source, const nlohmann::ordered_json& helper,
                                   std::int64_t target_rows,
                                   const std::unordered_map<std::string, std::int64_t>& source_tokens,
                                   const std::unordered_map<std::string, std::int64_t>& target_tokens);

}  // namespace clp_transfer
