// The source's tokenizer as `extend` reads and writes it: the folder's tokenizer.json, parsed
// with its key order kept, its BPE model and the contents of its added tokens; or, in a folder
// without one, its SentencePiece BPE or Unigram model (extend/sentencepiece_bpe.hpp,
// extend/unigram_model.hpp); or its WordPiece model, from a tokenizer.json or a bare vocab.txt
// (extend/wordpiece_files.hpp). Then the files the
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
#include "extend/unigram_model.hpp"
#include "extend/wordpiece_files.hpp"
#include "extend/wordpiece_model.hpp"
#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "transfer/output_vocabulary.hpp"

namespace clp_transfer {

/// A SentencePiece BPE model of the source, as read, and its bytes.
struct sentencepiece_source {
  std::filesystem::path file;
  io::sentencepiece_model model;
  std::string bytes;
};

/// The source's tokenizer, read for extension: a tokenizer.json, or a SentencePiece BPE model.
struct source_tokenizer {
  std::filesystem::path file;       ///< the folder's tokenizer.json, or its SentencePiece model
  nlohmann::ordered_json document;  ///< a tokenizer.json as parsed, key order kept; null for a model
  /// The SentencePiece BPE model written extended: the source's tokenizer (no tokenizer.json),
  /// or the model beside its tokenizer.json that the tokenizer.json was converted from (the
  /// same pieces at the same ids, the same merges; companion_model).
  std::optional<sentencepiece_source> sentencepiece;
  /// A SentencePiece Unigram model, the source's tokenizer: its encoder's model. Then `model`
  /// holds its pieces alone (no merges), for choosing the new tokens.
  std::optional<extend::unigram_model> unigram;
  /// A WordPiece model, the source's tokenizer (a tokenizer.json's, or a bare vocab.txt's);
  /// `model` then holds its pieces alone (no merges).
  std::optional<extend::wordpiece_model> wordpiece;
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

/// The SentencePiece model in `folder` that `model` (its tokenizer.json's BPE) was converted
/// from, if there is one extend can write extended beside it: a BPE model it reproduces whose
/// pieces are the tokenizer.json's tokens at the same ids, with no id past them, and whose
/// merges are the tokenizer.json's in the same order. Any other .model is left out of the
/// output, as before (extended_tokenizer_files).
inline std::optional<sentencepiece_source> companion_model(const std::filesystem::path& folder,
                                                           const extend::bpe_model& model) {
  for (const std::filesystem::path& file : io::tokenizer_files(folder)) {
    if (file.extension() != ".model" || io::is_tiktoken_file(file)) continue;
    sentencepiece_source source{file, {}, io::read_text_file(file)};
    try {
      source.model = io::parse_sentencepiece_model(file, source.bytes);
    } catch (const io::malformed_file&) {
      continue;  // the file layer's reading of the folder names it; here it is only left out
    }
    const std::vector<io::sentencepiece_piece>& pieces = source.model.pieces;
    if (extend::sentencepiece_bpe_refusal(source.model) ||
        extend::first_unused_id(model) != static_cast<extend::token_id>(pieces.size()))
      continue;
    bool same_ids = true;
    for (std::size_t id = 0; id < pieces.size() && same_ids; ++id) same_ids = model.tokens[id] == pieces[id].piece;
    if (same_ids && extend::same_merges(model, extend::sentencepiece_bpe_model(pieces, source.model))) return source;
  }
  return std::nullopt;
}

/// The model type a tokenizer.json declares ("" when none).
inline std::string model_type(const nlohmann::ordered_json& document) {
  const auto model = document.is_object() ? document.find("model") : document.end();
  if (!document.is_object() || model == document.end() || !model->is_object()) return {};
  return extend::detail::text_member(*model, "type");
}

/// Refuses a vocab.txt beside a WordPiece tokenizer.json that does not hold its pieces at their
/// ids, line for line: the two would encode differently once extended.
inline void require_same_pieces(const std::filesystem::path& vocab_txt, const extend::bpe_model& model) {
  const io::token_vocabulary lines = io::read_wordpiece_vocab(vocab_txt);
  bool same = std::size_t(lines.size) == model.tokens.size();
  for (const auto& [token, id] : lines.ids) same = same && model.tokens[std::size_t(id)] == token;
  if (!same)
    extend::malformed_tokenizer(vocab_txt.string(), "does not hold the tokenizer.json's model.vocab line for line (" +
                                                        std::to_string(lines.size) + " lines, " +
                                                        std::to_string(model.tokens.size()) +
                                                        " pieces): extend would write the two apart");
}

}  // namespace detail

/// Reads the tokenizer of the model folder `folder` for extension. Throws naming the file: the
/// folder has no vocabulary file (clp::malformed_file), its vocabulary is not in a tokenizer.json
/// or that file's model is not a BPE that extend reproduces exactly (clp::invalid_argument, in
/// read_bpe_model's words), or the file is malformed.
inline source_tokenizer read_source_tokenizer(const std::filesystem::path& folder) {
  io::require_model_folder(folder);  // refused as every command refuses it
  const std::optional<io::vocabulary_source> found = io::find_vocabulary_file(folder);
  if (!found) io::no_vocabulary_file(folder);
  source_tokenizer tokenizer;
  tokenizer.file = found->file;
  if (found->format == io::vocabulary_format::sentencepiece) {
    sentencepiece_source& model = tokenizer.sentencepiece.emplace();
    model.file = found->file;
    model.bytes = io::read_text_file(found->file);
    model.model = io::parse_sentencepiece_model(found->file, model.bytes);
    extend::check_sentencepiece(model.model, found->file.string());
    if (model.model.model_type == "bpe") {
      tokenizer.model = extend::sentencepiece_bpe_model(model.model.pieces, model.model);
    } else {
      tokenizer.unigram = extend::sentencepiece_unigram_model(model.model);
      tokenizer.model.tokens = tokenizer.unigram->tokens;
      tokenizer.model.rules = tokenizer.unigram->rules;
      tokenizer.model.byte_fallback = tokenizer.unigram->byte_fallback;
      tokenizer.model.unknown = tokenizer.unigram->unknown;
    }
    return tokenizer;
  }
  if (found->format == io::vocabulary_format::wordpiece) {
    const std::optional<nlohmann::json> config =
        io::read_json_file_if_present<nlohmann::json>(folder / "tokenizer_config.json");
    tokenizer.wordpiece = extend::read_vocab_txt_model(found->file, config.value_or(nlohmann::json()));
    tokenizer.model = tokenizer.wordpiece->vocabulary;
    return tokenizer;
  }
  if (found->format != io::vocabulary_format::tokenizer_json)
    extend::unsupported(found->file.string(),
                        detail::format_words(found->format) +
                            " cannot be extended: extend writes BPE merges into a tokenizer.json, pieces into a "
                            "SentencePiece model or a WordPiece vocab.txt");
  tokenizer.document = extend::parse_ordered_json(io::read_text_file(found->file), found->file.string());
  if (detail::model_type(tokenizer.document) == "WordPiece") {
    tokenizer.wordpiece = extend::read_wordpiece_model(tokenizer.document, found->file.string());
    tokenizer.model = tokenizer.wordpiece->vocabulary;
    std::error_code ignored;
    if (std::filesystem::exists(folder / "vocab.txt", ignored))
      detail::require_same_pieces(folder / "vocab.txt", tokenizer.model);
  } else {
    tokenizer.model = extend::read_bpe_model(tokenizer.document, found->file.string());
  }
  if (const auto added = tokenizer.document.find("added_tokens");
      added != tokenizer.document.end() && added->is_array())
    for (const nlohmann::ordered_json& entry : *added)
      if (const auto content = entry.find("content"); content != entry.end() && content->is_string())
        tokenizer.added_contents.push_back(content->get<std::string>());
  if (!tokenizer.wordpiece) tokenizer.sentencepiece = detail::companion_model(folder, tokenizer.model);
  return tokenizer;
}

/// The output's tokenizer files: tokenizer.json, and vocab.json and merges.txt where `folder` has
/// them, extended by `extension` (written); the SentencePiece model extended by `appended` where
/// tokenizer.sentencepiece is one (the source's only tokenizer, or the model its tokenizer.json
/// was converted from); the folder's other tokenizer files (copied). Any other SentencePiece
/// model beside the tokenizer.json is left out: it would still hold the old vocabulary.
/// @param[in]  folder      the source model folder
/// @param[in]  tokenizer   its tokenizer, as read_source_tokenizer read it
/// @param[in]  extension   the extension of tokenizer.model
/// @param[in]  appended    the pieces the SentencePiece model gets (appended_pieces); empty without one
/// @param[out] vocabulary  the files are added to its written_files and copied_files
/// @param[out] left_out    the SentencePiece models left out are added here
inline void extended_tokenizer_files(const std::filesystem::path& folder, const source_tokenizer& tokenizer,
                                     const extend::bpe_extension& extension,
                                     const std::vector<io::sentencepiece_piece>& appended,
                                     output_vocabulary& vocabulary, std::vector<std::filesystem::path>& left_out) {
  if (tokenizer.wordpiece) {  // tokenizer.json and vocab.txt, whichever the folder has
    if (!tokenizer.document.is_null())
      vocabulary.written_files.push_back(
          {"tokenizer.json",
           extend::extended_wordpiece_json(tokenizer.document, extension, tokenizer.file.string()).dump(2) + "\n"});
    for (const std::filesystem::path& file : io::tokenizer_files(folder)) {
      const std::string name = file.filename().string();
      if (name == "vocab.txt")
        vocabulary.written_files.push_back(
            {name, extend::extended_vocab_txt(io::read_text_file(file), extension, tokenizer.model.tokens.size(),
                                              file.string())});
      else if (file.extension() == ".model")
        left_out.push_back(file);  // it would still hold the old vocabulary
      else if (name != "tokenizer.json")
        vocabulary.copied_files.push_back(file);
    }
    return;
  }
  const auto& companion = tokenizer.sentencepiece;
  if (companion)
    vocabulary.written_files.push_back(
        {companion->file.filename().string(), io::append_sentencepiece_pieces(companion->bytes, appended)});
  if (tokenizer.document.is_null()) {  // the model is the source's tokenizer
    for (const std::filesystem::path& file : io::tokenizer_files(folder))
      if (file.filename() != companion->file.filename()) vocabulary.copied_files.push_back(file);
    return;
  }
  vocabulary.written_files.push_back(
      {"tokenizer.json",
       extend::extended_tokenizer_json(tokenizer.document, extension, tokenizer.file.string()).dump(2) + "\n"});
  for (const std::filesystem::path& file : io::tokenizer_files(folder)) {
    const std::string name = file.filename().string();
    if (name == "tokenizer.json" || (companion && file.filename() == companion->file.filename())) continue;
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
