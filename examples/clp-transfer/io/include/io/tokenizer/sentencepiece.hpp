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
inline bool looks_like_tiktoken(std::string_view text) {
  const std::size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  const std::size_t space = line.find(' ');
  if (end == std::string_view::npos || space == 0 || space == std::string_view::npos || space + 1 == line.size())
    return false;
  const auto base64 = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
           c == '=';
  };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(space), base64) &&
         std::all_of(line.begin() + static_cast<std::ptrdiff_t>(space) + 1, line.end(), digit);
}

/// One SentencePiece message (ModelProto.pieces[index]).
inline sentencepiece_piece read_piece(const std::filesystem::path& file, const protobuf_reader& model,
                                      std::string_view bytes, std::size_t index) {
  const std::string what = "pieces[" + std::to_string(index) + "]";
  protobuf_reader reader(bytes, file, what, model.position_of(bytes));
  sentencepiece_piece piece;
  bool named = false;
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 1) {
      reader.require(field, "piece", protobuf_wire_type::length_delimited);
      piece.piece = std::string(field.bytes);
      named = true;
    } else if (field.number == 2) {
      reader.require(field, "score", protobuf_wire_type::fixed32);
      piece.score = protobuf_float(field.value);
    } else if (field.number == 3) {
      reader.require(field, "type", protobuf_wire_type::varint);
      if (field.value < 1 || field.value > 6) malformed(file, what + " has type " + std::to_string(field.value) +
                                                                  ", not a SentencePiece piece type (1 to 6)");
      piece.type = static_cast<piece_type>(field.value);
    }
  }
  if (!named || piece.piece.empty()) malformed(file, what + " has no piece (an empty string)");
  if (!valid_utf8(piece.piece)) malformed(file, what + " " + quoted_name(piece.piece) + " is not UTF-8");
  if (piece.type == piece_type::byte) {
    const std::string& p = piece.piece;
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || !hex(p[3]) || !hex(p[4]) || p[5] != '>')
      malformed(file, what + " " + quoted_name(p) + " is of type byte but not a byte piece <0xNN>");
  }
  return piece;
}

/// trainer_spec's model_type and byte_fallback into `model`.
inline void read_trainer_spec(const std::filesystem::path& file, const protobuf_reader& parent, std::string_view bytes,
                              sentencepiece_model& model) {
  static constexpr const char* types[] = {"unigram", "bpe", "word", "char"};
  protobuf_reader reader(bytes, file, "trainer_spec", parent.position_of(bytes));
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 3) {
      reader.require(field, "model_type", protobuf_wire_type::varint);
      if (field.value < 1 || field.value > 4)
        malformed(file, "trainer_spec.model_type is " + std::to_string(field.value) + ", not a SentencePiece model type");
      model.model_type = types[field.value - 1];
    } else if (field.number == 35) {
      reader.require(field, "byte_fallback", protobuf_wire_type::varint);
      model.byte_fallback = field.value != 0;
    }
  }
}

/// normalizer_spec's escape_whitespaces into `model`.
inline void read_normalizer_spec(const std::filesystem::path& file, const protobuf_reader& parent,
                                 std::string_view bytes, sentencepiece_model& model) {
  protobuf_reader reader(bytes, file, "normalizer_spec", parent.position_of(bytes));
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 5) {
      reader.require(field, "escape_whitespaces", protobuf_wire_type::varint);
      model.escape_whitespaces = field.value != 0;
    }
  }
}

/// Refuses a piece that two ids share: its embedding row would be ambiguous.
inline void check_unique_pieces(const std::filesystem::path& file, const std::vector<sentencepiece_piece>& pieces) {
  std::unordered_map<std::string_view, std::size_t> seen;
  seen.reserve(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto [at, fresh] = seen.emplace(pieces[i].piece, i);
    if (!fresh)
      malformed(file, "pieces[" + std::to_string(at->second) + "] and pieces[" + std::to_string(i) + "] are both " +
                          quoted_name(pieces[i].piece));
  }
}

}  // namespace detail

