// The extend modules (examples/clp-transfer/extend) against a real tokenizer client: Hugging
// Face's JavaScript tokenizers (@huggingface/tokenizers, pinned and fetched by
// tests/data/fetch_tokenizer_client.sh), run under node by tokenize.mjs beside this file. The
// encoder must give the client's ids on real tokenizers, and an extended tokenizer must load in
// the client, keep every source id's text, round-trip text, and give each new token for its text.
// A case reports as skipped where node, the package or a fetched tokenizer is absent.
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
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"
#include "extend/tokenizer_writing.hpp"
#include "javascript_client.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend_client {
namespace {

using namespace clp_transfer::extend;
using clp_test::read_file;
using clp_test::write_file;

const std::filesystem::path models_dir = CLP_EXAMPLE_MODELS_DIR;
const std::filesystem::path probes_dir = models_dir.parent_path() / "clp-transfer" / "extend" / "probes";
const std::filesystem::path& client_package = tokenizer_client::javascript_package;

/// Text in many scripts, digits, contractions, runs of spaces and line breaks.
const std::string mixed_text =
    "Numbers 1234567 and 3.14159, it's, WE'RE, they've!!  Two  spaces,\ttabs\n\n\tand lines.\n"
    "\xC3\x9C"
    "ber \xC3\xA4ndern \xE2\x80\x9E"
    "quotes\xE2\x80\x9C \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
    "\xD1\x80\xD1\x83\xD1\x81\xD1\x81\xD0\xBA\xD0\xB8\xD0\xB9 \xCE\xB5\xCE\xBB \xF0\x9F\x98\x80 x\xC2\xB2+y\xC2\xB2 "
    "\xD9\xA1\xD9\xA2\n";

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
  return tokenizer_client::ask_javascript(folder, request);
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

/// A source extended by a helper's tokens it lacks.
struct extended_pair {
  bpe_model source;
  std::vector<std::string> missing;  ///< the helper's tokens the source lacks, by bytes
  bpe_extension extension;
};

/// Extends the tokenizer in `source_folder` by every token of `helper_folder`'s it lacks, and
/// writes the extended tokenizer.json into `out`, with vocab.json and merges.txt extended and
/// tokenizer_config.json copied where the source folder has them.
extended_pair extend_pair(const std::filesystem::path& source_folder, const std::filesystem::path& helper_folder,
                          const std::filesystem::path& out) {
  const auto source_json = parse_ordered_json(read_file(source_folder / "tokenizer.json"), "tokenizer.json");
  const bpe_model helper =
      read_bpe_model(nlohmann::json::parse(read_file(helper_folder / "tokenizer.json")), "helper/tokenizer.json");
  bpe_model source = read_bpe_model(source_json, "tokenizer.json");
  std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(source), {});
  bpe_extension extension = extend_bpe(source, missing, first_unused_id(source));
  write_file(out / "tokenizer.json", extended_tokenizer_json(source_json, extension, "tokenizer.json").dump(2));
  if (std::filesystem::exists(source_folder / "vocab.json"))
    write_file(out / "vocab.json",
               extended_vocab_json(parse_ordered_json(read_file(source_folder / "vocab.json"), "vocab.json"), extension,
                                   "vocab.json")
                   .dump());
  if (std::filesystem::exists(source_folder / "merges.txt"))
    write_file(out / "merges.txt",
               extended_merges_txt(read_file(source_folder / "merges.txt"), extension, "merges.txt"));
  if (std::filesystem::exists(source_folder / "tokenizer_config.json"))
    write_file(out / "tokenizer_config.json", read_file(source_folder / "tokenizer_config.json"));
  return {std::move(source), std::move(missing), std::move(extension)};
}

