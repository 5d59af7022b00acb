// Tests for the opcodes that ask a format's hooks (io/torch/pickle/hooks.hpp): what the hooks are asked
// and given, the form each request must have before they are asked, and that a name the hooks
// refuse stays refused, INST's too. The hooks here allow the module "allowed" and record every
// request; torch's own allow-list is tested in test_torch_checkpoint.cpp.
#include "io/torch/pickle/hooks.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "support/error_of.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using kind = io::pickle_value::kind;
using op = io::pickle_opcode;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_pickle_hooks {
namespace {

const fs::path file = "model/pytorch_model.bin";

/// Allows the globals of the module "allowed", refuses every other, and records each request.
class recording_hooks final : public io::pickle_hooks {
 public:
  std::vector<std::string> requests;

  io::pickle_ref find_global(const std::string& module, const std::string& name) override {
    requests.push_back("global " + module + "." + name);
    if (module != "allowed") io::malformed(file, "refused " + module + "." + name);
    auto global = std::make_shared<io::pickle_value>();
    global->type = kind::global;
    global->text = module + "." + name;
    return global;
  }
  io::pickle_ref call(const io::pickle_value& callable, const io::pickle_value& arguments) override {
    requests.push_back("call " + callable.text + (arguments.frozen ? " with frozen arguments" : ""));
    return io::make_pickle_object("called", {});
  }
  io::pickle_ref persistent_load(const io::pickle_value& id) override {
    requests.push_back(std::string("load") + (id.frozen ? " a frozen id" : ""));
    return io::make_pickle_object("loaded", {});
  }
  void build(io::pickle_value& target, const io::pickle_value& state) override {
    requests.push_back("build " + std::string(target.frozen ? "a used value" : "an open value") +
                       (state.frozen ? " from a frozen state" : ""));
  }
};

/// An instruction of opcode `code` at byte 0; for GLOBAL and INST, of `module`.`name`.
io::pickle_instruction instruction(op code, std::string_view module = {}, std::string_view name = {}) {
  io::pickle_instruction in;
  in.op = code;
  in.module = module;
  in.name = name;
  return in;
}

/// A fresh site, stack and hooks, with `run` running one instruction through the hooks.
struct fixture {
  io::pickle_site site{file, "a/data.pkl", 4};
  io::pickle_stack stack{site, {}};
  recording_hooks hooks;

  bool run(const io::pickle_instruction& in) { return io::run_through_hooks(in, stack, hooks, site); }
  /// The whole message of the clp::malformed_file running `in` throws, or "".
  std::string refusal(const io::pickle_instruction& in) {
    return error_of<clp_transfer::io::malformed_file>([&] { run(in); });
  }
  io::pickle_ref push(kind type, std::string text = {}) {
    stack.push(stack.make(type));
    stack.back()->text = std::move(text);
    return stack.back();
  }
};

}  // namespace

TEST_CASE("GLOBAL and STACK_GLOBAL ask the hooks for the name, and push what they allow") {
  fixture f;
  CHECK(f.run(instruction(op::global, "allowed", "thing")));
  REQUIRE(f.stack.size() == 1);
  CHECK(f.stack.back()->is(kind::global));
  CHECK(f.stack.back()->text == "allowed.thing");
  // The hooks' refusal is the refusal: the machine adds nothing to it.
  CHECK(f.refusal(instruction(op::global, "os", "system")) == "model/pytorch_model.bin: refused os.system");

  f.push(kind::string, "builtins");
  f.push(kind::string, "eval");
  CHECK(f.refusal(instruction(op::stack_global)) == "model/pytorch_model.bin: refused builtins.eval");
  f.push(kind::string, "allowed");
  f.push(kind::bytes, "thing");
  CHECK(f.refusal(instruction(op::stack_global)) ==
        "model/pytorch_model.bin: a/data.pkl byte 4: STACK_GLOBAL of values that are not strings");
  CHECK(f.hooks.requests ==
        std::vector<std::string>{"global allowed.thing", "global os.system", "global builtins.eval"});
}

TEST_CASE("REDUCE calls only a global, with a tuple, which the hooks get frozen") {
  fixture f;
  f.push(kind::string, "allowed.thing");
  f.push(kind::tuple);
  CHECK(f.refusal(instruction(op::reduce)) ==
        "model/pytorch_model.bin: a/data.pkl byte 4: REDUCE calls a value that is not a global");
  f.run(instruction(op::global, "allowed", "thing"));
  f.push(kind::list);
  CHECK(f.refusal(instruction(op::reduce)) ==
        "model/pytorch_model.bin: a/data.pkl byte 4: REDUCE with arguments that are not a tuple");
  f.run(instruction(op::global, "allowed", "thing"));
  f.push(kind::tuple);
  CHECK(f.run(instruction(op::reduce)));
  CHECK(f.stack.back()->text == "called");
  CHECK(f.hooks.requests == std::vector<std::string>{"global allowed.thing", "global allowed.thing",
                                                     "call allowed.thing with frozen arguments"});
}

TEST_CASE("BINPERSID and BUILD give the hooks frozen values, and BUILD of a used value is refused") {
  fixture f;
  f.push(kind::tuple);
  CHECK(f.run(instruction(op::binpersid)));
  CHECK(f.stack.back()->text == "loaded");
  const io::pickle_ref target = f.push(kind::dict);
  f.push(kind::dict);
  CHECK(f.run(instruction(op::build)));
  CHECK(f.stack.back() == target);  // BUILD leaves its target on the stack
  target->frozen = true;
  f.push(kind::dict);
  CHECK(f.refusal(instruction(op::build)) ==
        "model/pytorch_model.bin: a/data.pkl byte 4: BUILD of a value after it was used");
  CHECK(f.hooks.requests == std::vector<std::string>{"load a frozen id", "build an open value from a frozen state"});
}

TEST_CASE("INST: the hooks see its name first, then INST itself is refused") {
  fixture f;
  CHECK(f.refusal(instruction(op::inst, "os", "system")) == "model/pytorch_model.bin: refused os.system");
  CHECK(f.refusal(instruction(op::inst, "allowed", "thing")) ==
        "model/pytorch_model.bin: a/data.pkl byte 4: INST of allowed.thing (torch.save does not write INST)");
  CHECK(f.hooks.requests == std::vector<std::string>{"global os.system", "global allowed.thing"});
}

TEST_CASE("opcodes of plain data are not the hooks' business: left alone") {
  fixture f;
  f.push(kind::none);
  for (op code : {op::mark, op::append, op::pop, op::tuple1, op::binget, op::stop}) CHECK(!f.run(instruction(code)));
  CHECK(f.stack.size() == 1);
  CHECK(f.stack.marks() == 0);
  CHECK(f.hooks.requests.empty());
}

}  // namespace test_pickle_hooks
