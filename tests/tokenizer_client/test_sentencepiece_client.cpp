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
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/token_choice.hpp"
#include "extend/tokenizer_writing.hpp"
#include "extend/unigram_model.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "javascript_client.hpp"
#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/sentencepiece_bytes.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_sentencepiece_client {
namespace {

using namespace clp_transfer::extend;
using clp_test::read_file;
using clp_test::write_file;
using tokenizer_client::ask_javascript;
using tokenizer_client::javascript_package;
using tokenizer_client::shell_quoted;

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

/// SentencePiece's answer to `request` (see sentencepiece_client.py) for the model `model`;
/// null, the case marked skipped, where python3 or its sentencepiece module is absent.
nlohmann::json ask_sentencepiece(const std::filesystem::path& model, const nlohmann::json& request) {
  clp_test::temp_dir dir;
  write_file(dir / "request.json", request.dump());
  const std::string command = shell_quoted(CLP_SENTENCEPIECE_PYTHON) + " " + shell_quoted(client_script.string()) +
                              " " + shell_quoted(model.string()) + " " + shell_quoted((dir / "request.json").string()) +
                              " " + shell_quoted((dir / "answer.json").string());
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
  const clp_transfer::io::sentencepiece_model model = clp_transfer::io::parse_sentencepiece_model(english_bpe, bytes);
  REQUIRE(!sentencepiece_bpe_refusal(model));
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

TEST_CASE(
    "sentencepiece client: the model extended by the shipped German tokens loads, keeps every id and reaches "
    "its new pieces") {
  const std::string bytes = read_file(english_bpe);
  const clp_transfer::io::sentencepiece_model source = clp_transfer::io::parse_sentencepiece_model(english_bpe, bytes);
  const bpe_model source_model = sentencepiece_bpe_model(source.pieces, source);
  const bpe_model helper = read_bpe_model(nlohmann::json::parse(read_file(models_dir / "de-small" / "tokenizer.json")),
                                          "de-small/tokenizer.json");
  const std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(source_model), {});
  bpe_extension extension = extend_bpe(source_model, missing, first_unused_id(source_model));
  const std::vector<clp_transfer::io::sentencepiece_piece> appended =
      appended_pieces(source, extension, english_bpe.string());
  extension = with_sentencepiece_merges(std::move(extension), joined_pieces(source, appended), source);
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
  // The extension's encoder, its merges SentencePiece's, agrees with SentencePiece.
  const bpe_table& extended = extension.table;
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

// --- a SentencePiece Unigram model ------------------------------------------------------------

const std::filesystem::path english_unigram = clp_test::data_dir / "sentencepiece" / "en_unigram.model";

TEST_CASE("sentencepiece client: the Unigram encoder gives SentencePiece's ids, before and after an extension") {
  const std::string bytes = read_file(english_unigram);
  const clp_transfer::io::sentencepiece_model source =
      clp_transfer::io::parse_sentencepiece_model(english_unigram, bytes);
  REQUIRE(source.model_type == "unigram");
  REQUIRE(!sentencepiece_refusal(source));
  const unigram_model model = sentencepiece_unigram_model(source);
  const unigram_table before(model);
  const std::string english = read_file(probes_dir / "en.txt"), german = read_file(probes_dir / "de.txt");
  const std::vector<std::string> texts = {english, german, mixed_text};
  std::vector<std::string> words;
  for (const std::string& text : texts)
    for (const std::string_view word : probe_words(text)) words.emplace_back(word);
  nlohmann::json request = {{"encode", texts}};
  for (const std::string& word : words) request["encode"].push_back(word);
  const nlohmann::json answer = ask_sentencepiece(english_unigram, request);
  if (answer.is_null()) return;
  for (std::size_t i = 0; i < texts.size(); ++i) CHECK(encode_text(before, texts[i]) == ids_of(answer["encode"][i]));
  for (std::size_t i = 0; i < words.size(); ++i) {
    CAPTURE(words[i]);
    CHECK(encode_word(before, words[i]) == ids_of(answer["encode"][texts.size() + i]));
  }

  // Extended by the shipped German tokens: every piece is what SentencePiece makes of its own
  // text, and SentencePiece's drift on the English probe is the encoder's.
  bpe_model pieces_only;
  pieces_only.tokens = model.tokens;
  pieces_only.rules = model.rules;
  const bpe_model helper = read_bpe_model(nlohmann::json::parse(read_file(models_dir / "de-small" / "tokenizer.json")),
                                          "de-small/tokenizer.json");
  const std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(pieces_only), {});
  const unigram_extension grown = extend_unigram(model, missing);
  const std::vector<clp_transfer::io::sentencepiece_piece> appended =
      appended_unigram_pieces(grown.extension, grown.scores);
  const unigram_table after = extended_unigram_table(model, appended);
  clp_test::temp_dir dir;
  const std::string extended_bytes = clp_transfer::io::append_sentencepiece_pieces(bytes, appended);
  write_file(dir / "tokenizer.model", extended_bytes);
  write_file(dir / "inside.model", without_dummy_prefix(extended_bytes));
  nlohmann::json extended_request = {{"encode", nlohmann::json::array()}};
  for (const std::string& word : words) extended_request["encode"].push_back(word);
  nlohmann::json inside = {{"encode", nlohmann::json::array()}};
  std::vector<token_id> as_word, as_inside;
  for (const written_token& token : grown.extension.written) {
    const std::string& piece = grown.extension.table.token(token.id);
    if (piece.rfind(space_mark, 0) == 0 && piece.size() > space_mark.size()) {
      extended_request["encode"].push_back(token.bytes.substr(1));
      as_word.push_back(token.id);
    } else {
      inside["encode"].push_back(token.bytes);
      as_inside.push_back(token.id);
    }
  }
  const nlohmann::json extended_answer = ask_sentencepiece(dir / "tokenizer.model", extended_request);
  const nlohmann::json inside_answer = ask_sentencepiece(dir / "inside.model", inside);
  std::size_t reached = 0, changed = 0, english_words = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    CAPTURE(words[i]);
    const std::vector<token_id> ours = encode_word(after, words[i]), theirs = ids_of(extended_answer["encode"][i]);
    if (ours != theirs) {
      std::string shown;
      for (const token_id id : ours)
        shown += " " + after.token(id) + "(" + std::to_string(after.model().scores[std::size_t(id)]) + ")";
      shown += " | SentencePiece:";
      for (const token_id id : theirs)
        shown += " " + after.token(id) + "(" + std::to_string(after.model().scores[std::size_t(id)]) + ")";
      MESSAGE(words[i] << ":" << shown);
    }
    CHECK(ours == theirs);
  }
  english_words = probe_words(english).size();  // the first words of `words`
  for (std::size_t i = 0; i < english_words; ++i)
    changed += ids_of(answer["encode"][texts.size() + i]) != ids_of(extended_answer["encode"][i]);
  for (std::size_t i = 0; i < as_word.size(); ++i)
    reached += ids_of(extended_answer["encode"][words.size() + i]) == std::vector<token_id>{as_word[i]};
  for (std::size_t i = 0; i < as_inside.size(); ++i)
    reached += ids_of(inside_answer["encode"][i]) == std::vector<token_id>{as_inside[i]};
  const drift_measure measured = drift(before, after, english);
  CHECK(measured.changed == changed);
  const double helper_per_word = fertility(bpe_table(helper), german).tokens_per_word();
  const double german_per_word = fertility(after, german).tokens_per_word();
  MESSAGE("en_unigram.model + de-small: " << missing.size() << " missing, " << grown.extension.requested_count()
                                          << " added, " << grown.extension.left_out.size() << " left out; " << reached
                                          << " of " << grown.extension.written.size()
                                          << " reached in SentencePiece; English drift " << changed << " of "
                                          << english_words << " words (SentencePiece's); German " << german_per_word
                                          << " tokens a word (helper " << helper_per_word << ")");
  CHECK(reached == grown.extension.written.size());
  CHECK(grown.extension.requested_count() >= 0.9 * double(missing.size()));
  CHECK(german_per_word <= 1.25 * helper_per_word);
}

