// Special tokens by role (bos, eos, pad, unk): which token of a vocabulary plays each role, as a
// model folder's tokenizer and model files declare it (read once, io/hf_checkpoint.hpp); which
// source row each of the helper's role tokens takes (the helper's "<|endoftext|>" as eos takes
// the source's "</s>"); and the token ids a transferred model's generation_config.json must carry.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// The roles a special token can play.
enum class token_role { bos, eos, pad, unk };

/// The roles in the order a token with several roles is mapped by: GPT-2's "<|endoftext|>"
/// is bos, eos and unk at once, and ends text above all, so it takes the source's eos row.
inline constexpr std::array<token_role, 4> role_precedence = {token_role::eos, token_role::bos, token_role::pad,
                                                              token_role::unk};

/// "bos", "eos", "pad" or "unk": also the prefix of the files' keys (bos_token, bos_token_id).
/// @param[in] role  a role
inline const char* role_name(token_role role) {
  switch (role) {
    case token_role::bos:
      return "bos";
    case token_role::eos:
      return "eos";
    case token_role::pad:
      return "pad";
    case token_role::unk:
      return "unk";
  }
  return "?";
}

/// The token playing one role.
struct role_token {
  std::string token;        ///< the token's string, as in the vocabulary
  std::int64_t id = 0;      ///< its id in the vocabulary
  std::string declared_by;  ///< the file and key that named it: "tokenizer_config.json eos_token"
};

/// A model's special tokens by role.
struct special_tokens {
  /// Indexed by token_role; nullopt where no file names a token of the vocabulary.
  std::array<std::optional<role_token>, 4> by_role;
  /// One line each, starting with the path of the file it is about: declarations that were
  /// ignored (not in the vocabulary, of an unexpected shape) and model files whose ids disagree
  /// with the tokenizer's choice. For warnings.
  std::vector<std::string> notes;

  const std::optional<role_token>& operator[](token_role role) const { return by_role[static_cast<std::size_t>(role)]; }
};

