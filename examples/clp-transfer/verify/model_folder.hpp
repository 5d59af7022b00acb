// A model folder as `verify` reads it: like io/hf_checkpoint.hpp, but a file that is missing or
// refused by its reader becomes a finding instead of ending the run, so that one bad file does
// not hide what is wrong with the others. The checks take the parts borrowed (folder_view), so
// that a command holding an hf_checkpoint already runs them without reading anything again.
#pragma once

#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "io/model_weights.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "verify/finding.hpp"

namespace clp_transfer::verify {

/// Tensor names the user gives instead of letting them be found (as `transfer` takes them).
struct tensor_choice {
  std::string embedding;  ///< the input embedding; empty: found by name
  std::string head;       ///< the untied output head; empty: found by name
};

/// A tokenizer's vocabulary and the file it was read from, borrowed.
struct vocabulary_view {
  std::filesystem::path file;
  const io::token_vocabulary* vocabulary = nullptr;  ///< null: the folder has none that could be read
};

/// The parts of a model folder the checks read, borrowed from their owner.
struct folder_view {
  std::filesystem::path folder;
  const model_json_files* json = nullptr;      ///< never null; json->config is nullopt when unusable
  const io::model_weights* weights = nullptr;  ///< null: no weights that could be read
  vocabulary_view tokenizer;
  tensor_choice names;
};

/// A model folder read for verification: its parts, and a finding for each file that could not
/// be read. Move-only (the weights hold open files).
struct folder_contents {
  std::filesystem::path folder;
  model_json_files json;
  std::optional<io::model_weights> weights;
  std::optional<io::token_vocabulary> vocabulary;
  std::filesystem::path vocabulary_file;
  std::vector<finding> findings;

  /// The parts, borrowed, for the checks.
  folder_view view(tensor_choice names = {}) const {
    return {folder,
            &json,
            weights ? &*weights : nullptr,
            {vocabulary_file, vocabulary ? &*vocabulary : nullptr},
            std::move(names)};
  }
};

namespace detail {

/// Runs `read`; a clp::error or io::file_error it throws becomes a finding naming the file it names (else `file`).
template <class Read>
void read_or_note(const std::filesystem::path& file, std::vector<finding>& findings, Read&& read) {
  try {
    read();
  } catch (const clp::error& error) {
    findings.push_back(finding_of_error(error, file));
  } catch (const io::file_error& error) {
    findings.push_back(finding_of_error(error, file));
  }
}

/// config.json, generation_config.json, tokenizer_config.json and special_tokens_map.json, each
/// read on its own; one that is not JSON is a finding and left out, and so is a config.json
/// that is missing or not a JSON object.
inline model_json_files read_json_files(const std::filesystem::path& folder, std::vector<finding>& findings) {
  model_json_files files;
  files.folder = folder;
  const auto optional = [&](std::optional<nlohmann::ordered_json>& slot, const char* name) {
    read_or_note(folder / name, findings,
                 [&] { slot = io::read_json_file_if_present<nlohmann::ordered_json>(folder / name); });
  };
  optional(files.config, "config.json");
  optional(files.generation_config, "generation_config.json");
  optional(files.tokenizer_config, "tokenizer_config.json");
  optional(files.special_tokens_map, "special_tokens_map.json");
  std::error_code ignored;
  if (!files.config && !std::filesystem::exists(folder / "config.json", ignored))
    findings.push_back(
        {finding_kind::unreadable, folder / "config.json", "missing; transformers cannot load the model without it"});
  if (files.config && !files.config->is_object()) {
    findings.push_back({finding_kind::unreadable, folder / "config.json",
                        "not a JSON object; transformers cannot load the model from it"});
    files.config.reset();
  }
  return files;
}

}  // namespace detail

/// Reads the model folder `folder` for verification: its JSON files, its weights' headers and
/// its tokenizer's vocabulary (the file io::find_vocabulary_file names), each on its own. Throws
/// io::io_error when `folder` is not a folder, and io::malformed_file when it holds none of
/// config.json, weights and a tokenizer: nothing there to verify.
/// @param[in] folder  model folder
inline folder_contents read_folder_contents(const std::filesystem::path& folder) {
  io::require_model_folder(folder);
  folder_contents contents;
  contents.folder = folder;
  contents.json = detail::read_json_files(folder, contents.findings);
  detail::read_or_note(folder, contents.findings, [&] { contents.weights.emplace(folder); });
  const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(folder);
  if (source) {
    contents.vocabulary_file = source->file;
    detail::read_or_note(source->file, contents.findings,
                         [&] { contents.vocabulary = io::read_vocabulary_file(*source); });
  } else {
    contents.findings.push_back({finding_kind::unreadable, folder,
                                 "no tokenizer (tokenizer.json, vocab.json, a SentencePiece model or vocab.txt); "
                                 "the model cannot be given text, and its token ids cannot be checked"});
  }
  return contents;
}

}  // namespace clp_transfer::verify
