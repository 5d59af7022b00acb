// The tokenizer files of a model folder: which file its vocabulary is read from (tokenizer.json,
// else vocab.json, else a SentencePiece model, else a WordPiece vocab.txt), which SentencePiece
// models beside it are checked against it, and which files an output model needs to be
// loadable with the new vocabulary.
#pragma once

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "io/tokenizer/wordpiece.hpp"

namespace clp_transfer::io {

/// The names a SentencePiece model goes by in a model folder, in the order they are looked for:
/// Llama's, T5's, XLM-R's and mBART's, DeBERTa-v3's.
inline constexpr std::array<std::string_view, 4> sentencepiece_model_names = {
    "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "spm.model"};

/// The kinds of file a vocabulary is read from.
enum class vocabulary_format { tokenizer_json, vocab_json, sentencepiece, wordpiece };

/// A file of a model folder that holds its vocabulary, and how to read it.
struct vocabulary_source {
  std::filesystem::path file;
  vocabulary_format format = vocabulary_format::tokenizer_json;
};

/// The file `folder`'s vocabulary is read from: tokenizer.json, else vocab.json, else the first
/// of sentencepiece_model_names, else vocab.txt; nullopt when it has none of them.
/// @param[in] folder  model folder
inline std::optional<vocabulary_source> find_vocabulary_file(const std::filesystem::path& folder) {
  std::error_code ignored;
  const auto present = [&](std::string_view name) { return std::filesystem::exists(folder / name, ignored); };
  if (present("tokenizer.json")) return vocabulary_source{folder / "tokenizer.json", vocabulary_format::tokenizer_json};
  if (present("vocab.json")) return vocabulary_source{folder / "vocab.json", vocabulary_format::vocab_json};
  for (std::string_view name : sentencepiece_model_names)
    if (present(name)) return vocabulary_source{folder / name, vocabulary_format::sentencepiece};
  if (present("vocab.txt")) return vocabulary_source{folder / "vocab.txt", vocabulary_format::wordpiece};
  return std::nullopt;
}

/// The refusal of a folder without a vocabulary file.
[[noreturn]] inline void no_vocabulary_file(const std::filesystem::path& folder) {
  malformed(folder, "no tokenizer.json, vocab.json, SentencePiece model (tokenizer.model, spiece.model, "
                    "sentencepiece.bpe.model, spm.model) or vocab.txt to read the vocabulary from");
}

/// The SentencePiece models of `folder` other than `read` (the file its vocabulary came from):
/// each must agree with that vocabulary.
inline std::vector<std::filesystem::path> sentencepiece_models_beside(const std::filesystem::path& folder,
                                                                      const std::filesystem::path& read) {
  std::vector<std::filesystem::path> models;
  std::error_code ignored;
  for (std::string_view name : sentencepiece_model_names)
    if (folder / name != read && std::filesystem::exists(folder / name, ignored)) models.push_back(folder / name);
  return models;
}

/// The vocabulary of `source.file`, read as `source.format`.
inline token_vocabulary read_vocabulary_file(const vocabulary_source& source) {
  switch (source.format) {
    case vocabulary_format::tokenizer_json:
      return read_tokenizer_json(source.file).vocabulary;
    case vocabulary_format::vocab_json:
      return read_vocab_json(source.file);
    case vocabulary_format::sentencepiece:
      return sentencepiece_vocabulary(source.file, read_sentencepiece_model(source.file));
    case vocabulary_format::wordpiece:
      break;
  }
  return read_wordpiece_vocab(source.file);
}

/// Reads the vocabulary of a model folder from the file find_vocabulary_file names; throws
/// malformed_file naming the folder when it has none.
/// @param[in] folder  model folder
inline token_vocabulary read_vocabulary(const std::filesystem::path& folder) {
  const std::optional<vocabulary_source> source = find_vocabulary_file(folder);
  if (!source) no_vocabulary_file(folder);
  return read_vocabulary_file(*source);
}

/// The tokenizer files present in `folder`, sorted by name: tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt, vocab.txt and any
/// *.model (SentencePiece). An output model needs them to be loadable with its new vocabulary.
/// @param[in] folder  model folder
inline std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder) {
  static constexpr std::array<std::string_view, 6> names = {
      "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "vocab.txt"};
  std::error_code error;
  std::filesystem::directory_iterator items(folder, error);
  if (error) throw io_error(folder, "cannot list: " + error.message());
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

}  // namespace clp_transfer::io