/// Checks the extended tokenizer in `out` with the client: every source id decodes to the text
/// it decoded to in `source_folder`; `texts` round-trip; each new token is what the client makes
/// of its text. A token stands as a text of its own where one can (a byte-level token's bytes;
/// a '▁' token's word, the '▁' the tokenizer's own); otherwise, inside a word, it reaches the
/// model as a pre-token of its own. Returns the client's ids of `texts`.
nlohmann::json check_in_client(const std::filesystem::path& source_folder, const std::filesystem::path& out,
                               const extended_pair& pair, const std::vector<std::string>& texts) {
  const bpe_extension& extension = pair.extension;
  CHECK(extension.requested_count() >= 0.95 * static_cast<double>(pair.missing.size()));
  CHECK(extension.requested_count() + extension.left_out.size() + extension.already_present.size() ==
        pair.missing.size());
  nlohmann::json request = {{"encode", texts}, {"decode", nlohmann::json::array()}, {"model", nlohmann::json::array()}};
  for (token_id id = 0; id < static_cast<token_id>(pair.source.tokens.size()); ++id)
    if (!pair.source.tokens[static_cast<std::size_t>(id)].empty()) request["decode"].push_back({id});
  const bool metaspace = pair.source.rules.spelling == symbol_spelling::metaspace;
  std::vector<token_id> as_text, as_piece;
  for (const written_token& token : extension.written) {
    const std::string& spelled = extension.table.token(token.id);
    if (!metaspace && is_utf8(token.bytes)) {
      request["encode"].push_back(token.bytes);
      as_text.push_back(token.id);
    } else if (metaspace && spelled.rfind(space_mark, 0) == 0 &&
               pair.source.rules.prepend != space_mark_prepend::never) {
      request["encode"].push_back(token.bytes.substr(1));
      as_text.push_back(token.id);
    } else {
      request["model"].push_back(spelled);
      as_piece.push_back(token.id);
    }
  }
  const nlohmann::json before = ask_client(source_folder, request);
  const nlohmann::json after = ask_client(out, request);
  CHECK(after["decode"] == before["decode"]);
  nlohmann::json round_trip = {{"decode", nlohmann::json::array()}};
  for (std::size_t i = 0; i < texts.size(); ++i) round_trip["decode"].push_back(after["encode"][i]);
  CHECK(ask_client(out, round_trip)["decode"] == texts);
  for (std::size_t i = 0; i < as_text.size(); ++i) {
    CAPTURE(extension.table.token(as_text[i]));
    CHECK(ids_of(after["encode"][texts.size() + i]) == std::vector<token_id>{as_text[i]});
  }
  for (std::size_t i = 0; i < as_piece.size(); ++i) {
    CAPTURE(extension.table.token(as_piece[i]));
    CHECK(ids_of(after["model"][i]) == std::vector<token_id>{as_piece[i]});
  }
  return nlohmann::json(std::vector<nlohmann::json>(
      after["encode"].begin(), after["encode"].begin() + static_cast<std::ptrdiff_t>(texts.size())));
}

TEST_CASE("extend client: the extended shipped tokenizer keeps every id, round-trips text and reaches each new token") {
  if (!client_available()) return;
  clp_test::temp_dir out;
  const extended_pair pair = extend_pair(models_dir / "en-large", models_dir / "de-small", out.path);
  const std::string english = read_file(probes_dir / "en.txt"), german = read_file(probes_dir / "de.txt");
  const nlohmann::json ids = check_in_client(models_dir / "en-large", out.path, pair, {english, german, mixed_text});
  // Tokens per word of German text: at most 1.25 times the helper's own.
  const nlohmann::json helper = ask_client(models_dir / "de-small", {{"encode", {german}}});
  const double words = static_cast<double>(probe_words(german).size());
  const double extended_fertility = static_cast<double>(ids[1].size()) / words;
  const double helper_fertility = static_cast<double>(helper["encode"][0].size()) / words;
  CHECK(extended_fertility <= 1.25 * helper_fertility);
  const drift_measure english_drift = drift(bpe_table(pair.source), pair.extension.table, english);
  MESSAGE("shipped pair: " << pair.missing.size() << " missing, " << pair.extension.requested_count() << " added, "
                           << pair.extension.intermediate_count() << " intermediate, " << pair.extension.left_out.size()
                           << " left out; German tokens per word " << extended_fertility << " (helper "
                           << helper_fertility << "); English drift " << english_drift.changed << " of "
                           << english_drift.words << " words");
}

TEST_CASE("extend client: Llama 2 extended by the shipped German tokens keeps every id and reaches each new token") {
  if (!client_available()) return;
  const auto llama2 = clp_test::needed_tokenizer("llama2");
  if (!llama2) return;
  clp_test::temp_dir out;
  const extended_pair pair = extend_pair(*llama2, models_dir / "de-small", out.path);
  CHECK(pair.extension.written.size() > 1000);
  check_in_client(*llama2, out.path, pair, {read_file(probes_dir / "en.txt"), read_file(probes_dir / "de.txt")});
}

TEST_CASE("extend client: the extended vocab.json and merges.txt say what the extended tokenizer.json says") {
  clp_test::temp_dir folder;
  const extended_pair pair = extend_pair(models_dir / "en-large", models_dir / "de-small", folder.path);
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
