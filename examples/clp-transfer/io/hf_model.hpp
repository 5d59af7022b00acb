// Hugging Face model folders as clp-transfer reads and writes them: config.json, safetensors
// weights (one file or shards listed by model.safetensors.index.json), the tokenizer's
// vocabulary, which tensors are the embeddings, and an output directory that appears under
// its final name only once it is complete.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "safetensors.hpp"

namespace clp::io {

namespace detail {

/// Deeper nesting than any Hugging Face file has (theirs stay under 10 levels).
/// nlohmann::ordered_json copies values recursively when its vector of members grows, so a
/// config.json nested 200,000 deep (400 KB) overflowed the stack inside the parser itself.
inline constexpr std::size_t max_json_depth = 1000;

/// How deeply arrays and objects nest in JSON `text` (1 for a flat object), counted on the
/// raw text so that it can be checked before parsing. It agrees with the parser up to the
/// first syntax error, so the parser never nests deeper than this.
/// @param[in] text  JSON text (need not be valid)
inline std::size_t json_text_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// Parses a JSON file; throws naming the file when it cannot be read or is not JSON (a
/// syntax error, a number too large for a double such as 9e999, or nesting deeper than
/// max_json_depth).
/// @tparam    Json  nlohmann::json (fast, sorted keys) or nlohmann::ordered_json (keeps the
///                  file's key order, but inserts in linear time: small files only)
/// @param[in] file  JSON file
template <class Json>
Json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, with_errno("cannot open"));
  std::ostringstream bytes;
  bytes << in.rdbuf();  // an empty file (or a folder) reads as "": the parser says what is wrong
  const std::string text = std::move(bytes).str();
  if (json_text_depth(text) > max_json_depth)
    fail(file, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    fail_json(file, "not valid JSON", error);
  }
}

/// Runs `read`, which interprets JSON read from `file`, turning any nlohmann exception that
/// escapes it (a type or range error the checks did not foresee) into an io::error naming
/// `file`, so that no JSON library message reaches the user without the file's name.
/// @param[in] file  the file `read` interprets
/// @param[in] read  callable; its result is returned
template <class Read>
auto naming_file(const std::filesystem::path& file, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& error) {
    fail_json(file, "unexpected JSON content", error);
  }
}

/// The JSON value as an int64, or nullopt when it is not an integer in int64's range.
/// @param[in] value  any JSON value
template <class Json>
std::optional<std::int64_t> as_int64(const Json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.template get<std::uint64_t>() > std::uint64_t{INT64_MAX}) return std::nullopt;
  return value.template get<std::int64_t>();
}

}  // namespace detail

/// A tokenizer's vocabulary.
struct token_vocabulary {
  std::unordered_map<std::string, std::int64_t> ids;  ///< token string -> id
  /// Highest id + 1: the rows an embedding matrix needs to cover every token. Equals
  /// ids.size() unless the ids have gaps.
  std::int64_t size = 0;
};

namespace detail {

/// Collects token -> id pairs, refusing negative ids and ids held by two tokens.
class vocabulary_builder {
 public:
  /// @param[in] file  file being read, for messages
  explicit vocabulary_builder(std::filesystem::path file) : file_(std::move(file)) {}

  /// Adds `token` with `id`.
  /// @param[in] token      token string
  /// @param[in] id         its id, as found in the file
  /// @param[in] may_repeat true for added_tokens, which repeat vocabulary entries: a repeat
  ///                       with the same id is then accepted
  void add(const std::string& token, const nlohmann::json& id, bool may_repeat) {
    const auto value = as_int64(id);
    if (!value) fail(file_, "token " + quoted_name(token) + " has id " + json_excerpt(id) + ", not an integer");
    if (*value < 0) fail(file_, "token " + quoted_name(token) + " has negative id " + std::to_string(*value));
    // The vocabulary's size is the highest id + 1, which must itself be an int64.
    if (*value == std::numeric_limits<std::int64_t>::max())
      fail(file_, "token " + quoted_name(token) + " has id " + std::to_string(*value) +
                      ", too large (ids must be below " + std::to_string(*value) + ")");
    const auto [entry, inserted] = vocabulary_.ids.emplace(token, *value);
    if (!inserted) {
      if (may_repeat && entry->second == *value) return;
      fail(file_, (may_repeat ? "added token " : "token ") + quoted_name(token) + " has id " + std::to_string(*value) +
                      " but already has id " + std::to_string(entry->second));
    }
    const auto [owner, fresh] = owners_.emplace(*value, &entry->first);
    if (!fresh)
      fail(file_, "tokens " + quoted_name(*owner->second) + " and " + quoted_name(token) + " both have id " +
                      std::to_string(*value));
    vocabulary_.size = std::max(vocabulary_.size, *value + 1);
  }

