#include "io/torch/pickle/opcodes.hpp"

namespace clp_transfer::io {

pickle_instruction pickle_decoder::next() {
  if (at_ == bytes_.size()) site_.fail("the pickle ends without STOP");
  pickle_instruction in;
  in.at = site_.opcode_at = at_;
  const auto byte = static_cast<unsigned char>(bytes_[at_++]);
  in.op = static_cast<pickle_opcode>(byte);
  using op = pickle_opcode;
  switch (in.op) {
    case op::proto:
    case op::binput:
    case op::binget:
      in.number = unsigned_le(1);
      break;
    case op::long_binput:
    case op::long_binget:
      in.number = unsigned_le(4);
      break;
    case op::frame:  // a length that only helps a reader buffer
      in.number = unsigned_le(8);
      break;
    case op::binint:
      in.integer = static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4)));
      break;
    case op::binint1:
    case op::binint2:
      in.integer = static_cast<std::int64_t>(unsigned_le(in.op == op::binint1 ? 1 : 2));
      break;
    case op::long1:
    case op::long4:
      in.integer = long_integer(unsigned_le(in.op == op::long1 ? 1 : 4));
      break;
    case op::binfloat:
      in.floating = big_endian_double();
      break;
    case op::short_binunicode:
    case op::short_binbytes:
      in.text = take(unsigned_le(1));
      break;
    case op::binunicode:
    case op::binbytes:
      in.text = take(unsigned_le(4));
      break;
    case op::binunicode8:
    case op::binbytes8:
      in.text = take(unsigned_le(8));
      break;
    case op::global:
    case op::inst:
      in.module = line();
      in.name = line();
      break;
    // clang-format off
    case op::stop: case op::none: case op::newtrue: case op::newfalse: case op::pop: case op::dup:
    case op::mark: case op::pop_mark: case op::empty_tuple: case op::tuple: case op::tuple1:
    case op::tuple2: case op::tuple3: case op::empty_list: case op::list: case op::append:
    case op::appends: case op::empty_dict: case op::dict: case op::setitem: case op::setitems:
    case op::memoize: case op::stack_global: case op::reduce: case op::binpersid: case op::build:
      break;  // no argument
    // clang-format on
    default:
      refuse(byte);
  }
  return in;
}

std::int64_t pickle_decoder::long_integer(std::uint64_t size) {
  if (size > 8) site_.fail("an integer of " + std::to_string(size) + " bytes, wider than 64 bits");
  const std::string_view b = take(size);
  std::uint64_t bits = 0;
  for (std::size_t i = b.size(); i-- > 0;) bits = (bits << 8) | static_cast<unsigned char>(b[i]);
  if (size > 0 && size < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) bits |= ~std::uint64_t{0} << (8 * size);
  std::int64_t value;
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

void pickle_decoder::refuse(unsigned char op) const {
  // clang-format off
  static const std::pair<unsigned char, const char*> names[] = {
      {'I', "INT"},          {'L', "LONG"},              {'F', "FLOAT"},     {'S', "STRING"},
      {'T', "BINSTRING"},    {'U', "SHORT_BINSTRING"},   {'V', "UNICODE"},   {'p', "PUT"},
      {'g', "GET"},          {'P', "PERSID"},            {'o', "OBJ"},       {0x81, "NEWOBJ"},
      {0x92, "NEWOBJ_EX"},   {0x82, "EXT1"},             {0x83, "EXT2"},     {0x84, "EXT4"},
      {0x8f, "EMPTY_SET"},   {0x90, "ADDITEMS"},         {0x91, "FROZENSET"}, {0x96, "BYTEARRAY8"},
      {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}};
  // clang-format on
  static constexpr char hex[] = "0123456789abcdef";
  std::string named = std::string("0x") + hex[op >> 4] + hex[op & 15];
  for (const auto& [code, name] : names)
    if (code == op) named = name;
  site_.fail("opcode " + named + ", which no torch.save writes");
}

}  // namespace clp_transfer::io
