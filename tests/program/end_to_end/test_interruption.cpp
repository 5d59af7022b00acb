// A run stopped by a signal leaves nothing it wrote behind (io/system/interruption.hpp): SIGINT,
// SIGTERM and SIGHUP at each point of a real transfer and extension, sent by the program to
// itself where CLP_TRANSFER_TEST_SIGNAL names the point (as a user's Ctrl-C or a scheduler's
// SIGTERM would arrive there); and a staging folder a killed run left is named by the next run.
#include <cstdlib>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "model_fixtures.hpp"
#include "refusals.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_interruption {

using namespace program_test;

namespace {

/// The program run with CLP_TRANSFER_TEST_SIGNAL=`point`:`signal` in its environment.
program_result run_signalled(const std::vector<std::string>& arguments, const std::string& point,
                             const std::string& signal) {
  const std::string value = point + ":" + signal;
  ::setenv("CLP_TRANSFER_TEST_SIGNAL", value.c_str(), 1);
  program_result result = run_program(arguments);
  ::unsetenv("CLP_TRANSFER_TEST_SIGNAL");
  return result;
}

struct signal_case {
  const char* name;
  int status;
};
constexpr signal_case signals[] = {{"INT", 130}, {"TERM", 143}, {"HUP", 129}};
const std::vector<std::string> points = {"read", "synthesize", "write", "commit"};

/// Status 128 + the signal, the last line of stderr the interruption's, and check_readable's.
void check_interrupted(const program_result& result, const signal_case& signal) {
  INFO("stderr: [", result.err, "]");
  CHECK(result.exit_status == signal.status);
  const std::vector<std::string> lines = lines_of(result.err);
  REQUIRE(!lines.empty());
  CHECK(lines.back().rfind("clp-transfer: interrupted by SIG" + std::string(signal.name), 0) == 0);
  check_readable(lines.back());
}

}  // namespace

TEST_CASE("interrupted: transfer stopped by SIGINT, SIGTERM or SIGHUP at any point leaves no output, staging folder or report") {
  const workspace ws = gpt2_workspace();
  const fs::path report = ws.out_parent / "report.json";
  for (const std::string& point : points)
    for (const signal_case& signal : signals) {
      CAPTURE(point);
      CAPTURE(signal.name);
      check_interrupted(run_signalled(ws.transfer({"--report", report.string(), "--quiet"}), point, signal.name),
                        signal);
      CHECK(folder_entries(ws.out_parent).empty());
    }
  // With --force over an existing output, the old one stays as it was: the commit never started.
  fs::create_directories(ws.output);
  write_file(ws.output / "config.json", "{}");  // a model folder, which --force may replace
  write_file(ws.output / "keep.txt", "old model");
  check_interrupted(run_signalled(ws.transfer({"--force", "--report", report.string(), "--quiet"}), "commit", "INT"),
                    signals[0]);
  CHECK(folder_entries(ws.out_parent) == std::vector<std::string>{"model"});
  CHECK(folder_entries(ws.output) == std::vector<std::string>{"config.json", "keep.txt"});
  CHECK(read_file(ws.output / "keep.txt") == "old model");
}

TEST_CASE("interrupted: extend stopped at any point leaves nothing behind") {
  // The shipped pair, whose source tokenizer extend can extend.
  const fs::path models = CLP_EXAMPLE_MODELS_DIR;
  const temp_dir dir;
  const fs::path report = dir / "report.json";
  const std::vector<std::string> args = {
      "extend", "--source", (models / "en-large").string(), "--helper", (models / "de-small").string(),
      "--output", (dir / "model").string(),       "--report", report.string(),
      "--quiet"};
  for (const std::string& point : points) {
    CAPTURE(point);
    check_interrupted(run_signalled(args, point, "TERM"), signals[1]);
    CHECK(folder_entries(dir.path).empty());
  }
}

TEST_CASE("interrupted: a staging folder a killed run left is named by the next run on that output, never read") {
  const workspace ws = gpt2_workspace();
  const fs::path left = ws.out_parent / ".model.tmp-AbC123";
  fs::create_directories(left);
  write_file(left / "model.safetensors", "half written");
  const program_result result = run_program(ws.transfer());
  warned("warn-staging-left", result, left.string(), "killed");
  CHECK(fs::exists(ws.output / "model.safetensors"));
  CHECK(read_file(left / "model.safetensors") == "half written");  // not ours to remove
  // --quiet: errors only.
  CHECK(run_program(ws.transfer({"--quiet", "--force"})).err.empty());
}

}  // namespace test_interruption