  /// The vocabulary; throws when nothing was added.
  token_vocabulary finish() {
    if (vocabulary_.ids.empty()) fail(file_, "no vocabulary (no tokens found)");
    return std::move(vocabulary_);
  }

 private:
  std::filesystem::path file_;
  token_vocabulary vocabulary_;
  std::unordered_map<std::int64_t, const std::string*> owners_;  // id -> key in vocabulary_
};

}  // namespace detail

/// Reads the vocabulary of a Hugging Face `tokenizer.json`: model.vocab (an object
/// token -> id for BPE, WordPiece and WordLevel; an array of [piece, score] for Unigram,
/// where the id is the position) plus the top-level added_tokens.
/// @param[in] file  tokenizer.json
inline token_vocabulary read_tokenizer_json(const std::filesystem::path& file) {
  // nlohmann::json, not ordered_json: vocabularies run to 250k entries.
  const auto document = detail::read_json_file<nlohmann::json>(file);
  return detail::naming_file(file, [&] {
    if (!document.is_object()) detail::fail(file, "not a JSON object");
    const auto model = document.find("model");
    if (model == document.end() || !model->is_object() || !model->contains("vocab"))
      detail::fail(file, "no vocabulary (model.vocab is missing)");
    const nlohmann::json& vocab = (*model)["vocab"];

    // Older files may omit model.type; the vocabulary's JSON shape still tells Unigram apart.
    std::string type;
    if (model->contains("type")) {
      if (!(*model)["type"].is_string()) detail::fail(file, "model.type is not a string");
      type = (*model)["type"].get<std::string>();
      if (type != "BPE" && type != "WordPiece" && type != "WordLevel" && type != "Unigram")
        detail::fail(file, "unsupported tokenizer model type " + detail::quoted_name(type));
    }
    const bool unigram = type == "Unigram" || (type.empty() && vocab.is_array());

    detail::vocabulary_builder builder(file);
    if (unigram) {
      if (!vocab.is_array()) detail::fail(file, "model.vocab of a Unigram model is not an array");
      std::int64_t id = 0;
      for (const nlohmann::json& entry : vocab) {
        if (!entry.is_array() || entry.empty() || !entry[0].is_string())
          detail::fail(file, "model.vocab[" + std::to_string(id) + "] is not a [piece, score] pair");
        builder.add(entry[0].get<std::string>(), id++, false);
      }
    } else {
      if (!vocab.is_object()) detail::fail(file, "model.vocab is not an object of token -> id");
      for (const auto& [token, id] : vocab.items()) builder.add(token, id, false);
    }

    if (const auto added = document.find("added_tokens"); added != document.end()) {
      if (!added->is_array()) detail::fail(file, "added_tokens is not an array");
      for (const nlohmann::json& token : *added) {
        if (!token.is_object() || !token.contains("id") || !token.contains("content") || !token["content"].is_string())
          detail::fail(file, "added_tokens holds an entry without \"id\" and \"content\"");
        builder.add(token["content"].get<std::string>(), token["id"], true);
      }
    }
    return builder.finish();
  });
}

/// Reads a `vocab.json`: one object token -> id (GPT-2 style tokenizers without
/// tokenizer.json).
/// @param[in] file  vocab.json
inline token_vocabulary read_vocab_json(const std::filesystem::path& file) {
  const auto document = detail::read_json_file<nlohmann::json>(file);
  return detail::naming_file(file, [&] {
    if (!document.is_object()) detail::fail(file, "not a JSON object of token -> id");
    detail::vocabulary_builder builder(file);
    for (const auto& [token, id] : document.items()) builder.add(token, id, false);
    return builder.finish();
  });
}

