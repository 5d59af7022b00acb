// --undertrained as an option: its refusals, the default the docs state, the untied head
// screened beside the embedding, and the known-unused rows the program hands the library.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "model_fixtures.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/undertrained_choice.hpp"

using namespace program_test;

TEST_CASE("undertrained: an unknown mode is refused by transfer and evaluate, naming the option") {
  const workspace ws = gpt2_workspace();
  check_error_line(run_program(ws.transfer({"--undertrained", "drop", "--quiet"})), "--undertrained",
                   {"must be synthesise, keep or report, not 'drop'"});
  check_error_line(run_program({"evaluate", "--source", ws.pair.source.folder.string(), "--helper",
                                ws.pair.helper.folder.string(), "--undertrained", "drop", "--quiet"}),
                   "--undertrained", {"must be synthesise, keep or report"});
  CHECK(fs::is_empty(ws.out_parent));
}

TEST_CASE("undertrained: refused with --method random, which copies no row, and taken by overlap-random") {
  const workspace ws = gpt2_workspace();
  check_error_line(run_program(ws.transfer({"--method", "random", "--undertrained", "keep", "--quiet"})),
                   "--undertrained", {"does not apply to --method random (it copies no row)"});
  CHECK(fs::is_empty(ws.out_parent));
  const fs::path report = ws.dir / "report.json";
  const program_result random =
      run_program(ws.transfer({"--method", "random", "--report", report.string(), "--quiet"}));
  REQUIRE(random.exit_status == 0);
  const auto screen = nlohmann::json::parse(read_file(report))["undertrained"];
  CHECK(screen["mode"].is_null());  // the default does not apply either: nothing is screened
  CHECK(screen["screened"] == false);
  const program_result overlap_random =
      run_program(ws.transfer({"--method", "overlap-random", "--undertrained", "report", "--quiet"}, ws.dir / "other"));
  INFO("stderr: ", overlap_random.err);
  CHECK(overlap_random.exit_status == 0);
}

TEST_CASE("undertrained: the default is the one docs/undertrained.md states, and the help shows it") {
  const std::string name = clp_transfer::undertrained_name(clp_transfer::default_undertrained);
  const std::string docs = read_file(fs::path(CLP_TEST_DATA_DIR) / ".." / ".." / "docs" / "undertrained.md");
  const std::string stated = "The default is `--undertrained ";
  const std::size_t at = docs.find(stated);
  REQUIRE(at != std::string::npos);
  CHECK(docs.substr(at + stated.size(), name.size() + 1) == name + "`");
  for (const char* command : {"transfer", "evaluate"}) {
    CAPTURE(command);
    const program_result help = run_program({command, "--help"});
    REQUIRE(help.exit_status == 0);
    CHECK(help.out.find("--undertrained TEXT=" + name + "\n") != std::string::npos);
  }
}

TEST_CASE("undertrained: an untied head is screened beside the embedding, a tied one is not") {
  const workspace llama = llama_workspace();
  const fs::path report = llama.dir / "report.json";
  const program_result result =
      run_program(llama.transfer({"--undertrained", "report", "--report", report.string(), "--quiet"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto screen = nlohmann::json::parse(read_file(report))["undertrained"];
  REQUIRE(screen["head"].is_object());
  CHECK(screen["head"]["name"] == llama.pair.source.head_name);
  CHECK_FALSE(screen["head"].contains("norm_threshold"));  // the head's cosine alone
  CHECK(screen["embedding"].contains("norm_threshold"));

  const workspace gpt2 = gpt2_workspace();
  const fs::path tied_report = gpt2.dir / "report.json";
  const program_result tied =
      run_program(gpt2.transfer({"--undertrained", "report", "--report", tied_report.string(), "--quiet"}));
  REQUIRE(tied.exit_status == 0);
  CHECK(nlohmann::json::parse(read_file(tied_report))["undertrained"]["head"].is_null());
}

TEST_CASE("undertrained: the known-unused rows are tokens named like reserved specials and rows no token names") {
  using clp_transfer::detail::reserved_special_name;
  for (const char* name : {"<|reserved_special_token_7|>", "<unused12>", "[unused0]", "<RESERVED_3>"}) {
    CAPTURE(name);
    CHECK(reserved_special_name(name));
  }
  for (const char* name : {"reserved", "<|endoftext|>", "[UNK]", "<unused", "Ġunused", "<s>"}) {
    CAPTURE(name);
    CHECK_FALSE(reserved_special_name(name));
  }
  clp_transfer::io::token_vocabulary vocabulary;
  vocabulary.ids = {{"a", 0}, {"<|reserved_special_token_0|>", 1}, {"b", 2}, {"[unused1]", 4}, {"c", 5}};
  vocabulary.size = 6;
  clp::Index reserved = -1;
  CHECK(clp_transfer::detail::known_unused_rows(vocabulary, 8, reserved) == std::vector<clp::Index>{1, 3, 4, 6, 7});
  CHECK(reserved == 2);
}
