// The SentencePiece side of the extend modules against SentencePiece's own library (Debian's
// python3-sentencepiece, run by sentencepiece_client.py beside this file): the bpe_model that
// extend reads from a SentencePiece BPE model must encode as SentencePiece encodes, and a model
// extended by appended pieces must load in SentencePiece, keep every old piece at its id,
// round-trip text and give each new piece for its own text. The model is a real one: trained by
// SentencePiece's trainer on the miniature's English text (tests/data/sentencepiece). A case
// reports as skipped where python3 or its sentencepiece module is absent.
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/token_choice.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_sentencepiece_client {
namespace {

using namespace clp_transfer::extend;
using clp_test::read_file;
using clp_test::write_file;

const std::filesystem::path models_dir = CLP_EXAMPLE_MODELS_DIR;
const std::filesystem::path probes_dir = models_dir.parent_path() / "clp-transfer" / "extend" / "probes";
const std::filesystem::path english_bpe = clp_test::data_dir / "sentencepiece" / "en_bpe.model";
const std::filesystem::path client_script =
    clp_test::data_dir.parent_path() / "tokenizer_client" / "sentencepiece_client.py";

const std::string mixed_text =
    "Numbers 1234567 and 3.14159, it's, WE'RE, they've!!  Two  spaces, and  lines.\n"
    "\xC3\x9C"
    "ber \xC3\xA4ndern \xE2\x80\x9E"
    "quotes\xE2\x80\x9C \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xD1\x80\xD1\x83\xD1\x81 \xF0\x9F\x98\x80 x\xC2\xB2";

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// SentencePiece's answer to `request` (see sentencepiece_client.py) for the model `model`;
/// null, the case marked skipped, where python3 or its sentencepiece module is absent.
nlohmann::json ask_sentencepiece(const std::filesystem::path& model, const nlohmann::json& request) {
  clp_test::temp_dir dir;
  write_file(dir / "request.json", request.dump());
  const std::string command = shell_quoted(CLP_SENTENCEPIECE_PYTHON) + " " + shell_quoted(client_script.string()) + " " + shell_quoted(model.string()) +
                              " " + shell_quoted((dir / "request.json").string()) + " " +
                              shell_quoted((dir / "answer.json").string());
  const int status = std::system(command.c_str());
  if (status != 0 && WIFEXITED(status) && (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 127)) {
    clp_test::skip("no python3 with SentencePiece's module (Debian: python3-sentencepiece)");
    return nullptr;
  }
  REQUIRE(status == 0);
  return nlohmann::json::parse(read_file(dir / "answer.json"));
}

std::vector<token_id> ids_of(const nlohmann::json& ids) { return ids.get<std::vector<token_id>>(); }

/// The model's bytes with normalizer_spec.add_dummy_prefix false: a second normalizer_spec
/// (field 3) holding only that field, which a protobuf parser merges into the first. What the
/// model makes of a piece's text inside a word.
std::string without_dummy_prefix(const std::string& bytes) { return bytes + std::string("\x1a\x02\x18\x00", 4); }

TEST_CASE("sentencepiece client: the bpe_model read from a SentencePiece BPE model gives SentencePiece's ids") {
  const std::string bytes = read_file(english_bpe);
  const clp_transfer::io::sentencepiece_model model =
      clp_transfer::io::parse_sentencepiece_model(english_bpe, bytes);
  check_sentencepiece_bpe(model, english_bpe.string());
  const bpe_table table(sentencepiece_bpe_model(model.pieces, model));
  std::vector<std::string> texts = {read_file(probes_dir / "en.txt"), read_file(probes_dir / "de.txt"), mixed_text};
  std::vector<std::string> words;
  for (std::size_t t = 0; t < 3; ++t)
    for (const std::string_view word : probe_words(texts[t])) words.emplace_back(word);
  nlohmann::json request = {{"encode", texts}};
  for (const std::string& word : words) request["encode"].push_back(word);
  const nlohmann::json answer = ask_sentencepiece(english_bpe, request);
  if (answer.is_null()) return;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(texts[i]);
    CHECK(encode_text(table, texts[i]) == ids_of(answer["encode"][i]));
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    CAPTURE(words[i]);
    CHECK(encode_word(table, words[i]) == ids_of(answer["encode"][texts.size() + i]));
  }
}

TEST_CASE("sentencepiece client: the model extended by the shipped German tokens loads, keeps every id and reaches "
          "its new pieces") {
  const std::string bytes = read_file(english_bpe);
  const clp_transfer::io::sentencepiece_model source = clp_transfer::io::parse_sentencepiece_model(english_bpe, bytes);
  const bpe_model source_model = sentencepiece_bpe_model(source.pieces, source);
  const bpe_model helper = read_bpe_model(nlohmann::json::parse(read_file(models_dir / "de-small" / "tokenizer.json")),
                                          "de-small/tokenizer.json");
  const std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(source_model), {});
  const bpe_extension extension = extend_bpe(source_model, missing, first_unused_id(source_model));
  const std::vector<clp_transfer::io::sentencepiece_piece> appended =
      appended_pieces(source, extension, english_bpe.string());
  REQUIRE(appended.size() == extension.written.size());
  clp_test::temp_dir dir;
  const std::string extended_bytes = clp_transfer::io::append_sentencepiece_pieces(bytes, appended);
  write_file(dir / "tokenizer.model", extended_bytes);
  write_file(dir / "inside.model", without_dummy_prefix(extended_bytes));
  // The program's reader gives the source's pieces, then the new ones.
  const clp_transfer::io::sentencepiece_model reread =
      clp_transfer::io::parse_sentencepiece_model(dir / "tokenizer.model", extended_bytes);
  REQUIRE(reread.pieces.size() == source.pieces.size() + appended.size());
  for (std::size_t i = 0; i < appended.size(); ++i) {
    CHECK(reread.pieces[source.pieces.size() + i].piece == appended[i].piece);
    CHECK(reread.pieces[source.pieces.size() + i].score == appended[i].score);
  }

  const std::string english = read_file(probes_dir / "en.txt"), german = read_file(probes_dir / "de.txt");
  const std::vector<std::string> texts = {english, german, mixed_text};
  nlohmann::json request = {{"encode", texts}, {"pieces", true}};
  nlohmann::json inside = {{"encode", nlohmann::json::array()}};
  std::vector<token_id> as_word, as_inside;
  for (const written_token& token : extension.written) {
    const std::string& piece = extension.table.token(token.id);
    if (piece.rfind(space_mark, 0) == 0 && piece.size() > space_mark.size()) {
      request["encode"].push_back(token.bytes.substr(1));  // the dummy prefix writes its '▁'
      as_word.push_back(token.id);
    } else {
      inside["encode"].push_back(token.bytes);
      as_inside.push_back(token.id);
    }
  }
  const nlohmann::json before = ask_sentencepiece(english_bpe, {{"pieces", true}});
  if (before.is_null()) return;
  const nlohmann::json after = ask_sentencepiece(dir / "tokenizer.model", request);
  const nlohmann::json after_inside = ask_sentencepiece(dir / "inside.model", inside);
  REQUIRE(after["size"] == source.pieces.size() + appended.size());
  for (std::size_t id = 0; id < source.pieces.size(); ++id) {
    CHECK(after["pieces"][id] == before["pieces"][id]);
    CHECK(after["types"][id] == before["types"][id]);
  }
  nlohmann::json round_trip = {{"decode", nlohmann::json::array()}};
  for (std::size_t i = 0; i < texts.size(); ++i) round_trip["decode"].push_back(after["encode"][i]);
  CHECK(ask_sentencepiece(dir / "tokenizer.model", round_trip)["decode"] == texts);

  // Each new piece is what SentencePiece makes of its own text: a word's at the start of a text
  // (the model writes its '▁'), a piece inside a word without the dummy prefix.
  std::size_t reached = 0;
  for (std::size_t i = 0; i < as_word.size(); ++i)
    reached += ids_of(after["encode"][texts.size() + i]) == std::vector<token_id>{as_word[i]};
  for (std::size_t i = 0; i < as_inside.size(); ++i)
    reached += ids_of(after_inside["encode"][i]) == std::vector<token_id>{as_inside[i]};
  // The extended model's encoder (every split of a new piece joins) agrees with SentencePiece.
  const bpe_table extended(sentencepiece_bpe_model(joined_pieces(source, appended), source));
  for (std::size_t i = 0; i < texts.size(); ++i) CHECK(encode_text(extended, texts[i]) == ids_of(after["encode"][i]));

  const double words = static_cast<double>(probe_words(german).size());
  const double german_per_word = static_cast<double>(after["encode"][1].size()) / words;
  const double helper_per_word = fertility(bpe_table(helper), german).tokens_per_word();
  const drift_measure english_drift = drift(bpe_table(source_model), extended, english);
  MESSAGE("en_bpe.model + de-small: " << missing.size() << " missing, " << extension.requested_count() << " added, "
                                      << extension.intermediate_count() << " intermediate, "
                                      << extension.left_out.size() << " left out; " << reached << " of "
                                      << extension.written.size() << " new pieces reached in SentencePiece; German "
                                      << german_per_word << " tokens a word (helper " << helper_per_word
                                      << "); English drift " << english_drift.changed << " of " << english_drift.words
                                      << " words");
  CHECK(extension.requested_count() >= 0.95 * static_cast<double>(missing.size()));
  CHECK(double(reached) >= 0.95 * double(extension.written.size()));
  CHECK(german_per_word <= 1.25 * helper_per_word);
}

}  // namespace
}  // namespace test_sentencepiece_client