// --- a checkpoint with both files: Llama 2's tokenizer.json and a SentencePiece model of it ---

/// A SentencePiece BPE model of the tokenizer.json `tokenizer` (Llama 2's), written with the
/// tests' own protobuf writer (tests/support, no code of the program's): its tokens at their
/// ids (<unk> unknown, <s> and </s> control, <0xNN> byte pieces, the rest normal), each piece a
/// merge makes scored minus the rank of the first merge that makes it (so SentencePiece joins
/// pieces in the tokenizer.json's merge order), identity normaliser, the dummy prefix, spaces
/// kept as written, byte fallback: Llama 2's own settings.
std::string sentencepiece_model_of(const nlohmann::json& tokenizer) {
  using namespace clp_test;
  const auto& vocab = tokenizer["model"]["vocab"];
  std::vector<std::string> tokens(vocab.size());
  for (const auto& [token, id] : vocab.items()) tokens[id.get<std::size_t>()] = token;
  std::map<std::string, std::size_t> first_rank;
  const auto& merges = tokenizer["model"]["merges"];
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string line = merges[rank].get<std::string>();
    first_rank.emplace(line.substr(0, line.find(' ')) + line.substr(line.find(' ') + 1), rank);
  }
  std::string model;
  for (const std::string& t : tokens) {
    const int type = t == "<unk>"                                ? 2
                     : (t == "<s>" || t == "</s>")               ? 3
                     : (t.size() == 6 && t.rfind("<0x", 0) == 0) ? 6
                                                                 : 1;
    const auto rank = first_rank.find(t);
    const float score = type != 1 ? 0.0f : rank != first_rank.end() ? -float(rank->second) : -float(merges.size());
    std::string piece = protobuf_bytes_field(1, t) + protobuf_float_field(2, score);
    if (type != 1) piece += protobuf_varint_field(3, std::uint64_t(type));
    model += protobuf_bytes_field(1, piece);
  }
  model += protobuf_bytes_field(2, protobuf_varint_field(3, 2) + protobuf_varint_field(35, 1));  // bpe, byte fallback
  model += protobuf_bytes_field(3, protobuf_bytes_field(1, "identity") + protobuf_varint_field(3, 1) +
                                       protobuf_varint_field(4, 0) + protobuf_varint_field(5, 1));
  return model;
}

