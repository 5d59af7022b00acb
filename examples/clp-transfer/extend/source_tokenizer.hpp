// The source's tokenizer as `extend` reads and writes it: the folder's tokenizer.json, parsed
// with its key order kept, its BPE model and the contents of its added tokens; or, in a folder
// without one, its SentencePiece BPE model (extend/sentencepiece_bpe.hpp). Then the files the
// output holds in their place: the extended tokenizer.json, vocab.json and merges.txt (where the
// folder has them) or the extended SentencePiece model, and the folder's other tokenizer files
// as they are.
#pragma once

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/refusal.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/tokenizer_writing.hpp"
#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "transfer/output_vocabulary.hpp"

namespace clp_transfer {

/// The source's tokenizer, read for extension: a tokenizer.json, or a SentencePiece BPE model.
struct source_tokenizer {
  std::filesystem::path file;       ///< the folder's tokenizer.json, or its SentencePiece model
  nlohmann::ordered_json document;  ///< a tokenizer.json as parsed, key order kept
  /// A SentencePiece model (the folder has no tokenizer.json): as read, and its bytes.
  std::optional<io::sentencepiece_model> sentencepiece;
  std::string sentencepiece_bytes;
  extend::bpe_model model;
  /// The content of each entry of added_tokens: tokens outside model.vocab that a new token
  /// must not repeat.
  std::vector<std::string> added_contents;
};

namespace detail {

/// What a model folder's vocabulary file is, for the refusal of one extend cannot write into.
inline std::string format_words(io::vocabulary_format format) {
  switch (format) {
    case io::vocabulary_format::sentencepiece:
      return "a SentencePiece model";
    case io::vocabulary_format::wordpiece:
      return "a WordPiece vocab.txt";
    case io::vocabulary_format::vocab_json:
      return "a vocab.json without a tokenizer.json";
    case io::vocabulary_format::tokenizer_json:
      break;
  }
  return "a tokenizer.json";
}

}  // namespace detail

/// Reads the tokenizer of the model folder `folder` for extension. Throws naming the file: the
/// folder has no vocabulary file (clp::malformed_file), its vocabulary is not in a tokenizer.json
/// or that file's model is not a BPE that extend reproduces exactly (clp::invalid_argument, in
/// read_bpe_model's words), or the file is malformed.
inline source_tokenizer read_source_tokenizer(const std::filesystem::path& folder) {
  std::error_code ignored;  // refused as transfer refuses it: missing, or not a folder
  if (!std::filesystem::is_directory(folder, ignored)) io::missing_folder(folder);
  const std::optional<io::vocabulary_source> found = io::find_vocabulary_file(folder);
  if (!found) io::no_vocabulary_file(folder);
  source_tokenizer tokenizer;
  tokenizer.file = found->file;
  if (found->format == io::vocabulary_format::sentencepiece) {
    tokenizer.sentencepiece_bytes = io::read_text_file(found->file);
    tokenizer.sentencepiece = io::parse_sentencepiece_model(found->file, tokenizer.sentencepiece_bytes);
    extend::check_sentencepiece_bpe(*tokenizer.sentencepiece, found->file.string());
    tokenizer.model = extend::sentencepiece_bpe_model(tokenizer.sentencepiece->pieces, *tokenizer.sentencepiece);
    return tokenizer;
  }
  if (found->format != io::vocabulary_format::tokenizer_json)
    extend::unsupported(found->file.string(),
                        detail::format_words(found->format) +
                            " cannot be extended: extend writes BPE merges into a tokenizer.json or BPE pieces into a "
                            "SentencePiece model (WordPiece vocab.txt is not supported yet)");
  tokenizer.document = extend::parse_ordered_json(io::read_text_file(found->file), found->file.string());
  tokenizer.model = extend::read_bpe_model(tokenizer.document, found->file.string());
  if (const auto added = tokenizer.document.find("added_tokens");
      added != tokenizer.document.end() && added->is_array())
    for (const nlohmann::ordered_json& entry : *added)
      if (const auto content = entry.find("content"); content != entry.end() && content->is_string())
        tokenizer.added_contents.push_back(content->get<std::string>());
  return tokenizer;
}

/// The output's tokenizer files: tokenizer.json, and vocab.json and merges.txt where `folder` has
/// them, extended by `extension` (written), and the folder's other tokenizer files (copied). A
/// SentencePiece model beside the tokenizer.json is left out: it would still hold the old
/// vocabulary.
/// @param[in]  folder      the source model folder
/// @param[in]  tokenizer   its tokenizer, as read_source_tokenizer read it
/// @param[in]  extension   the extension of tokenizer.model
/// @param[out] vocabulary  the files are added to its written_files and copied_files
/// @param[out] left_out    the SentencePiece models left out are added here
inline void extended_tokenizer_files(const std::filesystem::path& folder, const source_tokenizer& tokenizer,
                                     const extend::bpe_extension& extension, output_vocabulary& vocabulary,
                                     std::vector<std::filesystem::path>& left_out) {
  if (tokenizer.sentencepiece) {
    vocabulary.written_files.push_back(
        {tokenizer.file.filename().string(),
         io::append_sentencepiece_pieces(tokenizer.sentencepiece_bytes,
                                         extend::appended_pieces(*tokenizer.sentencepiece, extension,
                                                                 tokenizer.file.string()))});
    for (const std::filesystem::path& file : io::tokenizer_files(folder))
      if (file.filename() != tokenizer.file.filename()) vocabulary.copied_files.push_back(file);
    return;
  }
  vocabulary.written_files.push_back(
      {"tokenizer.json",
       extend::extended_tokenizer_json(tokenizer.document, extension, tokenizer.file.string()).dump(2) + "\n"});
  for (const std::filesystem::path& file : io::tokenizer_files(folder)) {
    const std::string name = file.filename().string();
    if (name == "tokenizer.json") continue;
    if (name == "vocab.json") {
      const nlohmann::ordered_json vocab = extend::parse_ordered_json(io::read_text_file(file), file.string());
      vocabulary.written_files.push_back(
          {name, extend::extended_vocab_json(vocab, extension, file.string()).dump() + "\n"});
    } else if (name == "merges.txt") {
      vocabulary.written_files.push_back(
          {name, extend::extended_merges_txt(io::read_text_file(file), extension, file.string())});
    } else if (file.extension() == ".model") {
      left_out.push_back(file);
    } else {
      vocabulary.copied_files.push_back(file);
    }
  }
}

}  // namespace clp_transfer