/// Reads the vocabulary of a model folder from tokenizer.json, or else vocab.json.
/// @param[in] folder  model directory
inline token_vocabulary read_vocabulary(const std::filesystem::path& folder) {
  if (std::filesystem::exists(folder / "tokenizer.json")) return read_tokenizer_json(folder / "tokenizer.json");
  if (std::filesystem::exists(folder / "vocab.json")) return read_vocab_json(folder / "vocab.json");
  detail::fail(folder, "no tokenizer.json or vocab.json to read the vocabulary from");
}

/// The tokenizer files present in `folder`, sorted by name: tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt and any *.model
/// (SentencePiece). An output model needs them to be loadable with its new vocabulary.
/// @param[in] folder  model directory
inline std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder) {
  static constexpr std::array<std::string_view, 5> names = {"tokenizer.json", "tokenizer_config.json",
                                                            "special_tokens_map.json", "vocab.json", "merges.txt"};
  std::error_code error;
  std::filesystem::directory_iterator items(folder, error);
  if (error) detail::fail(folder, "cannot list: " + error.message());
  std::vector<std::filesystem::path> files;
  for (const auto& item : items) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file(error) &&
        (std::find(names.begin(), names.end(), name) != names.end() || item.path().extension() == ".model"))
      files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Name endings of an input embedding matrix, by family: wte.weight (GPT-2, GPT-J),
/// embed_tokens.weight (Llama, Mistral, OPT, BART), word_embeddings.weight (BLOOM),
/// embed_in.weight (GPT-NeoX, Pythia), tok_embeddings.weight (Meta's original Llama
/// layout), embeddings.word_embeddings.weight (BERT, RoBERTa), shared.weight (T5, BART).
inline constexpr std::array<std::string_view, 7> input_embedding_suffixes = {
    "wte.weight",      "embed_tokens.weight",   "word_embeddings.weight",
    "embed_in.weight", "tok_embeddings.weight", "embeddings.word_embeddings.weight",
    "shared.weight"};

/// Name endings of an untied output head (lm_head.weight: most families; embed_out.weight:
/// GPT-NeoX; output.weight: Meta's original Llama layout). A checkpoint without one ties
/// the head to the input embedding.
inline constexpr std::array<std::string_view, 3> output_embedding_suffixes = {"lm_head.weight", "embed_out.weight",
                                                                              "output.weight"};

/// Model roots that transformers puts in front of the embedding's name. A match with no
/// prefix or one of these is the model's own embedding, preferred over look-alikes deeper in
/// the tree (T5's encoder.embed_tokens.weight next to shared.weight).
inline constexpr std::array<std::string_view, 3> embedding_name_roots = {"model", "transformer", "gpt_neox"};

namespace detail {

/// Picks the single tensor among `names` that ends with one of `suffixes` (at a "."
/// boundary, and outside numbered blocks such as layers.3), preferring a full well-known
/// name when several match; nullopt when none does.
/// @param[in] where     checkpoint, for messages
/// @param[in] names     every tensor name in the checkpoint
/// @param[in] suffixes  input_embedding_suffixes or output_embedding_suffixes
/// @param[in] what      "input embedding" or "output head", for messages
template <std::size_t N>
std::optional<std::string> find_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                          const std::array<std::string_view, N>& suffixes, const std::string& what) {
  std::vector<std::string> candidates, full_names;
  for (const std::string& name : names) {
    for (std::string_view suffix : suffixes) {
      const std::string_view whole = name;
      if (whole.size() < suffix.size() || whole.substr(whole.size() - suffix.size()) != suffix) continue;
      std::string_view prefix = whole.substr(0, whole.size() - suffix.size());
      if (!prefix.empty() && prefix.back() != '.') continue;
      if (!prefix.empty()) prefix.remove_suffix(1);
      bool in_numbered_block = false;
      for (std::size_t start = 0; start < prefix.size();) {
        const std::size_t end = std::min(prefix.find('.', start), prefix.size());
        const std::string_view part = prefix.substr(start, end - start);
        in_numbered_block |= !part.empty() && part.find_first_not_of("0123456789") == part.npos;
        start = end + 1;
      }
      if (in_numbered_block) continue;
      candidates.push_back(name);
      if (prefix.empty() ||
          std::find(embedding_name_roots.begin(), embedding_name_roots.end(), prefix) != embedding_name_roots.end())
        full_names.push_back(name);
      break;
    }
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return candidates.front();
  if (full_names.size() == 1) return full_names.front();
  std::string list;
  for (const std::string& name : candidates) list += (list.empty() ? "" : ", ") + quoted_name(name);
  fail(where, "several tensors could be the " + what + " (" + list + "); name one explicitly");
}

/// Checks that an explicitly named tensor exists.
/// @param[in] where  checkpoint, for messages
/// @param[in] names  every tensor name in the checkpoint
/// @param[in] name   the name given
inline void require_tensor(const std::filesystem::path& where, const std::vector<std::string>& names,
                           const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end())
    fail(where, "no tensor " + quoted_name(name) + " (named explicitly) in the checkpoint");
}

}  // namespace detail

