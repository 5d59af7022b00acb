// Every numeric option of every command, through values that mean nothing: zero or negative
// where a count or a positive number is meant, not a number, infinite, past the end of its range,
// a fraction where a count is meant. Each must be refused in one line naming the option, with
// the status docs/troubleshooting.md gives its id (1: option-out-of-range or extend-token-list;
// 2: usage, the values the conversion itself refuses), and no output or report left behind.
// The models are the shipped pair, so a refusal here is the option's, not the input's.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "refusals.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_option_walk {
namespace {

using namespace program_test;

const fs::path models_dir = CLP_EXAMPLE_MODELS_DIR;
const std::string source = (models_dir / "en-large").string();
const std::string helper = (models_dir / "de-small").string();

/// One hostile value of one option of one command.
struct hostile {
  std::vector<std::string> command;  ///< the command and what it needs besides the option
  std::string option, value;
  std::string id;  ///< its troubleshooting id
  int status;
};

/// The walk: every numeric option, each command that takes it, and the values it must refuse.
std::vector<hostile> walk(const fs::path& out) {
  const std::string output = (out / "model").string();
  const std::vector<std::string> transfer = {"transfer", "--source", source, "--helper", helper, "--output", output};
  const std::vector<std::string> extend = {"extend", "--source", source, "--helper", helper, "--output", output};
  const std::vector<std::string> evaluate = {"evaluate", "--source", source, "--helper", helper};
  const std::vector<std::string> similarity = {"similarity", source, source};
  const auto with = [](std::vector<std::string> command, std::initializer_list<std::string> more) {
    command.insert(command.end(), more);
    return command;
  };
  std::vector<hostile> cases;
  const auto add = [&](const std::vector<std::string>& command, const std::string& option,
                       std::initializer_list<const char*> values, const std::string& id, int status) {
    for (const char* value : values) cases.push_back({command, option, value, id, status});
  };
  for (const auto& command : {transfer, extend, evaluate}) {
    add(command, "--threads", {"-1", "-100"}, "option-out-of-range", 1);
    add(command, "--threads", {"abc", "1.5", ""}, "usage", 2);
    add(command, "--tile-mb", {"0", "-1", "nan", "inf", "1e300"}, "option-out-of-range", 1);
    add(command, "--tile-mb", {"", " "}, "usage", 2);  // CLI11 would read an empty value as 0
  }
  for (const auto& command : {transfer, extend}) {
    add(command, "--k", {"0", "-5"}, "option-out-of-range", 1);
    add(command, "--k", {"abc", "1e9", "2.5", ""}, "usage", 2);
    add(with(command, {"--weighting", "softmax"}), "--temperature", {"nan", "-1", "0", "inf", "-inf"},
        "option-out-of-range", 1);
    add(with(command, {"--weighting", "softmax"}), "--temperature", {"warm"}, "usage", 2);
    add(command, "--lambda", {"nan", "inf", "-inf"}, "option-out-of-range", 1);
    add(command, "--lambda", {"", "x"}, "usage", 2);
  }
  add(with(transfer, {"--method", "random"}), "--seed", {"-1", "1.5", "abc"}, "usage", 2);
  add(extend, "--add", {"0"}, "extend-token-list", 1);
  add(extend, "--add", {"-1", "-3", "1.5"}, "usage", 2);
  add(extend, "--drift-budget", {"nan", "-0.1", "1.5", "inf"}, "extend-token-list", 1);
  add(evaluate, "--held-out", {"0", "1", "nan", "-0.1", "inf"}, "option-out-of-range", 1);
  add(evaluate, "--splits", {"0", "-1"}, "option-out-of-range", 1);
  add(evaluate, "--held-out", {""}, "usage", 2);
  add(extend, "--drift-budget", {""}, "usage", 2);
  add(similarity, "--k", {""}, "usage", 2);
  add(similarity, "--sample", {""}, "usage", 2);
  add(similarity, "--k", {"0", "-3"}, "option-out-of-range", 1);
  add(similarity, "--sample", {"-1", "5001"}, "option-out-of-range", 1);
  add(similarity, "--seed", {"-1"}, "usage", 2);
  return cases;
}

TEST_CASE("every numeric option of every command refuses values that mean nothing, before any output") {
  const temp_dir dir;
  const fs::path out = dir / "out";
  fs::create_directories(out);
  const std::vector<hostile> cases = walk(out);
  for (const hostile& c : cases) {
    std::vector<std::string> args = c.command;
    args.push_back(c.option);
    args.push_back(c.value);
    if (args.front() != "similarity") args.push_back("--quiet");
    CAPTURE(c.option);
    CAPTURE(c.value);
    INFO("command: ", args.front());
    const program_result result = run_program(args);
    refused(c.id, result, c.option, c.status);
    CHECK(folder_entries(out).empty());
  }
  MESSAGE(cases.size() << " hostile values refused");
}

}  // namespace
}  // namespace test_option_walk
