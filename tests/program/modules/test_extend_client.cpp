// The extend modules against a real tokenizer client: Hugging Face's JavaScript tokenizers
// (@huggingface/tokenizers, pinned and fetched by tests/data/fetch_tokenizer_client.sh), run
// under node by tests/tokenizer_client/tokenize.mjs. The encoder must give the client's ids on
// real tokenizers, and the extended shipped tokenizer must load in the client, keep every
// source id's text, round-trip German and English text, and encode each new token's text to that
// token. A case reports as skipped where node, the package or a fetched tokenizer is absent.
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "extend/characters.hpp"
#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"
#include "extend/tokenizer_writing.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

using namespace clp_transfer::extend;
using clp_test::read_file;
using clp_test::write_file;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend_client {
namespace {

const std::filesystem::path models_dir = CLP_EXAMPLE_MODELS_DIR;
const std::filesystem::path probes_dir = models_dir.parent_path() / "clp-transfer" / "extend" / "probes";
const std::filesystem::path client_script = clp_test::data_dir.parent_path() / "tokenizer_client" / "tokenize.mjs";
const std::filesystem::path client_package =
    clp_test::data_dir / "fetched" / "tokenizers-js" / "package" / "dist" / "tokenizers.mjs";

/// Text in many scripts, digits, contractions, runs of spaces and line breaks.
const std::string mixed_text =
    "Numbers 1234567 and 3.14159, it's, WE'RE, they've!!  Two  spaces,\ttabs\n\n\tand lines.\n"
    "\xC3\x9C"
    "ber \xC3\xA4ndern \xE2\x80\x9E"
    "quotes\xE2\x80\x9C \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
    "\xD1\x80\xD1\x83\xD1\x81\xD1\x81\xD0\xBA\xD0\xB8\xD0\xB9 \xCE\xB5\xCE\xBB \xF0\x9F\x98\x80 x\xC2\xB2+y\xC2\xB2 "
    "\xD9\xA1\xD9\xA2\n";

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Whether node and the client package are here; marks the running case skipped when not.
bool client_available() {
  if (!std::filesystem::exists(client_package)) {
    clp_test::skip("no @huggingface/tokenizers under tests/data/fetched (bash tests/data/fetch_tokenizer_client.sh)");
    return false;
  }
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    clp_test::skip("no node on the PATH to run the JavaScript tokenizer client");
    return false;
  }
  return true;
}

/// The client's answer to `request` ({"encode": [...], "decode": [...]}) for the tokenizer in
/// `folder`.
nlohmann::json ask_client(const std::filesystem::path& folder, const nlohmann::json& request) {
  clp_test::temp_dir dir;
  write_file(dir / "request.json", request.dump());
  const std::string command = "node " + shell_quoted(client_script.string()) + " " +
                              shell_quoted(client_package.string()) + " " + shell_quoted(folder.string()) + " " +
                              shell_quoted((dir / "request.json").string()) + " " +
                              shell_quoted((dir / "answer.json").string());
  REQUIRE(std::system(command.c_str()) == 0);
  return nlohmann::json::parse(read_file(dir / "answer.json"));
}

std::vector<token_id> ids_of(const nlohmann::json& ids) { return ids.get<std::vector<token_id>>(); }

/// The texts the encoder is compared on: the probes, the mixed text, and each of their lines.
std::vector<std::string> comparison_texts() {
  std::vector<std::string> texts = {read_file(probes_dir / "en.txt"), read_file(probes_dir / "de.txt"), mixed_text};
  const std::size_t wholes = texts.size();
  for (std::size_t t = 0; t < wholes; ++t)
    for (std::size_t from = 0; from < texts[t].size();) {
      const std::size_t end = std::min(texts[t].find('\n', from), texts[t].size() - 1);
      texts.push_back(texts[t].substr(from, end - from + 1));
      from = end + 1;
    }
  return texts;
}

/// Checks that the encoder gives the client's ids for the tokenizer in `folder`, on whole texts
/// and on each word as it stands after a space.
void check_encoder_agrees(const std::filesystem::path& folder) {
  const bpe_table table(read_bpe_model(nlohmann::json::parse(read_file(folder / "tokenizer.json")), folder.string()));
  const std::vector<std::string> texts = comparison_texts();
  std::vector<std::string> words;
  for (const std::string& text : {texts[0], texts[1], texts[2]})
    for (const std::string_view word : probe_words(text)) words.emplace_back(word);
  nlohmann::json request = {{"encode", nlohmann::json::array()}};
  for (const std::string& text : texts) request["encode"].push_back(text);
  // A '▁' prepended to every text marks the word's space already; elsewhere the space is written.
  const bool marked = table.model().rules.prepend != space_mark_prepend::never;
  for (const std::string& word : words) request["encode"].push_back(marked ? word : " " + word);
  const nlohmann::json answer = ask_client(folder, request);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(texts[i]);
    CHECK(encode_text(table, texts[i]) == ids_of(answer["encode"][i]));
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    CAPTURE(words[i]);
    CHECK(encode_word(table, words[i]) == ids_of(answer["encode"][texts.size() + i]));
  }
}