/// The input embedding's tensor name: `explicit_name` when given, else found by
/// input_embedding_suffixes; throws naming `where` when none or several ambiguous ones match.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
inline std::string find_input_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                        const std::string& explicit_name = {}) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  if (auto found = detail::find_embedding(where, names, input_embedding_suffixes, "input embedding")) return *found;
  std::string list;
  for (std::string_view suffix : input_embedding_suffixes) list += (list.empty() ? "" : ", ") + std::string(suffix);
  detail::fail(where, "no input embedding among " + std::to_string(names.size()) +
                          " tensors (looked for names ending in " + list + "); name it explicitly");
}

/// The untied output head's tensor name, or nullopt when the head is tied to the input
/// embedding: `explicit_name` when given, else found by output_embedding_suffixes.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
inline std::optional<std::string> find_output_embedding(const std::filesystem::path& where,
                                                        const std::vector<std::string>& names,
                                                        const std::string& explicit_name = {}) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  return detail::find_embedding(where, names, output_embedding_suffixes, "output head");
}

/// config.json keys holding special-token ids. Their values index the source vocabulary, so a
/// transferred model must take them from the helper model, which shares its tokenizer.
inline constexpr std::array<std::string_view, 8> special_token_id_keys = {
    "bos_token_id", "eos_token_id", "pad_token_id",  "unk_token_id",
    "sep_token_id", "cls_token_id", "mask_token_id", "decoder_start_token_id"};

namespace detail {

/// The first of `keys` present in `config` as a positive integer; throws naming `file` when
/// none is present or the value is not a positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
/// @param[in] keys    accepted spellings, in order of preference
template <std::size_t N>
std::int64_t positive_config_value(const nlohmann::ordered_json& config, const std::filesystem::path& file,
                                   const std::array<std::string_view, N>& keys) {
  if (!config.is_object()) fail(file, "not a JSON object");
  for (std::string_view key : keys) {
    const auto it = config.find(std::string(key));
    if (it == config.end()) continue;
    const auto value = as_int64(*it);
    if (!value || *value <= 0) fail(file, std::string(key) + " is " + json_excerpt(*it) + ", not a positive integer");
    return *value;
  }
  std::string list;
  for (std::string_view key : keys) list += (list.empty() ? "" : " or ") + std::string(key);
  fail(file, "no " + list);
}

}  // namespace detail

/// The model's vocab_size.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::int64_t config_vocab_size(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  return detail::positive_config_value(config, file, std::array<std::string_view, 1>{"vocab_size"});
}

/// The model's hidden size, under whichever name its family uses: n_embd (GPT-2),
/// hidden_size (most), d_model (T5, BART).
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::int64_t config_hidden_size(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  return detail::positive_config_value(config, file,
                                       std::array<std::string_view, 3>{"n_embd", "hidden_size", "d_model"});
}

/// The config to write for a transferred model: the source's, key order kept, with
/// vocab_size replaced and every special_token_id_keys entry taken from the helper. A key
/// the helper lacks is dropped rather than kept, since the source's id would name an
/// unrelated token of the new vocabulary.
/// @param[in] source      the source model's config.json
/// @param[in] helper      the helper model's config.json
/// @param[in] vocab_size  rows of the new embedding
inline nlohmann::ordered_json target_config(const nlohmann::ordered_json& source, const nlohmann::ordered_json& helper,
                                            std::int64_t vocab_size) {
  nlohmann::ordered_json config = source;
  config["vocab_size"] = vocab_size;
  for (std::string_view key : special_token_id_keys) {
    const std::string name(key);
    if (helper.contains(name))
      config[name] = helper[name];
    else
      config.erase(name);
  }
  return config;
}

