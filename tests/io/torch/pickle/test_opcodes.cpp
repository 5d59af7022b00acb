// Tests for the pickle decoder (io/torch/pickle/opcodes.hpp): each opcode's argument decoded as
// Python's pickletools defines it, the byte a refusal points at, and every refusal's whole
// message. Nothing here runs what is decoded: a GLOBAL of os.system is only a name.
#include "io/torch/pickle/opcodes.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "support/error_of.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using namespace std::string_literals;
using op = io::pickle_opcode;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_pickle_opcodes {
namespace {

const fs::path file = "model/pytorch_model.bin";

/// The instructions of `bytes`, up to and including its STOP; they point into `bytes`.
std::vector<io::pickle_instruction> decode(std::string_view bytes) {
  io::pickle_site site{file, "a/data.pkl"};
  io::pickle_decoder decoder(site, bytes);
  std::vector<io::pickle_instruction> instructions;
  do {
    instructions.push_back(decoder.next());
    CHECK(site.opcode_at == instructions.back().at);
  } while (instructions.back().op != op::stop);
  return instructions;
}

/// The whole message of the refusal of decoding `bytes`, or "" when there is none.
std::string refusal(std::string_view bytes) {
  return error_of<clp_transfer::io::malformed_file>([&] { decode(bytes); });
}

}  // namespace

TEST_CASE("pickle integers: BININT signed, BININT1 and BININT2 unsigned, LONG1 and LONG4 two's complement") {
  const auto in = decode(
      "J\xff\xff\xff\xff"
      "K\xff"
      "M\xff\xff"
      "\x8a\x01\xff"
      "\x8a\x02\xff\x00"
      "\x8a\x00"
      "\x8b\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"
      "."s);
  REQUIRE(in.size() == 8);
  CHECK(in[0].op == op::binint);
  CHECK(in[0].integer == -1);
  CHECK(in[1].op == op::binint1);
  CHECK(in[1].integer == 255);
  CHECK(in[2].integer == 65535);
  CHECK(in[3].op == op::long1);
  CHECK(in[3].integer == -1);
  CHECK(in[4].integer == 255);
  CHECK(in[5].integer == 0);
  CHECK(in[6].op == op::long4);
  CHECK(in[6].integer == std::numeric_limits<std::int64_t>::min());
  CHECK(in[7].at == 32);
}

TEST_CASE("pickle floats, strings, bytes, globals and memo indices: each opcode's argument") {
  // Named: the instructions' texts and names point into it.
  const std::string bytes =
      "\x80\x05"
      "G\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "\x8c\x03"
      "abc"
      "X\x01\x00\x00\x00z"
      "C\x02\x00\x01"
      "cos\nsystem\n"
      "q\x05"
      "r\x00\x01\x00\x00"
      "h\x05"
      "."s;
  const auto in = decode(bytes);
  REQUIRE(in.size() == 10);
  CHECK(in[0].op == op::proto);
  CHECK(in[0].number == 5);
  CHECK(in[1].op == op::binfloat);
  CHECK(in[1].floating == 1.5);  // big-endian, unlike the integers
  CHECK(in[2].op == op::short_binunicode);
  CHECK(in[2].text == "abc");
  CHECK(in[3].op == op::binunicode);
  CHECK(in[3].text == "z");
  CHECK(in[4].op == op::short_binbytes);
  CHECK(in[4].text == "\x00\x01"s);
  CHECK(in[5].op == op::global);  // a name, decoded: deciding on it is the hooks' business
  CHECK(in[5].module == "os");
  CHECK(in[5].name == "system");
  CHECK(in[6].number == 5);
  CHECK(in[7].op == op::long_binput);
  CHECK(in[7].number == 256);
  CHECK(in[8].op == op::binget);
  CHECK(in[8].at == 44);
}

TEST_CASE("every opcode pickle_opcode names decodes, with its argument read") {
  // clang-format off
  const op every_opcode[] = {
      op::proto, op::frame, op::stop, op::none, op::newtrue, op::newfalse, op::binint, op::binint1,
      op::binint2, op::long1, op::long4, op::binfloat, op::binunicode, op::short_binunicode,
      op::binunicode8, op::binbytes, op::short_binbytes, op::binbytes8, op::pop, op::dup, op::mark,
      op::pop_mark, op::empty_tuple, op::tuple, op::tuple1, op::tuple2, op::tuple3, op::empty_list,
      op::list, op::append, op::appends, op::empty_dict, op::dict, op::setitem, op::setitems,
      op::binput, op::long_binput, op::memoize, op::binget, op::long_binget, op::global,
      op::stack_global, op::reduce, op::binpersid, op::build, op::inst};
  // clang-format on
  for (const op code : every_opcode) {
    // Eight zero bytes are a whole argument of every size, or a length of 0; the lines end GLOBAL's.
    const std::string bytes = static_cast<char>(code) + std::string(8, '\0') + "\n\n";
    INFO("opcode ", static_cast<int>(code));
    io::pickle_site site{file, "a/data.pkl"};
    io::pickle_decoder decoder(site, bytes);
    CHECK(decoder.next().op == code);
  }
}

TEST_CASE("a pickle cut short is refused at the byte of the opcode it cuts") {
  CHECK(refusal("}X\x10\x00\x00\x00"
                "abc"s) == "model/pytorch_model.bin: a/data.pkl byte 1: the pickle ends inside an opcode's argument");
  CHECK(refusal("}}\x80") == "model/pytorch_model.bin: a/data.pkl byte 2: the pickle ends inside an opcode's argument");
  CHECK(refusal("}cos\nsys") == "model/pytorch_model.bin: a/data.pkl byte 1: the pickle ends inside a global's name");
  // No STOP: the last opcode is the one a STOP should have followed.
  CHECK(refusal("\x80\x02}") == "model/pytorch_model.bin: a/data.pkl byte 2: the pickle ends without STOP");
  CHECK(refusal("") == "model/pytorch_model.bin: a/data.pkl byte 0: the pickle ends without STOP");
  CHECK(refusal("}\x8a\x09" + std::string(9, '\x01') + ".") ==
        "model/pytorch_model.bin: a/data.pkl byte 1: an integer of 9 bytes, wider than 64 bits");
}

TEST_CASE("opcodes no torch.save writes are refused by their name, or their byte when pickle has none") {
  CHECK(refusal("}I1\n.") == "model/pytorch_model.bin: a/data.pkl byte 1: opcode INT, which no torch.save writes");
  CHECK(refusal("p0\n.") == "model/pytorch_model.bin: a/data.pkl byte 0: opcode PUT, which no torch.save writes");
  CHECK(refusal("\x81.") == "model/pytorch_model.bin: a/data.pkl byte 0: opcode NEWOBJ, which no torch.save writes");
  CHECK(refusal("\x98.") ==
        "model/pytorch_model.bin: a/data.pkl byte 0: opcode READONLY_BUFFER, which no torch.save writes");
  CHECK(refusal("\xff.") == "model/pytorch_model.bin: a/data.pkl byte 0: opcode 0xff, which no torch.save writes");
}

}  // namespace test_pickle_opcodes
