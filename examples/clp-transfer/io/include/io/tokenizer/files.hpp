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
inline constexpr std::array<std::string_view, 4> sentencepiece_model_names = {"tokenizer.model", "spiece.model",
                                                                              "sentencepiece.bpe.model", "spm.model"};

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
std::optional<vocabulary_source> find_vocabulary_file(const std::filesystem::path& folder);

/// The refusal of a folder without a vocabulary file.
[[noreturn]] inline void no_vocabulary_file(const std::filesystem::path& folder) {
  malformed(folder,
            "no tokenizer.json, vocab.json, SentencePiece model (tokenizer.model, spiece.model, "
            "sentencepiece.bpe.model, spm.model) or vocab.txt to read the vocabulary from");
}

/// The SentencePiece models of `folder` other than `read` (the file its vocabulary came from):
/// each must agree with that vocabulary.
std::vector<std::filesystem::path> sentencepiece_models_beside(const std::filesystem::path& folder,
                                                               const std::filesystem::path& read);

/// The vocabulary of `source.file`, read as `source.format`.
token_vocabulary read_vocabulary_file(const vocabulary_source& source);

/// Reads the vocabulary of a model folder from the file find_vocabulary_file names; throws
/// malformed_file naming the folder when it has none.
/// @param[in] folder  model folder
token_vocabulary read_vocabulary(const std::filesystem::path& folder);

/// The tokenizer files present in `folder`, sorted by name: tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt, vocab.txt and any
/// *.model (SentencePiece). An output model needs them to be loadable with its new vocabulary.
/// @param[in] folder  model folder
std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder);

}  // namespace clp_transfer::io
