// Tests for the pickle interpreter's stack (io/torch/pickle/stack.hpp): values taken only above the
// last MARK, containers that cannot gain items once used or contain themselves, and each bound
// of pickle_limits, with every refusal's whole message pointing at the site's opcode.
#include "io/torch/pickle/stack.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/error_of.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using kind = io::pickle_value::kind;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_pickle_stack {
namespace {

const fs::path file = "model/pytorch_model.bin";

/// The whole message of the clp::malformed_file `action` throws, or "" when it throws none.
template <class Action>
std::string refusal(Action&& action) {
  return error_of<clp_transfer::io::malformed_file>(action);
}

}  // namespace

TEST_CASE("the pickle stack gives values only above the last MARK, and POP of an empty frame drops its MARK") {
  const io::pickle_site site{file, "a/data.pkl", 7};
  io::pickle_stack stack(site, {});
  CHECK(refusal([&] { stack.pop(); }) ==
        "model/pytorch_model.bin: a/data.pkl byte 7: an opcode takes a value the stack does not hold");
  CHECK(refusal([&] { stack.pop_mark(); }) ==
        "model/pytorch_model.bin: a/data.pkl byte 7: an opcode takes the values since a MARK, and there is none");
  stack.push(stack.make(kind::none));
  stack.mark();
  CHECK(refusal([&] { stack.top(); }) ==
        "model/pytorch_model.bin: a/data.pkl byte 7: an opcode takes a value the stack does not hold");
  stack.pop_value_or_mark();  // nothing above the MARK: the MARK goes
  CHECK(stack.marks() == 0);
  REQUIRE(stack.size() == 1);
  stack.pop_value_or_mark();  // now the value
  CHECK(stack.size() == 0);

  stack.push(stack.make(kind::none));
  stack.mark();
  stack.push(stack.make(kind::integer));
  stack.push(stack.make(kind::string));
  const std::vector<io::pickle_ref> framed = stack.pop_mark();
  REQUIRE(framed.size() == 2);
  CHECK(framed[0]->is(kind::integer));
  CHECK(framed[1]->is(kind::string));
  CHECK(stack.size() == 1);
  CHECK(stack.back()->is(kind::none));
}

TEST_CASE("a pickle container gains items until it is put into another, and never contains itself") {
  const io::pickle_site site{file, "a/data.pkl", 3};
  io::pickle_stack stack(site, {});
  const io::pickle_ref inner = stack.make(kind::list);
  const io::pickle_ref outer = stack.make(kind::list);
  const std::string refused =
      "model/pytorch_model.bin: a/data.pkl byte 3: adds to a container after it was used, or to itself (a value that "
      "would contain itself)";
  CHECK(refusal([&] { stack.adopt(*inner, inner); }) == refused);
  stack.adopt(*inner, stack.make(kind::integer));
  stack.adopt(*outer, inner);
  CHECK(inner->frozen);
  CHECK(!outer->frozen);
  CHECK(outer->depth == 3);
  CHECK(outer->items.size() == 1);
  CHECK(refusal([&] { stack.adopt(*inner, stack.make(kind::none)); }) == refused);
}

TEST_CASE("pickle_limits bound the values made, the stack, the nesting and the MARKs open") {
  const io::pickle_site site{file, "a/data.pkl", 9};
  SUBCASE("values made, and put into containers") {
    io::pickle_stack stack(site, {3, 1000, 1000});
    const io::pickle_ref list = stack.make(kind::list);
    stack.adopt(*list, stack.make(kind::none));  // made and put: two more
    CHECK(refusal([&] { stack.make(kind::none); }) ==
          "model/pytorch_model.bin: a/data.pkl byte 9: more than 3 values (corrupt or hostile pickle?)");
  }
  SUBCASE("values on the stack") {
    io::pickle_stack stack(site, {2, 1000, 1000});
    const io::pickle_ref value = std::make_shared<io::pickle_value>();
    stack.push(value);
    stack.push(value);
    CHECK(refusal([&] { stack.push(value); }) ==
          "model/pytorch_model.bin: a/data.pkl byte 9: a stack of more than 2 values");
  }
  SUBCASE("nesting") {
    io::pickle_stack stack(site, {1000, 2, 1000});
    const io::pickle_ref middle = stack.make(kind::list);
    stack.adopt(*middle, stack.make(kind::list));
    CHECK(
        refusal([&] { stack.adopt(*stack.make(kind::list), middle); }) ==
        "model/pytorch_model.bin: a/data.pkl byte 9: values nested deeper than 2 levels (corrupt or hostile pickle?)");
  }
  SUBCASE("MARKs open") {
    io::pickle_stack stack(site, {1000, 2, 1000});
    stack.mark();
    stack.mark();
    CHECK(refusal([&] { stack.mark(); }) == "model/pytorch_model.bin: a/data.pkl byte 9: more than 2 open MARKs");
  }
}

}  // namespace test_pickle_stack
