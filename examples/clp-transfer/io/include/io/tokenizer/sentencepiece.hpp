// A SentencePiece model file (tokenizer.model, spiece.model, sentencepiece.bpe.model): the
// protobuf message ModelProto of sentencepiece_model.proto, read with io/tokenizer/protobuf_wire.hpp.
// What the program takes from it: the pieces (field 1; a piece's id is its position), each
// with its score and type, the model type and byte fallback of trainer_spec (field 2), and
// whether normalizer_spec (field 3) escapes whitespace as "▁". Every other field is skipped
// unread. A tokenizer.model in tiktoken's text format (Llama 3's original/tokenizer.model) is
// recognised and refused by name. Every refusal is a malformed_file naming the file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/system/utf8.hpp"
#include "io/tokenizer/protobuf_wire.hpp"
#include "io/tokenizer/vocabulary.hpp"

namespace clp_transfer::io {

/// SentencePiece's piece types, numbered as in sentencepiece_model.proto.
enum class piece_type { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

/// "normal", "unknown", "control", "user-defined", "unused" or "byte".
inline const char* piece_type_name(piece_type type) {
  static constexpr const char* names[] = {"normal", "unknown", "control", "user-defined", "unused", "byte"};
  return names[static_cast<int>(type) - 1];
}

/// One piece of the model's vocabulary.
struct sentencepiece_piece {
  std::string piece;  ///< UTF-8; "▁" for a space, "<0xNN>" for a byte piece
  float score = 0;
  piece_type type = piece_type::normal;
};

/// What the program reads from a SentencePiece model.
struct sentencepiece_model {
  std::vector<sentencepiece_piece> pieces;  ///< id = position
  std::string model_type = "unigram";       ///< trainer_spec.model_type: unigram, bpe, word or char
  bool byte_fallback = false;               ///< trainer_spec.byte_fallback
  bool escape_whitespaces = true;           ///< normalizer_spec.escape_whitespaces: a space is "▁"
  std::string normalizer_name;              ///< normalizer_spec.name: "identity", "nmt_nfkc", ...; "" unset
  bool precompiled_charsmap = false;        ///< normalizer_spec.precompiled_charsmap is not empty
  bool normalization_rules = false;         ///< normalizer_spec.normalization_rule_tsv is not empty
  bool add_dummy_prefix = true;             ///< normalizer_spec.add_dummy_prefix: "▁" before a text
  bool remove_extra_whitespaces = true;     ///< normalizer_spec.remove_extra_whitespaces
  bool treat_whitespace_as_suffix = false;  ///< trainer_spec.treat_whitespace_as_suffix: "▁" ends a piece

  /// Whether a piece is of type byte.
  bool has_byte_pieces() const {
    return std::any_of(pieces.begin(), pieces.end(), [](const auto& p) { return p.type == piece_type::byte; });
  }
};

/// Largest SentencePiece model read: Gemma's 262k pieces take 4 MB, a precompiled normaliser a
/// few hundred KB more.
inline constexpr std::uint64_t max_sentencepiece_model_bytes = 1ull << 30;

namespace detail {

/// Whether `text` starts like tiktoken's BPE file: a line of base64, one space, a decimal rank.
bool looks_like_tiktoken(std::string_view text);

/// One SentencePiece message (ModelProto.pieces[index]).
sentencepiece_piece read_piece(const std::filesystem::path& file, const protobuf_reader& model, std::string_view bytes,
                               std::size_t index);

/// trainer_spec's model_type and byte_fallback into `model`.
void read_trainer_spec(const std::filesystem::path& file, const protobuf_reader& parent, std::string_view bytes,
                       sentencepiece_model& model);

/// normalizer_spec's escape_whitespaces into `model`.
void read_normalizer_spec(const std::filesystem::path& file, const protobuf_reader& parent, std::string_view bytes,
                          sentencepiece_model& model);

/// Refuses a piece that two ids share: its embedding row would be ambiguous.
void check_unique_pieces(const std::filesystem::path& file, const std::vector<sentencepiece_piece>& pieces);

}  // namespace detail

/// Reads a SentencePiece model from its bytes.
/// @param[in] file   the file they were read from, for messages
/// @param[in] bytes  the whole file
sentencepiece_model parse_sentencepiece_model(const std::filesystem::path& file, std::string_view bytes);

/// Whether `file` starts like tiktoken's BPE file (a line of base64, a space and a rank); false
/// when it cannot be read.
/// @param[in] file  a tokenizer.model
bool is_tiktoken_file(const std::filesystem::path& file);

/// `bytes`, a SentencePiece model, with `pieces` appended to its pieces: each a new
/// ModelProto.pieces record after the file's own fields, so that a protobuf parser gives the
/// file's pieces their ids as before and the new ones the ids that follow, in order. Every
/// other byte of the file is kept as it was (the normalizer, the trainer's options, the
/// denormalizer); trainer_spec.vocab_size, which SentencePiece does not read when it loads a
/// model, keeps the trained size.
/// @param[in] bytes   a whole SentencePiece model, as parse_sentencepiece_model read it
/// @param[in] pieces  non-empty UTF-8 pieces; a normal piece's type is left to the format's default
std::string append_sentencepiece_pieces(std::string_view bytes, const std::vector<sentencepiece_piece>& pieces);

/// Reads the SentencePiece model `file`; throws io_error when it cannot be read,
/// malformed_file when it is no SentencePiece model (a tiktoken file among them).
/// @param[in] file  tokenizer.model, spiece.model, sentencepiece.bpe.model, ...
sentencepiece_model read_sentencepiece_model(const std::filesystem::path& file);

/// The vocabulary of `model`: each piece with its position as its id.
/// @param[in] file   the model's file, for messages
/// @param[in] model  as read
token_vocabulary sentencepiece_vocabulary(const std::filesystem::path& file, const sentencepiece_model& model);

/// Checks that the SentencePiece model `model_file` agrees with the vocabulary read from another
/// file of its folder (a tokenizer.json or vocab.json converted from it): every piece is a
/// token there, and the pieces other than control and unknown ones have the same ids there
/// shifted by one offset (0, or fairseq's 1 in XLM-R, mBART and CamemBERT, whose converted
/// vocabularies put their own special tokens first). Control and unknown pieces may sit at any
/// id. Throws malformed_file naming `model_file` and the first disagreement.
/// @param[in] model_file       the SentencePiece model, for messages
/// @param[in] model            as read
/// @param[in] vocabulary_file  the file `vocabulary` was read from, for messages
/// @param[in] vocabulary       its vocabulary
void check_sentencepiece_agrees(const std::filesystem::path& model_file, const sentencepiece_model& model,
                                const std::filesystem::path& vocabulary_file, const token_vocabulary& vocabulary);

}  // namespace clp_transfer::io
