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
inline tokenizer_reading read_vocabulary_source(const io::vocabulary_source& source,
                                                const nlohmann::ordered_json* tokenizer_config) {
  switch (source.format) {
    case io::vocabulary_format::tokenizer_json:
      return read_tokenizer_json_file(source.file);
    case io::vocabulary_format::vocab_json:
      return read_vocab_file(source.file, tokenizer_config);
    case io::vocabulary_format::sentencepiece:
      return read_sentencepiece_file(source.file);
    case io::vocabulary_format::wordpiece:
      break;
  }
  return read_vocab_txt_file(source.file, tokenizer_config);
}

/// Checks every SentencePiece model of `folder` other than the file `reading` came from against
/// its vocabulary (io::check_sentencepiece_agrees), so that two files that disagree are refused
/// rather than one of them used. A tiktoken file cannot be checked: it is named in a note.
inline void check_models_beside(const std::filesystem::path& folder, tokenizer_reading& reading) {
  for (const std::filesystem::path& model : io::sentencepiece_models_beside(folder, reading.file)) {
    if (io::is_tiktoken_file(model)) {
      reading.notes.push_back(model.string() + " holds tiktoken's BPE ranks, not a SentencePiece model: not " +
                              "checked against " + reading.file.filename().string());
      continue;
    }
    io::check_sentencepiece_agrees(model, io::read_sentencepiece_model(model), reading.file, reading.vocabulary);
  }
}

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
inline tokenizer_reading read_folder_tokenizer(const std::filesystem::path& folder,
                                               const nlohmann::ordered_json* tokenizer_config) {
  const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(folder);
  if (!source) io::no_vocabulary_file(folder);
  tokenizer_reading reading = detail::read_vocabulary_source(*source, tokenizer_config);
  detail::check_models_beside(folder, reading);
  return reading;
}

/// The vocabulary and spelling of the tokenizer at `path`: a model folder (see
/// read_folder_tokenizer), a tokenizer.json, a SentencePiece model (*.model), a vocab.txt, or a
/// vocab.json / encoder.json (any file of token -> id). Each file is read once. Throws naming
/// the file when it cannot be read.
/// @param[in] path  model folder or tokenizer file
inline tokenizer_reading read_tokenizer(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    // tokenizer_config.json tells only a vocab.json's or a vocab.txt's spelling.
    const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(path);
    const auto config = source && detail::needs_tokenizer_config(*source) ? tokenizer_config_beside(source->file)
                                                                          : std::nullopt;
    return read_folder_tokenizer(path, config ? &*config : nullptr);
  }
  if (!std::filesystem::exists(path)) io::missing_path(path);
  if (path.extension() == ".model") return detail::read_sentencepiece_file(path);
  if (path.filename() == "vocab.txt") {
    const auto config = tokenizer_config_beside(path);
    return detail::read_vocab_txt_file(path, config ? &*config : nullptr);
  }
  if (path.filename() == "encoder.json") return detail::read_vocab_file(path, nullptr);
  if (path.filename() == "vocab.json") {
    const auto config = tokenizer_config_beside(path);
    return detail::read_vocab_file(path, config ? &*config : nullptr);
  }
  // Any other JSON file is a tokenizer.json or a vocab.json: one pass reads it and tells which.
  io::json_vocabulary read = io::read_json_vocabulary(path);
  if (read.is_tokenizer_json)
    return {path, std::move(read.contents.vocabulary), spelling_from_declarations(read.contents.declarations), {}};
  const auto config = tokenizer_config_beside(path);
  return {path, std::move(read.contents.vocabulary), spelling_of_vocab_file(path, config ? &*config : nullptr), {}};
}

}  // namespace clp_transfer