/// One tensor of a model folder and the shard holding it.
struct located_tensor {
  const safetensors_file& file;
  const tensor_entry& tensor;
};

/// A Hugging Face model directory: config.json and the safetensors weights, either
/// model.safetensors or the shards named by model.safetensors.index.json. Opening validates
/// every weight file's header and the index against the shards; no tensor data is read.
class model_folder {
 public:
  /// Opens `directory`; throws naming the file at fault.
  /// @param[in] directory  model folder
  explicit model_folder(std::filesystem::path directory) : directory_(std::move(directory)) {
    if (!std::filesystem::is_directory(directory_)) detail::fail(directory_, "not a directory");
    config_ = detail::read_json_file<nlohmann::ordered_json>(directory_ / "config.json");
    if (!config_.is_object()) detail::fail(directory_ / "config.json", "not a JSON object");
    if (std::filesystem::exists(directory_ / "model.safetensors")) {
      shards_.emplace_back(directory_ / "model.safetensors");
    } else if (std::filesystem::exists(directory_ / "model.safetensors.index.json")) {
      index_path_ = directory_ / "model.safetensors.index.json";
      open_shards();
    } else {
      detail::fail(directory_, "no model.safetensors or model.safetensors.index.json" +
                                   std::string(std::filesystem::exists(directory_ / "pytorch_model.bin")
                                                   ? " (pytorch_model.bin is not read: convert it to safetensors)"
                                                   : ""));
    }
  }

  const std::filesystem::path& directory() const noexcept { return directory_; }
  /// config.json with its key order kept, so that a rewritten copy diffs cleanly.
  const nlohmann::ordered_json& config() const noexcept { return config_; }
  /// Weight files: model.safetensors alone, or the shards in order of first appearance in
  /// the index's weight_map.
  const std::vector<safetensors_file>& shards() const noexcept { return shards_; }
  /// model.safetensors.index.json, or empty when the weights are a single file.
  const std::filesystem::path& index_path() const noexcept { return index_path_; }

  /// Every tensor name, shard by shard in file order.
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> names;
    for (const safetensors_file& shard : shards_)
      for (const tensor_entry& tensor : shard.tensors()) names.push_back(tensor.name);
    return names;
  }

  /// The tensor called `name` and its shard; throws naming the folder when none holds it.
  /// @param[in] name  tensor name
  located_tensor locate(std::string_view name) const {
    for (const safetensors_file& shard : shards_)
      if (const tensor_entry* tensor = shard.find(name)) return {shard, *tensor};
    detail::fail(directory_, "no tensor " + detail::quoted_name(name) + " in any weight file");
  }

 private:
  void open_shards() {
    const auto index = detail::read_json_file<nlohmann::ordered_json>(index_path_);
    detail::naming_file(index_path_, [&] { open_shards(index); });
  }

  void open_shards(const nlohmann::ordered_json& index) {
    const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
    if (weight_map == index.end() || !weight_map->is_object() || weight_map->empty())
      detail::fail(index_path_, "no weight_map object of tensor name -> shard file");

    std::vector<std::string> shard_names;
    for (const auto& [tensor, shard] : weight_map->items()) {
      if (!shard.is_string())
        detail::fail(index_path_, "tensor " + detail::quoted_name(tensor) + " maps to " + detail::json_excerpt(shard) +
                                      ", not a file name");
      const std::string name = shard.get<std::string>();
      // Shards live in the folder itself; a path here would reach outside it. A NUL would
      // end the name early at open(): another file than the one named. No shard's name holds
      // a control character (a line break in it would break the one-line messages).
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
          std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        detail::fail(index_path_, "shard " + detail::quoted_name(name) + " is not a file name");
      if (std::find(shard_names.begin(), shard_names.end(), name) == shard_names.end()) shard_names.push_back(name);
    }
    for (const std::string& name : shard_names) shards_.emplace_back(directory_ / name);

    for (const auto& [tensor, shard] : weight_map->items()) {
      const auto position = std::find(shard_names.begin(), shard_names.end(), shard.get<std::string>());
      if (!shards_[static_cast<std::size_t>(position - shard_names.begin())].find(tensor))
        detail::fail(index_path_, "tensor " + detail::quoted_name(tensor) + " is mapped to " +
                                      detail::quoted_name(*position) + ", which does not hold it");
    }
  }

  std::filesystem::path directory_;
  nlohmann::ordered_json config_;
  std::filesystem::path index_path_;
  std::vector<safetensors_file> shards_;
};

