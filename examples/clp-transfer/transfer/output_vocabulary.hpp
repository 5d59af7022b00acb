// The files of an output model that follow its vocabulary, beside the weights: config.json,
// generation_config.json and the tokenizer. write_output writes what it is given; which
// vocabulary that is, the command decides (`transfer`: the helper's, helper_vocabulary).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/language_model_config.hpp"
#include "io/tokenizer/files.hpp"
#include "library_names.hpp"
#include "special_tokens.hpp"
#include "transfer/read_models.hpp"

namespace clp_transfer {

/// A file the run makes in memory, to be written into the output under `name`.
struct file_text {
  std::string name;  ///< a file name, no folder
  std::string text;
};

/// The output's files that follow its vocabulary.
struct output_vocabulary {
  nlohmann::ordered_json config;                            ///< config.json
  std::optional<nlohmann::ordered_json> generation_config;  ///< generation_config.json; nullopt: none
  /// Tokenizer files copied as they are, under their own names (an existing tokenizer).
  std::vector<std::filesystem::path> copied_files;
  /// Tokenizer files written from memory (a tokenizer the run made).
  std::vector<file_text> written_files;
};

/// The source's config.json for the helper's vocabulary (transfer_config): vocab_size the
/// helper embedding's rows, the helper's special-token ids, and the source's other token ids
/// carried over by token; the report lists what became of those.
inline transferred_config helper_vocabulary_config(const loaded_models& models) {
  const hf_checkpoint& source = models.source.checkpoint;
  const hf_checkpoint& helper = models.helper.checkpoint;
  return transfer_config(source.config(), helper.config(), models.helper.embedding.rows(),
                         source.tokenizer.vocabulary.ids, helper.tokenizer.vocabulary.ids);
}

/// The helper's vocabulary as the output's: `config` (helper_vocabulary_config's), the
/// generation config the two models' files give (output_generation_config), and the helper's
/// tokenizer files, copied. Throws naming a generation_config.json that is not a JSON object or a
/// helper folder that cannot be listed.
inline output_vocabulary helper_vocabulary(const loaded_models& models, const transferred_config& config) {
  const hf_checkpoint& helper = models.helper.checkpoint;
  return {config.config,
          output_generation_config(models.source.checkpoint.json, helper.json),
          io::tokenizer_files(helper.folder),
          {}};
}

}  // namespace clp_transfer