namespace detail {

/// One file's declaration of a role's token: by string (tokenizer files) or by id (model files).
struct role_declaration {
  std::string declared_by;  // "tokenizer_config.json eos_token"
  std::optional<std::string> token;
  std::optional<std::int64_t> id;
  std::vector<std::int64_t> all_ids;  // model files: every id listed (eos_token_id may be a list)
  std::string file, key;              // the file's path and the key, for notes
};

/// The file `name` of `files` when it is a JSON object; one that is not is noted and ignored.
inline const nlohmann::ordered_json* object_of(const model_json_files& files,
                                               const std::optional<nlohmann::ordered_json>& file, const char* name,
                                               std::vector<std::string>& notes) {
  if (!file) return nullptr;
  if (file->is_object()) return &*file;
  notes.push_back(files.path(name).string() + ": not a JSON object; ignored");
  return nullptr;
}

/// The token a tokenizer file names under `key`: a string, or an AddedToken object
/// {"content": ...}. Null says "none"; any other shape is noted and ignored.
inline std::optional<std::string> named_token(const nlohmann::ordered_json& file, const std::string& file_name,
                                              const std::string& key, std::vector<std::string>& notes) {
  const auto it = file.find(key);
  if (it == file.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  notes.push_back(file_name + ": " + key + " is " + it->dump() + ", not a token; ignored");
  return std::nullopt;
}

/// The ids a model file gives under `key`: one integer, or a non-empty list of them (the
/// first is the role's token). Null says "none"; any other shape is noted and ignored.
inline std::vector<std::int64_t> named_ids(const nlohmann::ordered_json& file, const std::string& file_name,
                                           const std::string& key, std::vector<std::string>& notes) {
  const auto it = file.find(key);
  if (it == file.end() || it->is_null()) return {};
  std::vector<std::int64_t> ids;
  if (const auto id = io::as_int64(*it)) ids.push_back(*id);
  if (it->is_array())
    for (const auto& entry : *it) {
      const auto id = io::as_int64(entry);
      if (!id) {
        ids.clear();
        break;
      }
      ids.push_back(*id);
    }
  if (ids.empty()) notes.push_back(file_name + ": " + key + " is " + it->dump() + ", not a token id; ignored");
  return ids;
}

/// Every role's declarations in the files, in order of precedence (see read_special_tokens);
/// ids are not yet resolved to tokens.
inline std::array<std::vector<role_declaration>, 4> role_declarations(const model_json_files& files,
                                                                      std::vector<std::string>& notes) {
  const auto* tokenizer_config = object_of(files, files.tokenizer_config, "tokenizer_config.json", notes);
  const auto* special_map = object_of(files, files.special_tokens_map, "special_tokens_map.json", notes);
  const auto* generation = object_of(files, files.generation_config, "generation_config.json", notes);
  const auto* config = object_of(files, files.config, "config.json", notes);
  const bool map_first = !tokenizer_config || !tokenizer_config->contains("added_tokens_decoder");
  std::array<std::vector<role_declaration>, 4> declarations;
  for (token_role role : role_precedence) {
    auto& list = declarations[static_cast<std::size_t>(role)];
    const std::string token_key = std::string(role_name(role)) + "_token";
    const std::string id_key = token_key + "_id";
    const auto by_token = [&](const nlohmann::ordered_json* file, const char* name) {
      if (!file) return;
      const std::string path = files.path(name).string();
      if (auto token = named_token(*file, path, token_key, notes))
        list.push_back({std::string(name) + " " + token_key, std::move(token), std::nullopt, {}, path, token_key});
    };
    const auto by_id = [&](const nlohmann::ordered_json* file, const char* name) {
      if (!file) return;
      const std::string path = files.path(name).string();
      auto ids = named_ids(*file, path, id_key, notes);
      if (!ids.empty())
        list.push_back({std::string(name) + " " + id_key, std::nullopt, ids.front(), std::move(ids), path, id_key});
    };
    if (map_first) by_token(special_map, "special_tokens_map.json");
    by_token(tokenizer_config, "tokenizer_config.json");
    if (!map_first) by_token(special_map, "special_tokens_map.json");
    by_id(generation, "generation_config.json");
    by_id(config, "config.json");
  }
  return declarations;
}

/// The token of each id the declarations name (null where no token has it), in one pass over
/// the vocabulary.
inline std::unordered_map<std::int64_t, const std::string*> tokens_of_ids(
    const std::array<std::vector<role_declaration>, 4>& declarations, const io::token_vocabulary& vocabulary) {
  std::unordered_map<std::int64_t, const std::string*> token_of_id;
  for (const auto& list : declarations)
    for (const auto& declaration : list)
      if (declaration.id) token_of_id.emplace(*declaration.id, nullptr);
  if (!token_of_id.empty())
    for (const auto& [token, id] : vocabulary.ids)
      if (const auto it = token_of_id.find(id); it != token_of_id.end()) it->second = &token;
  return token_of_id;
}

/// The first of a role's declarations that names a token of the vocabulary; the others before
/// it are noted.
inline std::optional<role_token> first_in_vocabulary(
    const std::vector<role_declaration>& list, const io::token_vocabulary& vocabulary,
    const std::unordered_map<std::int64_t, const std::string*>& token_of_id, std::vector<std::string>& notes) {
  for (const auto& declaration : list) {
    if (declaration.token) {
      const auto it = vocabulary.ids.find(*declaration.token);
      if (it != vocabulary.ids.end()) return role_token{*declaration.token, it->second, declaration.declared_by};
      notes.push_back(declaration.file + ": " + declaration.key + " names " + io::quoted_name(*declaration.token) +
                      ", which is not in the vocabulary; ignored");
      continue;
    }
    if (const std::string* token = token_of_id.at(*declaration.id))
      return role_token{*token, *declaration.id, declaration.declared_by};
    notes.push_back(declaration.file + ": " + declaration.key + " is " + std::to_string(*declaration.id) +
                    ", which names no token of the vocabulary; ignored");
  }
  return std::nullopt;
}

}  // namespace detail

/// The special tokens of a model, from its JSON files as read, resolved against `vocabulary`,
/// the model's vocabulary.
///
/// Each role takes the first of these that names a token of the vocabulary:
///   1. tokenizer_config.json `<role>_token` (a string or {"content": ...}),
///   2. special_tokens_map.json `<role>_token`,
///   3. generation_config.json `<role>_token_id` (an id; of a list, the first),
///   4. config.json `<role>_token_id`.
/// The tokenizer's files come first because they name the token itself, which is what the
/// tokenizer emits and what the id fields merely point at. When tokenizer_config.json has no
/// added_tokens_decoder (the older layout), special_tokens_map.json comes before it, since
/// transformers then applies the map over the config. A declaration naming no token of the
/// vocabulary is noted and the next one tried; so is a model file whose ids leave out the
/// chosen token (Gemma 3: tokenizer eos "<end_of_turn>", config.json eos_token_id [1, 106]).
/// Absent files are skipped; a file that is not a JSON object is noted and skipped.
/// @param[in] files       the model's JSON files (model_json_files::read, or a checkpoint's)
/// @param[in] vocabulary  the model's vocabulary
inline special_tokens read_special_tokens(const model_json_files& files, const io::token_vocabulary& vocabulary) {
  special_tokens result;
  const auto declarations = detail::role_declarations(files, result.notes);
  const auto token_of_id = detail::tokens_of_ids(declarations, vocabulary);
  for (token_role role : role_precedence) {
    const auto& list = declarations[static_cast<std::size_t>(role)];
    auto& chosen = result.by_role[static_cast<std::size_t>(role)];
    chosen = detail::first_in_vocabulary(list, vocabulary, token_of_id, result.notes);
    if (!chosen) continue;
    for (const auto& declaration : list)
      if (declaration.id &&
          std::find(declaration.all_ids.begin(), declaration.all_ids.end(), chosen->id) == declaration.all_ids.end())
        result.notes.push_back(declaration.file + ": " + declaration.key + " is " +
                               nlohmann::json(declaration.all_ids).dump() + ", without the " + role_name(role) +
                               " token " + io::quoted_name(chosen->token) + " (" + std::to_string(chosen->id) +
                               ") that " + chosen->declared_by + " names");
  }
  return result;
}

/// One helper token that takes a source row because both play the same role.
struct role_match {
  token_role role;           ///< the role that decided
  std::string helper_token;  ///< the helper's (target's) token
  std::int64_t helper_id;    ///< its id: the output row
  std::string source_token;  ///< the source's token with that role
  std::int64_t source_id;    ///< its id: the source row copied
};

/// For every helper token with a role that the source also has, the source token with that
/// role: the rows to copy. A helper token with several roles is mapped once, by the first of
/// role_precedence that the source has (GPT-2's "<|endoftext|>", bos = eos = unk, takes
/// Llama 2's eos "</s>"). Listed in role_precedence order. A role match names the row that
/// plays the same part in the source model, so the program lets it override an exact or
/// byte match of the same helper token.
/// @param[in] source  the source model's special tokens
/// @param[in] helper  the helper model's special tokens (the output's tokenizer)
inline std::vector<role_match> match_special_tokens(const special_tokens& source, const special_tokens& helper) {
  std::vector<role_match> matches;
  for (token_role role : role_precedence) {
    const auto& from = source[role];
    const auto& to = helper[role];
    if (!from || !to) continue;
    bool mapped = false;
    for (const role_match& match : matches) mapped |= match.helper_id == to->id;
    if (!mapped) matches.push_back({role, to->token, to->id, from->token, from->id});
  }
  return matches;
}

/// generation_config.json keys holding token ids. Their values index a vocabulary, so a
/// transferred model takes them from the helper, whose tokenizer it gets.
inline constexpr std::array<std::string_view, 12> generation_token_id_keys = {
    "bos_token_id",        "eos_token_id",        "pad_token_id",       "decoder_start_token_id",
    "forced_bos_token_id", "forced_eos_token_id", "suppress_tokens",    "begin_suppress_tokens",
    "bad_words_ids",       "force_words_ids",     "forced_decoder_ids", "sequence_bias"};

/// Keys of generation_token_id_keys that config.json also holds (transformers derives a
/// missing generation_config.json from them).
inline constexpr std::array<std::string_view, 4> config_generation_keys = {"bos_token_id", "eos_token_id",
                                                                           "pad_token_id", "decoder_start_token_id"};

/// The generation_config.json to write for a transferred model, or nullopt for none (when
/// neither model has one, transformers derives it from config.json, whose ids transfer_config
/// already takes from the helper). It is the source's (sampling settings
/// belong to the source model; key order kept), or an empty object when only the helper has
/// one, with every generation_token_id_keys entry taken from the helper's
/// generation_config.json, else (the four config_generation_keys) from the helper's
/// config.json, else dropped: a source id would name an unrelated token of the new vocabulary.
/// @param[in] source_generation  the source's generation_config.json, if any
/// @param[in] helper_generation  the helper's generation_config.json, if any
/// @param[in] helper_config      the helper's config.json
inline std::optional<nlohmann::ordered_json> target_generation_config(
    const std::optional<nlohmann::ordered_json>& source_generation,
    const std::optional<nlohmann::ordered_json>& helper_generation, const nlohmann::ordered_json& helper_config) {
  if (!source_generation && !helper_generation) return std::nullopt;
  nlohmann::ordered_json generation = source_generation ? *source_generation : nlohmann::ordered_json::object();
  for (std::string_view key : generation_token_id_keys) {
    const std::string name(key);
    const bool in_config =
        std::find(config_generation_keys.begin(), config_generation_keys.end(), key) != config_generation_keys.end();
    if (helper_generation && helper_generation->contains(name))
      generation[name] = (*helper_generation)[name];
    else if (in_config && helper_config.is_object() && helper_config.contains(name))
      generation[name] = helper_config[name];
    else
      generation.erase(name);
  }
  return generation;
}

/// The generation_config.json of the output (target_generation_config) from the two models' files
/// as read; throws io::malformed_file naming a generation_config.json that is not a JSON object.
inline std::optional<nlohmann::ordered_json> output_generation_config(const model_json_files& source,
                                                                      const model_json_files& helper) {
  for (const model_json_files* files : {&source, &helper})
    if (files->generation_config && !files->generation_config->is_object())
      io::malformed(files->path("generation_config.json"), "not a JSON object");
  return target_generation_config(source.generation_config, helper.generation_config,
                                  helper.config ? *helper.config : nlohmann::ordered_json::object());
}

}  // namespace clp_transfer
