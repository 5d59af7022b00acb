#include "io/tokenizer/sentencepiece.hpp"

#include <cstring>

namespace clp_transfer::io {

namespace detail {

bool looks_like_tiktoken(std::string_view text) {
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

sentencepiece_piece read_piece(const std::filesystem::path& file, const protobuf_reader& model, std::string_view bytes,
                               std::size_t index) {
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
      if (field.value < 1 || field.value > 6)
        malformed(file,
                  what + " has type " + std::to_string(field.value) + ", not a SentencePiece piece type (1 to 6)");
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

void read_trainer_spec(const std::filesystem::path& file, const protobuf_reader& parent, std::string_view bytes,
                       sentencepiece_model& model) {
  static constexpr const char* types[] = {"unigram", "bpe", "word", "char"};
  protobuf_reader reader(bytes, file, "trainer_spec", parent.position_of(bytes));
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 3) {
      reader.require(field, "model_type", protobuf_wire_type::varint);
      if (field.value < 1 || field.value > 4)
        malformed(file,
                  "trainer_spec.model_type is " + std::to_string(field.value) + ", not a SentencePiece model type");
      model.model_type = types[field.value - 1];
    } else if (field.number == 24) {
      reader.require(field, "treat_whitespace_as_suffix", protobuf_wire_type::varint);
      model.treat_whitespace_as_suffix = field.value != 0;
    } else if (field.number == 35) {
      reader.require(field, "byte_fallback", protobuf_wire_type::varint);
      model.byte_fallback = field.value != 0;
    }
  }
}

void read_normalizer_spec(const std::filesystem::path& file, const protobuf_reader& parent, std::string_view bytes,
                          sentencepiece_model& model) {
  protobuf_reader reader(bytes, file, "normalizer_spec", parent.position_of(bytes));
  for (protobuf_field field; reader.next(field);) {
    if (field.number == 1) {
      reader.require(field, "name", protobuf_wire_type::length_delimited);
      model.normalizer_name = std::string(field.bytes);
    } else if (field.number == 2) {
      reader.require(field, "precompiled_charsmap", protobuf_wire_type::length_delimited);
      model.precompiled_charsmap = !field.bytes.empty();
    } else if (field.number == 3) {
      reader.require(field, "add_dummy_prefix", protobuf_wire_type::varint);
      model.add_dummy_prefix = field.value != 0;
    } else if (field.number == 4) {
      reader.require(field, "remove_extra_whitespaces", protobuf_wire_type::varint);
      model.remove_extra_whitespaces = field.value != 0;
    } else if (field.number == 5) {
      reader.require(field, "escape_whitespaces", protobuf_wire_type::varint);
      model.escape_whitespaces = field.value != 0;
    } else if (field.number == 6) {
      reader.require(field, "normalization_rule_tsv", protobuf_wire_type::length_delimited);
      model.normalization_rules = !field.bytes.empty();
    }
  }
}

void check_unique_pieces(const std::filesystem::path& file, const std::vector<sentencepiece_piece>& pieces) {
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

sentencepiece_model parse_sentencepiece_model(const std::filesystem::path& file, std::string_view bytes) {
  if (detail::looks_like_tiktoken(bytes))
    malformed(file,
              "holds tiktoken's BPE ranks (a base64 token and its rank a line), not a SentencePiece model; "
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

namespace {

void append_varint(std::string& out, std::uint64_t value) {
  do {
    const auto low = static_cast<unsigned char>(value & 0x7F);
    value >>= 7;
    out += static_cast<char>(value ? low | 0x80 : low);
  } while (value);
}

/// A length-delimited field (wire type 2) with `contents`.
void append_bytes_field(std::string& out, std::uint32_t number, std::string_view contents) {
  append_varint(out, std::uint64_t{number} << 3 | 2);
  append_varint(out, contents.size());
  out += contents;
}

}  // namespace

std::string append_sentencepiece_pieces(std::string_view bytes, const std::vector<sentencepiece_piece>& pieces) {
  std::string out(bytes);
  std::string record;
  for (const sentencepiece_piece& piece : pieces) {
    record.clear();
    append_bytes_field(record, 1, piece.piece);
    append_varint(record, std::uint64_t{2} << 3 | 5);  // score: a fixed32 float, little-endian
    std::uint32_t bits = 0;
    std::memcpy(&bits, &piece.score, sizeof bits);
    for (int i = 0; i < 4; ++i) record += static_cast<char>(bits >> (8 * i) & 0xFF);
    if (piece.type != piece_type::normal) {
      append_varint(record, std::uint64_t{3} << 3);
      append_varint(record, static_cast<std::uint64_t>(piece.type));
    }
    append_bytes_field(out, 1, record);
  }
  return out;
}

bool is_tiktoken_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return detail::looks_like_tiktoken(head);
}

sentencepiece_model read_sentencepiece_model(const std::filesystem::path& file) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (!error && size > max_sentencepiece_model_bytes)
    malformed(file, std::to_string(size) + " bytes, too large for a SentencePiece model");
  return parse_sentencepiece_model(file, read_text_file(file));
}

token_vocabulary sentencepiece_vocabulary(const std::filesystem::path& file, const sentencepiece_model& model) {
  detail::vocabulary_builder builder(file);
  for (std::size_t id = 0; id < model.pieces.size(); ++id)
    builder.add(model.pieces[id].piece, nlohmann::json(id), false);
  return builder.finish();
}

void check_sentencepiece_agrees(const std::filesystem::path& model_file, const sentencepiece_model& model,
                                const std::filesystem::path& vocabulary_file, const token_vocabulary& vocabulary) {
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
