// `clp-transfer verify`'s checks of a Hugging Face model folder, as one call: whether its files
// agree with each other as a model loader and a trainer need them to (docs/program.md, "Checking
// a model folder"). Every check returns findings as values and stops at nothing: one bad file
// does not hide what is wrong with the others.
//
//   - config.json's vocab_size against the rows of every per-token tensor (token_tensors.hpp);
//   - every token id of the tokenizer (its vocabulary, added tokens, added_tokens_decoder) inside
//     those rows, and the special tokens its files name among its tokens;
//   - tie_word_embeddings against the tensors;
//   - the special ids of config.json and generation_config.json inside the rows and, where there
//     is a tokenizer, ids of its tokens;
//   - the tokenizer files that exist agreeing with each other (tokenizer_files.hpp);
//   - NaN, infinite values and all-zero token rows in the per-token tensors (tensor_values.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "special_tokens.hpp"
#include "verify/config_checks.hpp"
#include "verify/finding.hpp"
#include "verify/model_folder.hpp"
#include "verify/tensor_values.hpp"
#include "verify/token_index.hpp"
#include "verify/token_tensors.hpp"
#include "verify/tokenizer_checks.hpp"
#include "verify/tokenizer_files.hpp"

namespace clp_transfer::verify {

namespace detail {

/// The ids of the pad token: config.json's pad_token_id (where the model reads it; one id or a
/// list), generation_config.json's, and the token the tokenizer's files name as pad.
inline std::vector<std::int64_t> pad_ids(const model_json_files& json, const token_index* tokens) {
  std::vector<std::int64_t> ids;
  const auto add = [&](const nlohmann::ordered_json& value) {
    if (const auto id = io::as_int64(value)) ids.push_back(*id);
    if (value.is_array())
      for (const auto& element : value)
        if (const auto id = io::as_int64(element)) ids.push_back(*id);
  };
  if (json.config && json.config->is_object())
    if (const auto found = model_value(*json.config, "pad_token_id")) add(*found->value);
  if (json.generation_config && json.generation_config->is_object())
    if (const auto found = json.generation_config->find("pad_token_id"); found != json.generation_config->end())
      add(*found);
  if (tokens) {
    const special_tokens roles = read_special_tokens(json, tokens->vocabulary());
    if (const auto& pad = roles[token_role::pad]) ids.push_back(pad->id);
  }
  return ids;
}

}  // namespace detail

/// Every check on the parts of a model folder, in the order of the top of this file. A file a
/// check cannot read (a tensor's bytes) is a finding too.
/// @param[in] view  the folder's parts (read_folder_contents, or view_of a checkpoint)
inline std::vector<finding> verify_parts(const folder_view& view, int threads = 0, const value_scans& scanned = {}) {
  std::vector<finding> findings;
  const model_json_files& json = *view.json;
  const nlohmann::ordered_json* config = json.config && json.config->is_object() ? &*json.config : nullptr;
  const std::filesystem::path config_file = json.path("config.json");
  const std::optional<std::int64_t> vocab_size =
      config ? config_vocab_size(config_file, *config, findings) : std::nullopt;
  std::optional<token_index> tokens;
  if (view.tokenizer.vocabulary) tokens.emplace(view.tokenizer);
  std::optional<token_tensors> tensors;
  if (view.weights)
    detail::read_or_note(view.folder, findings,
                         [&] { tensors = find_token_tensors(*view.weights, view.names, vocab_size, findings); });
  const token_tensors* per_token = tensors ? &*tensors : nullptr;
  const token_index* vocabulary = tokens ? &*tokens : nullptr;
  if (config && per_token) {
    check_vocab_size(config_file, *config, vocab_size, *per_token, findings);
    detail::read_or_note(view.folder, findings,
                         [&] { check_tie_flag(config_file, *config, *per_token, equal_tensors, findings); });
  }
  if (vocabulary && per_token) check_token_ids(*vocabulary, *per_token, findings);
  check_added_tokens_decoder(json, per_token, vocabulary, findings);
  check_special_ids(json, per_token, vocabulary, findings);
  if (vocabulary) {
    check_named_special_tokens(json, *vocabulary, findings);
    check_tokenizer_files(view.folder, *vocabulary, findings);
  }
  if (per_token)
    detail::read_or_note(view.folder, findings, [&] {
      check_tensor_values(*per_token, vocabulary, detail::pad_ids(json, vocabulary), findings, threads, scanned);
    });
  return findings;
}

/// Reads the model folder `folder` and runs every check on it: the files that cannot be read,
/// then what the checks find. Throws (read_folder_contents) only when `folder` is not a folder
/// or holds none of config.json, weights and a tokenizer.
/// @param[in] folder   model folder
/// @param[in] names    tensor names given instead of found
/// @param[in] threads  workers of the value scans (0: every hardware thread)
/// @param[in] scanned  tensors whose values are known already (check_tensor_values)
inline std::vector<finding> verify_folder(const std::filesystem::path& folder, tensor_choice names = {},
                                          int threads = 0, const value_scans& scanned = {}) {
  const folder_contents contents = read_folder_contents(folder);
  std::vector<finding> findings = contents.findings;
  std::vector<finding> checked = verify_parts(contents.view(std::move(names)), threads, scanned);
  findings.insert(findings.end(), checked.begin(), checked.end());
  return findings;
}

}  // namespace clp_transfer::verify