TEST_CASE("extend client: the encoder gives the real client's ids on the shipped tokenizers") {
  if (!client_available()) return;
  check_encoder_agrees(models_dir / "en-large");
  check_encoder_agrees(models_dir / "de-small");
}

/// check_encoder_agrees on the real tokenizer `name`, or the running case skipped without it.
void check_real_tokenizer(const std::string& name) {
  if (!client_available()) return;
  if (const auto folder = clp_test::needed_tokenizer(name)) check_encoder_agrees(*folder);
}

// One case each, so that CTest can run them side by side: each parses a large tokenizer twice.
TEST_CASE("extend client: the encoder gives the real client's ids on Llama 2 (metaspace, byte fallback)") {
  check_real_tokenizer("llama2");
}
TEST_CASE("extend client: the encoder gives the real client's ids on Llama 3 (ignore_merges)") {
  check_real_tokenizer("llama3");
}
TEST_CASE("extend client: the encoder gives the real client's ids on Qwen3") { check_real_tokenizer("qwen3"); }

/// The shipped pair extended: en-large's tokenizer with de-small's tokens it lacks, every file
/// of the source's tokenizer written in `folder`.
struct shipped_extension {
  bpe_model source;
  std::vector<std::string> missing;  ///< the helper's tokens en-large lacks, by bytes
  bpe_extension extension;
};

shipped_extension extend_shipped_pair(const std::filesystem::path& folder) {
  const std::filesystem::path source_folder = models_dir / "en-large";
  const auto source_json = nlohmann::ordered_json::parse(read_file(source_folder / "tokenizer.json"));
  const bpe_model helper = read_bpe_model(nlohmann::json::parse(read_file(models_dir / "de-small" / "tokenizer.json")),
                                          "de-small/tokenizer.json");
  bpe_model source = read_bpe_model(source_json, "en-large/tokenizer.json");
  std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(source), {});
  bpe_extension extension = extend_bpe(source, missing, first_unused_id(source));
  write_file(folder / "tokenizer.json", extended_tokenizer_json(source_json, extension, "tokenizer.json").dump(2));
  write_file(folder / "vocab.json",
             extended_vocab_json(nlohmann::ordered_json::parse(read_file(source_folder / "vocab.json")), extension,
                                 "vocab.json")
                 .dump());
  write_file(folder / "merges.txt",
             extended_merges_txt(read_file(source_folder / "merges.txt"), extension, "merges.txt"));
  write_file(folder / "tokenizer_config.json", read_file(source_folder / "tokenizer_config.json"));
  return {std::move(source), std::move(missing), std::move(extension)};
}

