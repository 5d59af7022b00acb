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
  static model_json_files read(const std::filesystem::path& folder, bool config = true);

  /// The path of file `name` of the folder, for messages.
  std::filesystem::path path(const char* name) const { return folder / name; }
};

namespace io {

/// Refuses `folder` as every command that reads a model folder does, before reading it: io_error
/// when it does not exist or is not a folder, malformed_file when it holds none of config.json,
/// weights (model.safetensors, pytorch_model.bin or their index) and a tokenizer: not a model
/// folder. A folder with some of them passes; what it lacks is named by the reader that needs it.
void require_model_folder(const std::filesystem::path& folder);

}  // namespace io

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
                            const std::function<void(const io::model_weights&)>& headers_read = {});
};

}  // namespace clp_transfer
