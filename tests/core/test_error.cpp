// SPDX-License-Identifier: MIT
// clp/error.hpp: the kinds, the facts, and the one-line message built from them.

#include <clp/error.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

TEST_CASE("error: one line built from the facts, the kind and the class agree") {
  const clp::non_finite_input nan(clp::error_facts::in("clp::synthesize_rows").with_argument("helper").at(5, 2));
  CHECK(std::string(nan.what()) == "clp::synthesize_rows: 'helper' row 5 column 2 is NaN or infinite");
  CHECK(nan.kind() == clp::error_kind::non_finite_input);
  CHECK(nan.facts().row == 5);

  const clp::non_finite_input file(
      clp::error_facts{}.with_file("m/model.safetensors").with_tensor("wte.weight").at_row(7), "has\nno rows");
  CHECK(std::string(file.what()) == "m/model.safetensors: tensor \"wte.weight\" row 7 has no rows");

  const clp::invalid_argument option(clp::error_facts{}.with_argument("--k"), "must be at least 1, not 0");
  CHECK(std::string(option.what()) == "--k must be at least 1, not 0");

  const clp::unsupported_layout broken(clp::error_facts{}.with_file("a\nb"), "is not 2-D");
  CHECK(std::string(broken.what()) == "\"a\\nb\": is not 2-D");
  CHECK(clp::error_kind_name(broken.kind()) == "unsupported layout");

  // Every kind is a clp::error and a std::runtime_error; an unsupported layout is no invalid
  // argument.
  CHECK_THROWS_AS(throw broken, clp::error);
  CHECK_THROWS_AS(throw broken, std::runtime_error);
  bool invalid = false;
  try {
    throw broken;
  } catch (const clp::invalid_argument&) {
    invalid = true;
  } catch (const clp::error&) {
  }
  CHECK(!invalid);
}
