// A pickle read without running it: a small interpreter of the opcodes of pickle protocols 2 to
// 5 that builds plain values (None, booleans, 64-bit integers, floats, strings, bytes, tuples,
// lists, dicts) and leaves every global, call, persistent id and BUILD to a pickle_hooks object
// of the caller's, which allows the few names its format uses and refuses every other. Nothing
// is imported, called or executed: a global is a name, a call is the hooks' interpretation of
// a name and its arguments.
//
// Its parts, each read and tested on its own:
//   io/torch/pickle/value.hpp    the values a pickle builds
//   io/torch/pickle/opcodes.hpp  the bytes decoded into opcodes and their arguments; where a refusal
//                          points
//   io/torch/pickle/stack.hpp    the stack and its MARKs; every value made, counted and nested there
//   io/torch/pickle/hooks.hpp    globals, calls, persistent ids and BUILD: what the hooks decide
// This header runs the plain values, the containers and the memo, and drives the parts.
//
// Hardened for hostile input: every read is bounds-checked; the values a pickle may create, the
// memo, the stack and the nesting are bounded; a container can gain items only until it is put
// into another one (as pickle writes them), so no value ever contains itself. Opcodes no
// torch.save writes (protocol 0 and 1 text opcodes, INST, OBJ, NEWOBJ, the extension registry,
// out-of-band buffers) are refused by name; INST names its global, which is refused as a
// global is. Every refusal is a malformed_file naming the file, the record and the byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/torch/pickle/hooks.hpp"
#include "io/torch/pickle/opcodes.hpp"
#include "io/torch/pickle/stack.hpp"
#include "io/torch/pickle/value.hpp"

namespace clp_transfer::io {

/// Reads one pickle. Usage: pickle_machine(file, record, bytes, hooks).run().
class pickle_machine {
 public:
  /// @param[in] file    the file holding the pickle, for messages; must outlive the machine
  /// @param[in] record  where the pickle is in it, for messages: "archive/data.pkl"
  /// @param[in] bytes   the pickle; must outlive the machine
  /// @param[in] hooks   what the format allows
  /// @param[in] limits  what the pickle may build
  pickle_machine(const std::filesystem::path& file, std::string record, std::string_view bytes, pickle_hooks& hooks,
                 pickle_limits limits = {})
      : site_{file, std::move(record)}, decoder_(site_, bytes), stack_(site_, limits), hooks_(hooks) {}
  // The decoder and the stack refer to site_.
  pickle_machine(const pickle_machine&) = delete;
  pickle_machine& operator=(const pickle_machine&) = delete;

  /// Runs the pickle to its STOP; returns the value it leaves. Throws malformed_file naming
  /// the file for anything the pickle does that is not plain data or allowed by the hooks.
  pickle_ref run() {
    for (;;) {
      const pickle_instruction in = decoder_.next();
      if (in.op == pickle_opcode::stop) break;
      if (!plain_value(in) && !container(in) && !memo(in) && !run_through_hooks(in, stack_, hooks_, site_))
        throw std::logic_error("pickle_machine: an opcode the decoder takes is run by no part");
    }
    if (stack_.size() != 1 || stack_.marks() != 0)
      site_.fail("STOP with " + std::to_string(stack_.size()) + " values and " + std::to_string(stack_.marks()) +
                 " marks on the stack, not one value");
    return stack_.back();
  }

 private:
  using kind = pickle_value::kind;

  bool plain_value(const pickle_instruction& in);
  bool container(const pickle_instruction& in);
  bool memo(const pickle_instruction& in);

  /// A new tuple or list of `items`.
  pickle_ref sequence(kind type, std::vector<pickle_ref> items) {
    pickle_ref value = stack_.make(type);
    for (pickle_ref& item : items) stack_.adopt(*value, std::move(item));
    return value;
  }
  /// Adds key, value pairs to `dict`. A key given twice is kept twice (Python would keep the
  /// last value): the reader of the dict decides whether that is an error.
  void set_items(pickle_value& dict, std::vector<pickle_ref> pairs) {
    if (!dict.is(kind::dict)) site_.fail("SETITEM(S) on a value that is not a dict");
    if (pairs.size() % 2 != 0) site_.fail("SETITEMS with a key without a value");
    for (pickle_ref& item : pairs) stack_.adopt(dict, std::move(item));
  }

  pickle_site site_;
  pickle_decoder decoder_;
  pickle_stack stack_;
  pickle_hooks& hooks_;
  std::unordered_map<std::uint64_t, pickle_ref> memo_;
};

/// PROTO and FRAME, the opcodes that push one plain value, POP and DUP.

/// The opcodes that build tuples, lists and dicts, and MARK.

/// The memo: PUT and GET in their binary forms, and MEMOIZE.

}  // namespace clp_transfer::io