namespace detail {

/// `output` without a trailing separator ("out/" names the directory "out").
/// @param[in] output  output path as given
inline std::filesystem::path without_trailing_separator(std::filesystem::path output) {
  return output.filename().empty() ? output.parent_path() : output;
}

/// The directory that will hold `output`: its parent, or "." for a bare name.
/// @param[in] output  output path without trailing separator
inline std::filesystem::path parent_directory(const std::filesystem::path& output) {
  return output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
}

}  // namespace detail

/// Throws "OUT: already exists (use --force to replace it)" when `output` exists and `force`
/// is false, and an error when its parent directory is missing. Call it before any work, so
/// that a long run does not end in a refusal.
/// @param[in] output  output directory to be created
/// @param[in] force   whether an existing output may be replaced
inline void check_output_available(const std::filesystem::path& output, bool force) {
  const std::filesystem::path target = detail::without_trailing_separator(output);
  std::error_code ignored;
  if (!force && std::filesystem::exists(std::filesystem::symlink_status(target, ignored)))
    detail::fail(target, "already exists (use --force to replace it)");
  if (!std::filesystem::is_directory(detail::parent_directory(target), ignored))
    detail::fail(target, "parent directory " + detail::parent_directory(target).string() + " does not exist");
}

/// A temporary directory beside an output path that becomes the output only by commit().
/// Writing everything into it first means that a failed or interrupted run never leaves a
/// half-written model under the output's name; being in the same parent makes the final
/// rename atomic. Destroyed without commit(), it removes itself and everything in it.
class staging_directory {
 public:
  /// Creates an empty `.NAME.tmp-XXXXXX` directory beside `output`.
  /// @param[in] output  final output directory (need not exist; its parent must)
  explicit staging_directory(const std::filesystem::path& output)
      : target_(detail::without_trailing_separator(output)) {
    std::string pattern =
        (detail::parent_directory(target_) / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      detail::fail(pattern, detail::with_errno("cannot create a staging directory"));
    path_ = pattern;
    // mkdtemp makes the directory private (0700); the committed output should get the
    // permissions a plain mkdir would give. umask can only be read by setting it.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(path_.c_str(), 0777 & ~mask);
  }

  staging_directory(const staging_directory&) = delete;
  staging_directory& operator=(const staging_directory&) = delete;

  ~staging_directory() {
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }

  /// The staging directory to write into.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Renames the staging directory to the output path. With `force`, an existing output is
  /// first renamed aside and removed only after the new one is in place, so a failure at any
  /// step leaves the old output where it was.
  /// @param[in] force  whether an existing output may be replaced
  void commit(bool force) {
    std::error_code ignored;
    if (!std::filesystem::exists(std::filesystem::symlink_status(target_, ignored))) {
      if (std::rename(path_.c_str(), target_.c_str()) != 0)
        detail::fail(target_, detail::with_errno("cannot move the new output into place"));
      committed_ = true;
      return;
    }
    if (!force) detail::fail(target_, "already exists (use --force to replace it)");
    // The staging name is unique (mkdtemp), so the name derived from it is free as well.
    const std::filesystem::path aside = path_.string() + ".old";
    if (std::rename(target_.c_str(), aside.c_str()) != 0)
      detail::fail(target_, detail::with_errno("cannot move the old output aside"));
    if (std::rename(path_.c_str(), target_.c_str()) != 0) {
      const std::string problem = detail::with_errno("cannot move the new output into place");
      if (std::rename(aside.c_str(), target_.c_str()) != 0)
        detail::fail(target_, problem + "; the old output is now at " + aside.string());
      detail::fail(target_, problem);
    }
    committed_ = true;
    std::filesystem::remove_all(aside, ignored);  // a leftover would only cost disk space
  }

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  bool committed_ = false;
};

}  // namespace clp::io