/// Reads a SentencePiece model from its bytes.
/// @param[in] file   the file they were read from, for messages
/// @param[in] bytes  the whole file
inline sentencepiece_model parse_sentencepiece_model(const std::filesystem::path& file, std::string_view bytes) {
  if (detail::looks_like_tiktoken(bytes))
    malformed(file, "holds tiktoken's BPE ranks (a base64 token and its rank a line), not a SentencePiece model; "
                    "tiktoken files are not read (a tokenizer.json beside it is)");
  protobuf_reader reader(bytes, file, "the model");
  sentencepiece_model model;
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 1) {
      reader.require(field, "pieces", protobuf_wire_type::length_delimited);
      model.pieces.push_back(detail::read_piece(file, reader, field.bytes, model.pieces.size()));
    } else if (field.number == 2) {
      reader.require(field, "trainer_spec", protobuf_wire_type::length_delimited);
      detail::read_trainer_spec(file, reader, field.bytes, model);
    } else if (field.number == 3) {
      reader.require(field, "normalizer_spec", protobuf_wire_type::length_delimited);
      detail::read_normalizer_spec(file, reader, field.bytes, model);
    }
  }
  if (model.pieces.empty()) malformed(file, "no pieces: not a SentencePiece model");
  detail::check_unique_pieces(file, model.pieces);
  return model;
}

/// Whether `file` starts like tiktoken's BPE file (a line of base64, a space and a rank); false
/// when it cannot be read.
/// @param[in] file  a tokenizer.model
inline bool is_tiktoken_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return detail::looks_like_tiktoken(head);
}

/// Reads the SentencePiece model `file`; throws io_error when it cannot be read,
/// malformed_file when it is no SentencePiece model (a tiktoken file among them).
/// @param[in] file  tokenizer.model, spiece.model, sentencepiece.bpe.model, ...
inline sentencepiece_model read_sentencepiece_model(const std::filesystem::path& file) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (!error && size > max_sentencepiece_model_bytes)
    malformed(file, std::to_string(size) + " bytes, too large for a SentencePiece model");
  return parse_sentencepiece_model(file, read_text_file(file));
}

/// The vocabulary of `model`: each piece with its position as its id.
/// @param[in] file   the model's file, for messages
/// @param[in] model  as read
inline token_vocabulary sentencepiece_vocabulary(const std::filesystem::path& file, const sentencepiece_model& model) {
  detail::vocabulary_builder builder(file);
  for (std::size_t id = 0; id < model.pieces.size(); ++id)
    builder.add(model.pieces[id].piece, nlohmann::json(id), false);
  return builder.finish();
}

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
inline void check_sentencepiece_agrees(const std::filesystem::path& model_file, const sentencepiece_model& model,
                                       const std::filesystem::path& vocabulary_file,
                                       const token_vocabulary& vocabulary) {
  const std::string there = vocabulary_file.filename().string();
  std::optional<std::int64_t> offset;
  std::size_t offset_from = 0;
  for (std::size_t id = 0; id < model.pieces.size(); ++id) {
    const sentencepiece_piece& piece = model.pieces[id];
    const auto found = vocabulary.ids.find(piece.piece);
    if (found == vocabulary.ids.end())
      malformed(model_file, "disagrees with " + there + ": " + piece_type_name(piece.type) + " piece " +
                                quoted_name(piece.piece) + " (id " + std::to_string(id) + " here) is not in it");
    if (piece.type == piece_type::control || piece.type == piece_type::unknown) continue;
    const std::int64_t shift = found->second - static_cast<std::int64_t>(id);
    if (!offset) {
      offset = shift;
      offset_from = id;
    } else if (shift != *offset) {
      malformed(model_file, "disagrees with " + there + ": piece " + quoted_name(piece.piece) + " is id " +
                                std::to_string(id) + " here and id " + std::to_string(found->second) +
                                " there, where the pieces from id " + std::to_string(offset_from) +
                                " on are at their id " + (*offset < 0 ? "- " : "+ ") +
                                std::to_string(*offset < 0 ? -*offset : *offset) + " there");
    }
  }
}

}  // namespace clp_transfer::io
