// Hugging Face tokenizer.json, read in one SAX pass that collects everything the program reads:
// model.vocab straight into a vocabulary builder, the added tokens, model.merges when asked, and
// everything else, small, as the declarations (decoder, pre_tokenizer, normalizer, the model's
// type and flags: what io/tokenizer/spelling.hpp reads). Neither the vocabulary nor the merges
// become a DOM (a 262k-token vocabulary and its 515k merges as nlohmann::json cost several times
// the parse itself).
//
// A JSON file of another name is read the same way, in the same one pass, and is a tokenizer.json
// when it is an object whose "model" is an object, else a vocab.json (an object of token -> id).
//
// Errors: a syntax error (or a number overflow such as 9e999) throws at once, as the parser meets
// it. An error in the vocabulary is kept and thrown after the checks of the model's type and
// shape, so that a file is refused for the same reason as when it was read whole first.
// Duplicate keys are refused where they would mix two vocabularies: a token repeated in
// model.vocab, "model" or model.vocab given twice (a parser that keeps the last value would
// silently drop the first). Every refusal is an io::malformed_file naming the file.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/library_names.hpp"
#include "io/tokenizer/vocabulary.hpp"

namespace clp_transfer::io {

/// What to read of a tokenizer.json besides its declarations.
struct tokenizer_json_options {
  /// model.vocab and added_tokens, checked; false skips them, and reads any JSON document.
  bool vocabulary = true;
  /// model.merges, into tokenizer_json_contents::merges; false skips them.
  bool merges = false;

  /// The declarations alone: no vocabulary, no merges.
  static tokenizer_json_options declarations_only() { return {false, false}; }
  /// The vocabulary and the merges (what extending a BPE vocabulary needs).
  static tokenizer_json_options with_merges() { return {true, true}; }
};

/// What read_tokenizer_json finds in a tokenizer.json.
struct tokenizer_json_contents {
  /// model.vocab (an object token -> id for BPE, WordPiece and WordLevel; an array of
  /// [piece, score] for Unigram, where the id is the position) and the top-level added_tokens;
  /// empty when not asked for.
  token_vocabulary vocabulary;
  /// The rest of the document without model.vocab, model.merges and added_tokens: decoder,
  /// pre_tokenizer, normalizer, model.type and the model's other small keys, a few kilobytes.
  nlohmann::json declarations;
  /// model.merges in order, each as its pair of tokens, from either form the file may use
  /// ("a b" or ["a", "b"]); empty unless asked for (tokenizer_json_options::merges).
  std::vector<std::pair<std::string, std::string>> merges;
};

/// Reads the Hugging Face tokenizer.json `file` in one pass; throws io::malformed_file naming it
/// when it is not JSON, has no vocabulary (when one is asked for), or its vocabulary or merges
/// are refused; io::io_error when it cannot be read.
/// @param[in] file     tokenizer.json
/// @param[in] options  what to read besides the declarations
tokenizer_json_contents read_tokenizer_json(const std::filesystem::path& file,
                                            const tokenizer_json_options& options = {});

/// A JSON vocabulary file of either kind, as read_json_vocabulary finds it.
struct json_vocabulary {
  /// Whether the file is a tokenizer.json: an object whose "model" is an object. Else a
  /// vocab.json: contents.vocabulary holds its tokens, and contents.declarations nothing.
  bool is_tokenizer_json = false;
  tokenizer_json_contents contents;
};

/// Reads a JSON file that is a tokenizer.json or a vocab.json (any object of token -> id), in one
/// pass, and tells which: a tokenizer.json is read as read_tokenizer_json reads it, a vocab.json
/// as read_vocab_json does; each refused as a file of its kind.
/// @param[in] file     tokenizer.json or vocab.json under any name
/// @param[in] options  what to read of a tokenizer.json; with vocabulary false, no vocabulary of
///                     either kind is read or checked
json_vocabulary read_json_vocabulary(const std::filesystem::path& file, const tokenizer_json_options& options = {});

}  // namespace clp_transfer::io