TEST_CASE(
    "sentencepiece client: Llama 2's tokenizer.json and a SentencePiece model of it, extended together, give "
    "the same ids") {
  const auto llama2 = clp_test::needed_tokenizer("llama2");
  if (!llama2) return;
  if (std::system("node --version >/dev/null 2>&1") != 0 || !std::filesystem::exists(javascript_package)) {
    clp_test::skip("no node or no @huggingface/tokenizers under tests/data/fetched");
    return;
  }
  const auto document = parse_ordered_json(read_file(*llama2 / "tokenizer.json"), "tokenizer.json");
  const std::string model_bytes = sentencepiece_model_of(nlohmann::json::parse(read_file(*llama2 / "tokenizer.json")));
  clp_test::temp_dir dir;
  std::filesystem::create_directories(dir / "source");
  write_file(dir / "source" / "tokenizer.model", model_bytes);
  const clp_transfer::io::sentencepiece_model sp =
      clp_transfer::io::parse_sentencepiece_model(dir / "source" / "tokenizer.model", model_bytes);
  const bpe_model source = read_bpe_model(document, "tokenizer.json");
  REQUIRE(!sentencepiece_bpe_refusal(sp));
  CHECK(same_merges(source, sentencepiece_bpe_model(sp.pieces, sp)));  // what extend asks of a model beside it

  const bpe_model helper = read_bpe_model(nlohmann::json::parse(read_file(models_dir / "de-small" / "tokenizer.json")),
                                          "de-small/tokenizer.json");
  const std::vector<std::string> missing =
      choose_tokens(bytes_of_tokens(helper, merge_rank_order(helper)), vocabulary_bytes(source), {});
  bpe_extension extension = extend_bpe(source, missing, first_unused_id(source));
  const std::vector<clp_transfer::io::sentencepiece_piece> appended = appended_pieces(sp, extension, "tokenizer.model");
  extension = with_sentencepiece_merges(std::move(extension), joined_pieces(sp, appended), sp);
  std::filesystem::create_directories(dir / "out");
  write_file(dir / "out" / "tokenizer.json", extended_tokenizer_json(document, extension, "tokenizer.json").dump(2));
  write_file(dir / "out" / "tokenizer.model", clp_transfer::io::append_sentencepiece_pieces(model_bytes, appended));

  const std::vector<std::string> texts = {read_file(probes_dir / "en.txt"), read_file(probes_dir / "de.txt"),
                                          mixed_text};
  const nlohmann::json model_before = ask_sentencepiece(dir / "source" / "tokenizer.model", {{"encode", texts}});
  if (model_before.is_null()) return;
  const nlohmann::json model_after = ask_sentencepiece(dir / "out" / "tokenizer.model", {{"encode", texts}});
  const nlohmann::json json_before = ask_javascript(*llama2, {{"encode", texts}});
  const nlohmann::json json_after = ask_javascript(dir / "out", {{"encode", texts}});
  // The model of the tokenizer.json encodes as it does (the construction is faithful), and so do
  // the two files written extended; the German text costs fewer tokens than before.
  CHECK(model_before["encode"] == json_before["encode"]);
  CHECK(model_after["encode"] == json_after["encode"]);
  for (std::size_t i = 0; i < texts.size(); ++i)
    CHECK(encode_text(extension.table, texts[i]) == ids_of(json_after["encode"][i]));
  CHECK(json_after["encode"][1].size() < json_before["encode"][1].size());
  MESSAGE("Llama 2 + de-small, both files: " << extension.requested_count() << " of " << missing.size()
                                             << " added; German " << json_before["encode"][1].size() << " -> "
                                             << json_after["encode"][1].size() << " tokens in both clients");
}

}  // namespace
}  // namespace test_sentencepiece_client
