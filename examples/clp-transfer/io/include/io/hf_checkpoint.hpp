// A Hugging Face model folder, read once: every file a run of the program reads from a model
// folder is read here, into one value that every phase then uses (config.json for the sizes,
// the special tokens and the output's config; generation_config.json for the special tokens and
// the output's; tokenizer_config.json for the special tokens and a vocab.json's or vocab.txt's
// spelling; the weights' headers (safetensors headers, or a pytorch_model.bin's archive and
// pickle) and the shard index for the tensors and the output's index; the tokenizer file, and
// the SentencePiece models checked against it). No file is opened twice; the tensor data is
// mapped later, by the phases that need it.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/model_weights.hpp"
#include "io/tokenizer/reading.hpp"

namespace clp_transfer {

/// The small JSON files of a model folder that name tokens and settings, as read (key order
/// kept); nullopt where the folder has no such file. Any JSON document is kept: a file that is
/// not an object is refused or ignored by the code that reads it, whose rules differ.
struct model_json_files {
  std::filesystem::path folder;  ///< where they are, for messages
  std::optional<nlohmann::ordered_json> config, generation_config, tokenizer_config, special_tokens_map;

  /// Reads those of config.json (unless `config` is false), generation_config.json,
  /// tokenizer_config.json and special_tokens_map.json that `folder` holds; throws naming a file
  /// that is not JSON.
  static model_json_files read(const std::filesystem::path& folder, bool config = true) {
    const auto optional = [&](const char* name) {
      return io::read_json_file_if_present<nlohmann::ordered_json>(folder / name);
    };
    model_json_files files;
    files.folder = folder;
    if (config) files.config = optional("config.json");
    files.generation_config = optional("generation_config.json");
    files.tokenizer_config = optional("tokenizer_config.json");
    files.special_tokens_map = optional("special_tokens_map.json");
    return files;
  }

  /// The path of file `name` of the folder, for messages.
  std::filesystem::path path(const char* name) const { return folder / name; }
};

/// A model folder as the program uses it: its JSON files, its weights (headers only) and its
/// tokenizer (vocabulary and spelling).
struct hf_checkpoint {
  std::filesystem::path folder;
  model_json_files json;  ///< json.config is always there, and a JSON object
  io::model_weights weights;
  tokenizer_reading tokenizer;

  /// config.json.
  const nlohmann::ordered_json& config() const { return *json.config; }
  /// config.json's path, for messages.
  std::filesystem::path config_file() const { return json.path("config.json"); }

  /// Reads the model folder `folder`: config.json (which must be there, a JSON object), the
  /// weights' headers, the other JSON files, then the tokenizer. Throws naming the file at
  /// fault, the first in that order: io_error for a folder or file that cannot be opened,
  /// malformed_file for one that is wrong. `headers_read`, when given, is called with the
  /// weights as soon as their headers are read, before the tokenizer is parsed (read_models.hpp
  /// starts bringing in the embeddings' pages there).
  static hf_checkpoint read(const std::filesystem::path& folder,
                            const std::function<void(const io::model_weights&)>& headers_read = {}) {
    std::error_code ignored;
    if (!std::filesystem::is_directory(folder, ignored)) io::missing_folder(folder);
    const std::filesystem::path config_file = folder / "config.json";
    auto config = io::read_json_file<nlohmann::ordered_json>(config_file);
    if (!config.is_object()) io::malformed(config_file, "not a JSON object");
    io::model_weights weights(folder);
    if (headers_read) headers_read(weights);
    model_json_files json = model_json_files::read(folder, /*config=*/false);
    json.config = std::move(config);
    const nlohmann::ordered_json* tokenizer_config = json.tokenizer_config ? &*json.tokenizer_config : nullptr;
    tokenizer_reading tokenizer = read_folder_tokenizer(folder, tokenizer_config);
    return {folder, std::move(json), std::move(weights), std::move(tokenizer)};
  }
};

}  // namespace clp_transfer
