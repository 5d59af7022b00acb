#include "io/torch/pickle/hooks.hpp"

namespace clp_transfer::io {

bool run_through_hooks(const pickle_instruction& in, pickle_stack& stack, pickle_hooks& hooks,
                       const pickle_site& site) {
  using kind = pickle_value::kind;
  switch (in.op) {
    case pickle_opcode::global: {
      const std::string module(in.module), name(in.name);
      stack.grow();
      stack.push(hooks.find_global(module, name));
      return true;
    }
    case pickle_opcode::stack_global: {
      const pickle_ref name = stack.pop();
      const pickle_ref module = stack.pop();
      if (!module->is(kind::string) || !name->is(kind::string))
        site.fail("STACK_GLOBAL of values that are not strings");
      stack.grow();
      stack.push(hooks.find_global(module->text, name->text));
      return true;
    }
    case pickle_opcode::reduce: {
      pickle_ref arguments = stack.pop();
      const pickle_ref callable = stack.pop();
      if (!callable->is(kind::global)) site.fail("REDUCE calls a value that is not a global");
      if (!arguments->is(kind::tuple)) site.fail("REDUCE with arguments that are not a tuple");
      arguments->frozen = true;
      stack.grow();
      stack.push(hooks.call(*callable, *arguments));
      return true;
    }
    case pickle_opcode::binpersid: {
      pickle_ref id = stack.pop();
      id->frozen = true;
      stack.grow();
      stack.push(hooks.persistent_load(*id));
      return true;
    }
    case pickle_opcode::build: {
      pickle_ref state = stack.pop();
      state->frozen = true;
      pickle_value& target = *stack.top();
      if (target.frozen) site.fail("BUILD of a value after it was used");
      hooks.build(target, *state);
      return true;
    }
    case pickle_opcode::inst: {  // names a class, like GLOBAL, and calls it
      const std::string module(in.module), name(in.name);
      hooks.find_global(module, name);
      site.fail("INST of " + module + "." + name + " (torch.save does not write INST)");
    }
    default:
      return false;
  }
}

}  // namespace clp_transfer::io
