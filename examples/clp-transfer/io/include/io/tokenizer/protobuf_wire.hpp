// The protobuf wire format, read by hand for the one protobuf file the program meets (a
// SentencePiece model): a message is a sequence of fields, each a varint tag (field number << 3
// | wire type) and a value: a varint (type 0), 8 little-endian bytes (1), a varint length and
// that many bytes (2: strings, bytes, nested messages), or 4 little-endian bytes (5). Groups
// (types 3 and 4) are long deprecated and refused. protobuf_input reads those encodings,
// protobuf_reader the fields made of them. Every read is bounds-checked; a problem is a
// malformed_file naming the file, the byte and the message being read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "io/errors.hpp"
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// The wire types of the protobuf encoding this reader knows.
enum class protobuf_wire_type : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// One field of a message.
struct protobuf_field {
  std::uint32_t number = 0;
  protobuf_wire_type type = protobuf_wire_type::varint;
  std::uint64_t value = 0;     ///< varint, fixed64 and fixed32 fields: the raw value
  std::string_view bytes;      ///< length-delimited fields: the contents
  std::uint64_t position = 0;  ///< of the field's tag in the file, for messages
};

/// The encodings a message is made of, read from its front in order: varints, little-endian
/// fixed-size integers, and length-delimited bytes. Every read is bounds-checked and refused
/// naming the file, the byte where the value starts and the message. The message's bytes must
/// outlive the input and the bytes it returns.
class protobuf_input {
 public:
  /// @param[in] message   the message's bytes
  /// @param[in] file      the file they come from, for messages
  /// @param[in] what      what the message is, for messages: "the model", "pieces[3]"
  /// @param[in] position  where `message` starts in the file
  protobuf_input(std::string_view message, const std::filesystem::path& file, std::string what,
                 std::uint64_t position = 0)
      : message_(message), file_(file), what_(std::move(what)), position_(position) {}

  /// Whether every byte of the message has been read.
  bool at_end() const { return at_ == message_.size(); }
  /// The position in the file of the next byte to read.
  std::uint64_t position() const { return position_ + at_; }
  /// The position in the file of `bytes`, which length_delimited returned.
  std::uint64_t position_of(std::string_view bytes) const {
    return position_ + static_cast<std::uint64_t>(bytes.data() - message_.data());
  }

  /// A varint of at most 64 bits (10 bytes). `what` names it in a refusal: "a field's tag".
  std::uint64_t varint(const char* what) {
    const std::uint64_t start = position();
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_end()) fail(start, std::string("the message ends inside ") + what);
      const auto byte = static_cast<unsigned char>(message_[at_++]);
      // The tenth byte holds bit 63 alone; anything more does not fit 64 bits.
      if (shift == 63 && byte > 1) fail(start, std::string(what) + " longer than 64 bits");
      value |= std::uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail(start, std::string(what) + " longer than 10 bytes");
  }

  /// A little-endian integer of `size` bytes, at most 8: fixed32 and fixed64 values.
  std::uint64_t fixed(std::size_t size) {
    if (message_.size() - at_ < size) fail(position(), "the message ends inside a fixed-size field");
    std::uint64_t value = 0;
    for (std::size_t i = size; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(message_[at_ + i]);
    at_ += size;
    return value;
  }

  /// A varint length and that many bytes.
  std::string_view length_delimited() {
    const std::uint64_t start = position();
    const std::uint64_t length = varint("a length");
    if (length > message_.size() - at_)
      fail(start, "a length of " + std::to_string(length) + " bytes runs past the end of the message (" +
                      std::to_string(message_.size() - at_) + " bytes left)");
    const std::string_view bytes = message_.substr(at_, static_cast<std::size_t>(length));
    at_ += static_cast<std::size_t>(length);
    return bytes;
  }

  /// Throws malformed_file naming the file: `problem` at byte `position` of the file.
  [[noreturn]] void fail(std::uint64_t position, const std::string& problem) const {
    throw malformed_file(file_,
                         "byte " + std::to_string(position) + ": " + problem + " in " + what_ +
                             " (not a protobuf message, or a truncated one)",
                         {}, static_cast<std::int64_t>(position));
  }

 private:
  std::string_view message_;
  const std::filesystem::path& file_;
  std::string what_;
  std::uint64_t position_;
  std::size_t at_ = 0;
};

/// The fields of one message, one at a time, in the order they are written. The message's bytes
/// must outlive the reader and the fields it returns.
class protobuf_reader {
 public:
  /// @param[in] message   the message's bytes
  /// @param[in] file      the file they come from, for messages
  /// @param[in] what      what the message is, for messages: "the model", "pieces[3]"
  /// @param[in] position  where `message` starts in the file
  protobuf_reader(std::string_view message, const std::filesystem::path& file, std::string what,
                  std::uint64_t position = 0)
      : input_(message, file, std::move(what), position) {}

  /// Reads the next field into `field`; false at the end of the message. Throws naming the file
  /// for a field that is cut short, a group, an unknown wire type or field number 0.
  bool next(protobuf_field& field) {
    if (input_.at_end()) return false;
    field.position = input_.position();
    const std::uint64_t tag = input_.varint("a field's tag");
    const auto type = static_cast<std::uint8_t>(tag & 7);
    if (tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) input_.fail(field.position, "field number " + std::to_string(tag >> 3));
    field.number = static_cast<std::uint32_t>(tag >> 3);
    field.value = 0;
    field.bytes = {};
    switch (type) {
      case 0:
        field.value = input_.varint("a varint field");
        break;
      case 1:
        field.value = input_.fixed(8);
        break;
      case 2:
        field.bytes = input_.length_delimited();
        break;
      case 5:
        field.value = input_.fixed(4);
        break;
      default:
        input_.fail(field.position, "wire type " + std::to_string(type) + " (a group or no protobuf type) in field " +
                                        std::to_string(field.number));
    }
    field.type = static_cast<protobuf_wire_type>(type);
    return true;
  }

  /// Throws naming the file: `field` of this message is not of wire type `expected`.
  /// @param[in] field     a field of this message
  /// @param[in] name      the field's name in the schema: "piece"
  /// @param[in] expected  its wire type in the schema
  void require(const protobuf_field& field, const char* name, protobuf_wire_type expected) const {
    static constexpr const char* names[] = {"varint", "fixed64", "length-delimited", "", "", "fixed32"};
    if (field.type != expected)
      input_.fail(field.position, std::string("field ") + std::to_string(field.number) + " (" + name +
                                      ") has wire type " + names[static_cast<int>(field.type)] + ", not " +
                                      names[static_cast<int>(expected)]);
  }

  /// The position of `bytes`, a length-delimited field's contents read by this reader, in the
  /// file: where a nested message starts.
  std::uint64_t position_of(std::string_view bytes) const { return input_.position_of(bytes); }

 private:
  protobuf_input input_;
};

/// A fixed32 field's bits as the float they hold (protobuf's `float`).
float protobuf_float(std::uint64_t bits);

}  // namespace clp_transfer::io
