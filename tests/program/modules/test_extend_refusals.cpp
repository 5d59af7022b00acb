// The refusals of extend's modules as the program prints them (errors.hpp's error_line), by the
// ids docs/troubleshooting.md lists them under: one line naming the file or option, no C++ name
// and no code of a library. tests/docs/check_troubleshooting.sh compares these ids with the
// page's. What each refusal says in detail is checked by the modules' own tests.
#include <exception>
#include <string>
#include <unordered_set>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "errors.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend_refusals {
namespace {

using namespace clp_transfer::extend;

/// Checks that `call` throws, and that the line the program would print for it names `culprit`
/// and reads as every message must (one line, no "::", no "[json.exception").
template <class Call>
void module_refused(const std::string& id, Call call, const std::string& culprit) {
  INFO("refusal ", id);
  std::string line;
  try {
    call();
  } catch (const std::exception& e) {
    line = clp_transfer::error_line(e);
  }
  INFO("line: [", line, "]");
  REQUIRE(!line.empty());
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find(culprit) != std::string::npos);
  CHECK(line.find("::") == std::string::npos);
  CHECK(line.find("[json.exception") == std::string::npos);
}

/// A byte-level BPE tokenizer.json of "a", "b", "ab" and the merge "a b", with `model` edited.
template <class Edit>
nlohmann::json tokenizer(Edit edit) {
  nlohmann::json json = {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                         {"decoder", {{"type", "ByteLevel"}}},
                         {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
  edit(json["model"]);
  return json;
}

}  // namespace

TEST_CASE("extend refusals: one line naming the tokenizer file or the option") {
  const std::string file = "en/tokenizer.json";
  module_refused(
      "extend-source-tokenizer",
      [&] { read_bpe_model(tokenizer([](nlohmann::json& m) { m["type"] = "Unigram"; }), file); }, file);
  module_refused(
      "extend-source-tokenizer",
      [&] { read_bpe_model(tokenizer([](nlohmann::json& m) { m["dropout"] = 0.1; }), file); }, file);
  module_refused(
      "extend-tokenizer-malformed",
      [&] { read_bpe_model(tokenizer([](nlohmann::json& m) { m["vocab"]["c"] = 1; }), file); }, file);
  module_refused(
      "extend-tokenizer-malformed",
      [&] { read_bpe_model(tokenizer([](nlohmann::json& m) { m["merges"] = {"a c"}; }), file); }, file);

  const std::unordered_set<std::string> source = {"a", "b", "ab"};
  token_request listed;
  listed.which = token_request::kind::listed;
  listed.origin = "tokens.txt";
  listed.listed = {"abc", "ab"};
  module_refused(
      "extend-token-list", [&] { choose_tokens({}, source, listed); }, "tokens.txt");
  listed.listed = {"abc", ""};
  module_refused(
      "extend-token-list", [&] { choose_tokens({}, source, listed); }, "tokens.txt");
  token_request none;
  none.which = token_request::kind::first;
  none.count = 0;
  module_refused(
      "extend-token-list", [&] { choose_tokens({"abc"}, source, none); }, "--add");
}

}  // namespace test_extend_refusals
