// A tokenizer as the program reads it for matching: its vocabulary and its spelling, from a model
// folder (tokenizer.json, else vocab.json, else a SentencePiece model, else vocab.txt; any other
// SentencePiece model of the folder checked against it) or from a tokenizer file named
// directly, each file read once.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/spelling.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "io/tokenizer/wordpiece.hpp"

namespace clp_transfer {

/// A tokenizer as matching needs it.
struct tokenizer_reading {
  std::filesystem::path file;  ///< the file the vocabulary came from, for messages
  io::token_vocabulary vocabulary;
  tokenizer_spelling spelling;
  /// Files of the folder that were not checked against the vocabulary, one line each, for the
  /// warnings.
  std::vector<std::string> notes;
};

namespace detail {

/// The vocabulary and spelling of a tokenizer.json, read in one pass.
inline tokenizer_reading read_tokenizer_json_file(const std::filesystem::path& file) {
  io::tokenizer_json_contents contents = io::read_tokenizer_json(file);
  return {file, std::move(contents.vocabulary), spelling_from_declarations(contents.declarations), {}};
}

/// The vocabulary and spelling of a vocab.json or encoder.json (any file of token -> id).
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
inline tokenizer_reading read_vocab_file(const std::filesystem::path& file,
                                         const nlohmann::ordered_json* tokenizer_config) {
  return {file, io::read_vocab_json(file), spelling_of_vocab_file(file, tokenizer_config), {}};
}

/// The vocabulary and spelling of a SentencePiece model.
inline tokenizer_reading read_sentencepiece_file(const std::filesystem::path& file) {
  const io::sentencepiece_model model = io::read_sentencepiece_model(file);
  return {file, io::sentencepiece_vocabulary(file, model), spelling_of_sentencepiece_model(model, file), {}};
}

/// The vocabulary and spelling of a WordPiece vocab.txt.
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
inline tokenizer_reading read_vocab_txt_file(const std::filesystem::path& file,
                                             const nlohmann::ordered_json* tokenizer_config) {
  return {file, io::read_wordpiece_vocab(file), spelling_of_vocab_txt(file, tokenizer_config), {}};
}

/// The vocabulary and spelling of `source`.
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
tokenizer_reading read_vocabulary_source(const io::vocabulary_source& source,
                                         const nlohmann::ordered_json* tokenizer_config);

/// Checks every SentencePiece model of `folder` other than the file `reading` came from against
/// its vocabulary (io::check_sentencepiece_agrees), so that two files that disagree are refused
/// rather than one of them used. A tiktoken file cannot be checked: it is named in a note.
void check_models_beside(const std::filesystem::path& folder, tokenizer_reading& reading);

/// Whether the vocabulary of `source` is spelt as tokenizer_config.json says (vocab.json and
/// vocab.txt, which declare nothing themselves).
inline bool needs_tokenizer_config(const io::vocabulary_source& source) {
  return source.format == io::vocabulary_format::vocab_json || source.format == io::vocabulary_format::wordpiece;
}

}  // namespace detail

/// The vocabulary and spelling of the tokenizer of a model folder, from the file
/// io::find_vocabulary_file names (tokenizer.json, else vocab.json, else a SentencePiece model,
/// else vocab.txt), every other SentencePiece model of the folder checked against it; throws
/// naming the folder when it has none, or naming a model that disagrees.
/// @param[in] folder            model folder
/// @param[in] tokenizer_config  its tokenizer_config.json, as read (null when absent): it tells
///                              the spelling of a vocab.json or vocab.txt
tokenizer_reading read_folder_tokenizer(const std::filesystem::path& folder,
                                        const nlohmann::ordered_json* tokenizer_config);

/// The vocabulary and spelling of the tokenizer at `path`: a model folder (see
/// read_folder_tokenizer), a tokenizer.json, a SentencePiece model (*.model), a vocab.txt, or a
/// vocab.json / encoder.json (any file of token -> id). Each file is read once. Throws naming
/// the file when it cannot be read.
/// @param[in] path  model folder or tokenizer file
tokenizer_reading read_tokenizer(const std::filesystem::path& path);

}  // namespace clp_transfer