TEST_CASE("extend client: the extended shipped tokenizer keeps every id, round-trips text and reaches each new token") {
  if (!client_available()) return;
  clp_test::temp_dir folder;
  const shipped_extension shipped = extend_shipped_pair(folder.path);
  const bpe_extension& extension = shipped.extension;
  // At least 95% of the missing tokens added; the rest listed with a reason.
  CHECK(extension.requested_count() >= 0.95 * static_cast<double>(shipped.missing.size()));
  CHECK(extension.requested_count() + extension.left_out.size() + extension.already_present.size() ==
        shipped.missing.size());
  const std::string english = read_file(probes_dir / "en.txt"), german = read_file(probes_dir / "de.txt");
  nlohmann::json request = {{"encode", {english, german, mixed_text}}, {"decode", nlohmann::json::array()}};
  for (token_id id = 0; id < static_cast<token_id>(shipped.source.tokens.size()); ++id)
    request["decode"].push_back({id});
  std::vector<const written_token*> checked;  // new tokens whose bytes are text
  for (const written_token& token : extension.written)
    if (is_utf8(token.bytes)) {
      request["encode"].push_back(token.bytes);
      checked.push_back(&token);
    }
  const nlohmann::json before = ask_client(models_dir / "en-large", request);
  const nlohmann::json after = ask_client(folder.path, request);
  CHECK(after["decode"] == before["decode"]);
  for (std::size_t i = 0; i < 3; ++i) {
    const nlohmann::json round_trip = ask_client(folder.path, {{"decode", {after["encode"][i]}}});
    CHECK(round_trip["decode"][0] == request["encode"][i]);
  }
  for (std::size_t i = 0; i < checked.size(); ++i) {
    CAPTURE(checked[i]->bytes);
    CHECK(ids_of(after["encode"][3 + i]) == std::vector<token_id>{checked[i]->id});
  }
  CHECK(checked.size() + 8 >= extension.written.size());  // nearly all are whole characters
  // Tokens per word of German text: at most 1.25 times the helper's own.
  const nlohmann::json helper = ask_client(models_dir / "de-small", {{"encode", {german}}});
  const double words = static_cast<double>(probe_words(german).size());
  const double extended_fertility = static_cast<double>(after["encode"][1].size()) / words;
  const double helper_fertility = static_cast<double>(helper["encode"][0].size()) / words;
  CHECK(extended_fertility <= 1.25 * helper_fertility);
  const drift_measure english_drift = drift(bpe_table(shipped.source), extension.table, english);
  MESSAGE("shipped pair: " << shipped.missing.size() << " missing, " << extension.requested_count() << " added, "
                           << extension.intermediate_count() << " intermediate, " << extension.left_out.size()
                           << " left out; German tokens per word " << extended_fertility << " (helper "
                           << helper_fertility << "); English drift " << english_drift.changed << " of "
                           << english_drift.words << " words");
}

TEST_CASE("extend client: the extended vocab.json and merges.txt say what the extended tokenizer.json says") {
  clp_test::temp_dir folder;
  const shipped_extension shipped = extend_shipped_pair(folder.path);
  const auto tokenizer = nlohmann::json::parse(read_file(folder / "tokenizer.json"));
  const auto vocab = nlohmann::json::parse(read_file(folder / "vocab.json"));
  for (const auto& entry : tokenizer["model"]["vocab"].items()) CHECK(vocab.at(entry.key()) == entry.value());
  CHECK(vocab.size() == tokenizer["model"]["vocab"].size());  // en-large's lists <|endoftext|> in both
  std::vector<std::string> lines;
  const std::string merges = read_file(folder / "merges.txt");
  for (std::size_t from = 0; from < merges.size();) {
    const std::size_t end = merges.find('\n', from);
    lines.push_back(merges.substr(from, end - from));
    from = end + 1;
  }
  REQUIRE(lines.size() == tokenizer["model"]["merges"].size() + 1);
  CHECK(lines.front() == "#version: 0.2");
  for (std::size_t i = 0; i < tokenizer["model"]["merges"].size(); ++i)
    CHECK(lines[i + 1] == tokenizer["model"]["merges"][i]);
}

}  // namespace
}  // namespace test_extend_client
