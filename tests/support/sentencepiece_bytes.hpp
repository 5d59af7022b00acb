// SentencePiece model files as bytes, written from sentencepiece_model.proto's definition and
// the protobuf wire format for tests that build or break them by hand. Shares no code with the
// reader it tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace clp_test {

/// The varint encoding of `value`.
inline std::string protobuf_varint(std::uint64_t value) {
  std::string bytes;
  do {
    const auto low = static_cast<unsigned char>(value & 0x7F);
    value >>= 7;
    bytes += static_cast<char>(value ? low | 0x80 : low);
  } while (value);
  return bytes;
}

/// A varint field (wire type 0).
inline std::string protobuf_varint_field(std::uint32_t number, std::uint64_t value) {
  return protobuf_varint(std::uint64_t{number} << 3) + protobuf_varint(value);
}

/// A length-delimited field (wire type 2): strings, bytes and nested messages.
inline std::string protobuf_bytes_field(std::uint32_t number, const std::string& contents) {
  return protobuf_varint(std::uint64_t{number} << 3 | 2) + protobuf_varint(contents.size()) + contents;
}

/// A fixed32 float field (wire type 5).
inline std::string protobuf_float_field(std::uint32_t number, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  std::string bytes = protobuf_varint(std::uint64_t{number} << 3 | 5);
  for (int i = 0; i < 4; ++i) bytes += static_cast<char>(bits >> (8 * i) & 0xFF);
  return bytes;
}

/// One piece: SentencePiece types are 1 normal, 2 unknown, 3 control, 4 user-defined,
/// 5 unused, 6 byte.
struct sentencepiece_entry {
  std::string piece;
  float score = 0;
  int type = 1;
};

/// The ModelProto message of a model with `pieces` (id = position): pieces (field 1, each
/// piece 1, score 2, type 3 unless normal), trainer_spec (field 2: model_type 3, byte_fallback
/// 35) and normalizer_spec (field 3: escape_whitespaces 5).
inline std::string sentencepiece_model_bytes(const std::vector<sentencepiece_entry>& pieces, int model_type = 2,
                                             bool byte_fallback = true, bool escape_whitespaces = true) {
  std::string model;
  for (const sentencepiece_entry& p : pieces) {
    std::string message = protobuf_bytes_field(1, p.piece) + protobuf_float_field(2, p.score);
    if (p.type != 1) message += protobuf_varint_field(3, static_cast<std::uint64_t>(p.type));
    model += protobuf_bytes_field(1, message);
  }
  model += protobuf_bytes_field(2, protobuf_varint_field(3, static_cast<std::uint64_t>(model_type)) +
                                       protobuf_varint_field(35, byte_fallback));
  model += protobuf_bytes_field(3, protobuf_bytes_field(1, "identity") + protobuf_varint_field(5, escape_whitespaces));
  return model;
}

/// The entries of a Llama-style vocabulary `tokens`: <unk> unknown, <s> and </s> control,
/// <0xNN> byte pieces, the others normal.
inline std::vector<sentencepiece_entry> llama_style_entries(const std::vector<std::string>& tokens) {
  std::vector<sentencepiece_entry> entries;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const std::string& t = tokens[id];
    const int type = t == "<unk>" ? 2 : (t == "<s>" || t == "</s>") ? 3 : (t.size() == 6 && t.rfind("<0x", 0) == 0) ? 6 : 1;
    entries.push_back({t, type == 1 ? -0.01f * static_cast<float>(id) : 0.0f, type});
  }
  return entries;
}

}  // namespace clp_test
