// A pickle's bytes decoded one opcode at a time, with its argument, and nothing run: the opcodes
// of pickle protocols 2 to 5 that torch.save writes, and INST, which names a global (and so is
// refused as the global is, by the hooks, before the machine refuses INST itself). Every read is
// bounds-checked. An opcode no torch.save writes (protocol 0 and 1 text opcodes, OBJ, NEWOBJ,
// the extension registry, sets, out-of-band buffers) is refused by its name as it is decoded.
//
// Every refusal of the pickle interpreter, here and in the parts that run what is decoded, is a
// malformed_file naming the file, the pickle's record and the byte of the opcode at fault;
// pickle_site writes that message, and the decoder keeps its byte current.
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

/// Where a refusal points: the file, the pickle's record in it, and the opcode being run.
struct pickle_site {
  const std::filesystem::path& file;  ///< the file holding the pickle; must outlive the site
  std::string record;                 ///< where the pickle is in it: "archive/data.pkl"
  std::size_t opcode_at = 0;          ///< the opcode's byte in the pickle

  /// Throws malformed_file naming the file: "<record> byte <opcode_at>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const {
    malformed(file, record + " byte " + std::to_string(opcode_at) + ": " + problem);
  }
};

/// The opcodes the decoder takes, by their names in Python's pickletools, grouped by the part
/// of the interpreter that runs them.
// clang-format off
enum class pickle_opcode : unsigned char {
  // protocol and framing
  proto = 0x80, frame = 0x95, stop = '.',
  // plain values
  none = 'N', newtrue = 0x88, newfalse = 0x89,
  binint = 'J', binint1 = 'K', binint2 = 'M', long1 = 0x8a, long4 = 0x8b, binfloat = 'G',
  binunicode = 'X', short_binunicode = 0x8c, binunicode8 = 0x8d,
  binbytes = 'B', short_binbytes = 'C', binbytes8 = 0x8e,
  // the stack and its MARKs
  pop = '0', dup = '2', mark = '(', pop_mark = '1',
  // containers
  empty_tuple = ')', tuple = 't', tuple1 = 0x85, tuple2 = 0x86, tuple3 = 0x87,
  empty_list = ']', list = 'l', append = 'a', appends = 'e',
  empty_dict = '}', dict = 'd', setitem = 's', setitems = 'u',
  // the memo
  binput = 'q', long_binput = 'r', memoize = 0x94, binget = 'h', long_binget = 'j',
  // what the hooks decide
  global = 'c', stack_global = 0x93, reduce = 'R', binpersid = 'Q', build = 'b', inst = 'i',
};
// clang-format on

/// One decoded opcode and its argument. Only the field its opcode has is set.
struct pickle_instruction {
  pickle_opcode op = pickle_opcode::stop;
  std::size_t at = 0;  ///< the opcode's byte in the pickle
  /// PROTO: the protocol; FRAME: the frame's length; BINPUT, LONG_BINPUT, BINGET, LONG_BINGET:
  /// the memo index.
  std::uint64_t number = 0;
  std::int64_t integer = 0;       ///< BININT, BININT1, BININT2, LONG1, LONG4
  double floating = 0;            ///< BINFLOAT
  std::string_view text;          ///< BINUNICODE, BINBYTES and their short and 8 forms: the contents
  std::string_view module, name;  ///< GLOBAL, INST: the global's two lines
};

/// Decodes a pickle's opcodes in order. Its instructions point into the pickle's bytes.
class pickle_decoder {
 public:
  /// @param[in,out] site   where refusals point; its opcode_at follows the decoder
  /// @param[in]     bytes  the pickle; must outlive the decoder and its instructions
  pickle_decoder(pickle_site& site, std::string_view bytes) : site_(site), bytes_(bytes) {}

  /// The next opcode and its argument; sets site.opcode_at to its byte. Throws
  /// malformed_file naming the file for an argument cut short, an integer wider than 64
  /// bits, an opcode it does not take (by its name), and at the end of the bytes: a pickle ends
  /// with STOP, so that refusal points at the last opcode, which should have been followed by one.
  pickle_instruction next();

 private:
  std::string_view take(std::uint64_t size) {
    if (size > bytes_.size() - at_) site_.fail("the pickle ends inside an opcode's argument");
    const std::string_view taken = bytes_.substr(at_, static_cast<std::size_t>(size));
    at_ += static_cast<std::size_t>(size);
    return taken;
  }
  std::uint64_t unsigned_le(std::size_t size) {
    const std::string_view b = take(size);
    std::uint64_t value = 0;
    for (std::size_t i = size; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(b[i]);
    return value;
  }
  /// A line ended by '\n' (GLOBAL's and INST's names).
  std::string_view line() {
    const std::size_t end = bytes_.find('\n', at_);
    if (end == std::string_view::npos) site_.fail("the pickle ends inside a global's name");
    const std::string_view text = bytes_.substr(at_, end - at_);
    at_ = end + 1;
    return text;
  }
  std::int64_t long_integer(std::uint64_t size);
  double big_endian_double() {
    std::uint64_t bits = 0;
    for (char c : take(8)) bits = (bits << 8) | static_cast<unsigned char>(c);
    double value;
    std::memcpy(&value, &bits, sizeof bits);
    return value;
  }
  [[noreturn]] void refuse(unsigned char op) const;

  pickle_site& site_;
  std::string_view bytes_;
  std::size_t at_ = 0;
};

/// LONG1's and LONG4's argument: a little-endian two's complement integer of `size` bytes, at
/// most 8.

/// Refuses an opcode the decoder does not take, by its name.

}  // namespace clp_transfer::io
