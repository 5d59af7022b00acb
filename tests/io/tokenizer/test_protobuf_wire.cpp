// Tests for the protobuf wire format (io/tokenizer/protobuf_wire.hpp) on hand-written bytes: the encodings
// protobuf_input reads (varints, fixed-size values, length-delimited bytes) and the fields
// protobuf_reader makes of them, with every refusal's whole message, which names the byte in the
// file and the message being read. The bytes are written by support/sentencepiece_bytes.hpp or
// by hand from the format's definition.
#include "io/tokenizer/protobuf_wire.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include <doctest/doctest.h>

#include "support/error_of.hpp"
#include "support/sentencepiece_bytes.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using namespace std::string_literals;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_protobuf_wire {
namespace {

const fs::path file = "model/tokenizer.model";

/// The whole message of the clp::malformed_file `action` throws, or "" when it throws none.
template <class Action>
std::string refusal(Action&& action) {
  return error_of<clp_transfer::io::malformed_file>(action);
}

}  // namespace

TEST_CASE("protobuf varints: 1 to 10 bytes, low group first, refused past 64 bits or cut short") {
  const std::string bytes = "\x96\x01\x00"s + std::string(9, '\xff') + "\x01";
  io::protobuf_input input(bytes, file, "the model", 100);
  CHECK(input.varint("a varint field") == 150);
  CHECK(input.varint("a varint field") == 0);
  CHECK(input.position() == 103);
  CHECK(input.varint("a varint field") == std::numeric_limits<std::uint64_t>::max());
  CHECK(input.at_end());

  const std::string too_wide = std::string(9, '\xff') + "\x02";
  io::protobuf_input wide(too_wide, file, "the model", 100);
  CHECK(refusal([&] { wide.varint("a field's tag"); }) ==
        "model/tokenizer.model: byte 100: a field's tag longer than 64 bits in the model (not a protobuf message, or a "
        "truncated one)");
  io::protobuf_input cut("\x80\x80", file, "pieces[3]");
  CHECK(refusal([&] { cut.varint("a length"); }) ==
        "model/tokenizer.model: byte 0: the message ends inside a length in pieces[3] (not a protobuf message, or a "
        "truncated one)");
}

TEST_CASE("protobuf fixed-size values are little-endian, and length-delimited bytes stay within the message") {
  const std::string bytes =
      "\x01\x02\x03\x04\x03"
      "abc\x05"
      "ab"s;
  io::protobuf_input input(bytes, file, "the model", 10);
  CHECK(input.fixed(4) == 0x04030201);
  const std::string_view abc = input.length_delimited();
  CHECK(abc == "abc");
  CHECK(input.position_of(abc) == 15);
  CHECK(refusal([&] { input.length_delimited(); }) ==
        "model/tokenizer.model: byte 18: a length of 5 bytes runs past the end of the message (2 bytes left) in the "
        "model (not a protobuf message, or a truncated one)");
  io::protobuf_input short_fixed("\x01\x02\x03", file, "the model");
  CHECK(refusal([&] { short_fixed.fixed(4); }) ==
        "model/tokenizer.model: byte 0: the message ends inside a fixed-size field in the model (not a protobuf "
        "message, or a truncated one)");
}

TEST_CASE("protobuf fields: number, wire type, value and position, in the order written") {
  const std::string bytes = protobuf_varint_field(1, 150) + protobuf_bytes_field(2, "hi") +
                            protobuf_float_field(3, 0.5f) + protobuf_varint(4 << 3 | 1) + std::string(7, '\0') + "\x01";
  io::protobuf_reader reader(bytes, file, "the model", 1000);
  io::protobuf_field field;
  REQUIRE(reader.next(field));
  CHECK(field.number == 1);
  CHECK(field.type == io::protobuf_wire_type::varint);
  CHECK(field.value == 150);
  CHECK(field.position == 1000);
  REQUIRE(reader.next(field));
  CHECK(field.type == io::protobuf_wire_type::length_delimited);
  CHECK(field.bytes == "hi");
  CHECK(field.position == 1003);
  CHECK(reader.position_of(field.bytes) == 1005);
  REQUIRE(reader.next(field));
  CHECK(field.type == io::protobuf_wire_type::fixed32);
  CHECK(io::protobuf_float(field.value) == 0.5f);
  REQUIRE(reader.next(field));
  CHECK(field.number == 4);
  CHECK(field.type == io::protobuf_wire_type::fixed64);
  CHECK(field.value == std::uint64_t{1} << 56);
  CHECK(!reader.next(field));
}

TEST_CASE("protobuf fields refused: a group, field number 0, a wire type other than the schema's") {
  io::protobuf_field field;
  const std::string group = protobuf_varint(5 << 3 | 3);
  io::protobuf_reader groups(group, file, "the model");
  CHECK(refusal([&] { groups.next(field); }) ==
        "model/tokenizer.model: byte 0: wire type 3 (a group or no protobuf type) in field 5 in the model (not a "
        "protobuf message, or a truncated one)");
  const std::string number_zero = "\x00\x00"s;
  io::protobuf_reader zero(number_zero, file, "the model");
  CHECK(refusal([&] { zero.next(field); }) ==
        "model/tokenizer.model: byte 0: field number 0 in the model (not a protobuf message, or a truncated one)");
  const std::string piece = protobuf_varint_field(1, 7);
  io::protobuf_reader pieces(piece, file, "pieces[3]", 40);
  REQUIRE(pieces.next(field));
  CHECK(refusal([&] { pieces.require(field, "piece", io::protobuf_wire_type::length_delimited); }) ==
        "model/tokenizer.model: byte 40: field 1 (piece) has wire type varint, not length-delimited in pieces[3] (not "
        "a protobuf message, or a truncated one)");
}

}  // namespace test_protobuf_wire
