// What a format lets a pickle name and do, and the opcodes that ask it: GLOBAL and STACK_GLOBAL
// name a global, REDUCE calls one, BINPERSID loads a persistent id, BUILD gives a value its
// state, and INST (which no torch.save writes) names a class to call. The interpreter checks the
// form of each request (a call is of a global, with a tuple; BUILD is of a value not yet used);
// the format's pickle_hooks decide the rest, allowing the few names the format uses and refusing
// every other (io/torch/pickle.hpp holds torch's allow-list). Nothing is imported, called or
// executed: a global is a name, a call is the hooks' interpretation of a name and its arguments.
#pragma once

#include <string>

#include "io/torch/pickle/opcodes.hpp"
#include "io/torch/pickle/stack.hpp"
#include "io/torch/pickle/value.hpp"

namespace clp_transfer::io {

/// What a format allows a pickle to name and do. Each member returns the value its opcode
/// pushes, or throws (malformed_file naming the file) to refuse.
class pickle_hooks {
 public:
  virtual ~pickle_hooks() = default;
  /// GLOBAL and STACK_GLOBAL: the value that stands for `module`.`name`.
  virtual pickle_ref find_global(const std::string& module, const std::string& name) = 0;
  /// REDUCE: `callable` (a value find_global returned) applied to `arguments` (a tuple).
  virtual pickle_ref call(const pickle_value& callable, const pickle_value& arguments) = 0;
  /// BINPERSID: the object a persistent id stands for.
  virtual pickle_ref persistent_load(const pickle_value& id) = 0;
  /// BUILD: `state` given to `target`.
  virtual void build(pickle_value& target, const pickle_value& state) = 0;
};

/// Runs `in` when it is GLOBAL, STACK_GLOBAL, REDUCE, BINPERSID, BUILD or INST, asking `hooks`;
/// returns false, and does nothing, for any other opcode. The values the hooks are given are
/// frozen first, and each value they return counts against the stack's limits. Throws
/// malformed_file naming the file for a request of the wrong form, and always for INST
/// (after the hooks have seen its name, so that a global they refuse is refused by its name).
/// @param[in]     in     a decoded opcode
/// @param[in,out] stack  the values the opcode takes, and where it pushes its result
/// @param[in]     hooks  what the format allows
/// @param[in]     site   where a refusal points
bool run_through_hooks(const pickle_instruction& in, pickle_stack& stack, pickle_hooks& hooks, const pickle_site& site);

}  // namespace clp_transfer::io
