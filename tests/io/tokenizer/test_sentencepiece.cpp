// Tests for the vocabulary files that are not JSON: SentencePiece models
// (io/tokenizer/sentencepiece.hpp, on io/tokenizer/protobuf_wire.hpp) and WordPiece vocab.txt
// (io/tokenizer/wordpiece.hpp). The oracle for the real models is the SentencePiece library itself:
// tests/data/checkpoint_formats/make_fixtures.py trained them and wrote every piece, score and
// type as the library reports them (*.pieces.json); the oracle for vocab.txt is the
// tokenizer.json written beside it from the same token list. Hand-built files
// (support/sentencepiece_bytes.hpp) break one rule each.
#include "io/tokenizer/sentencepiece.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/support/file_refusals.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/wordpiece.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/sentencepiece_bytes.hpp"
#include "support/temp_dir.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using namespace std::string_literals;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_sentencepiece {
namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";

/// Checks every piece of the model `file` against the library's own account of it, `oracle`.
void check_against_library(const fs::path& file, const fs::path& oracle) {
  INFO("model ", file);
  const io::sentencepiece_model model = io::read_sentencepiece_model(file);
  const nlohmann::json expected = nlohmann::json::parse(read_file(oracle));
  REQUIRE(model.pieces.size() == expected.size());
  for (std::size_t id = 0; id < model.pieces.size(); ++id) {
    const io::sentencepiece_piece& piece = model.pieces[id];
    INFO("id ", id);
    CHECK(piece.piece == expected[id][0].get<std::string>());
    CHECK(piece.score == expected[id][1].get<float>());
    const std::string type = expected[id][2];
    // The library's Python API does not tell user-defined pieces from normal ones.
    CHECK(
        (type == io::piece_type_name(piece.type) || (type == "normal" && piece.type == io::piece_type::user_defined)));
  }
  const io::token_vocabulary vocabulary = io::sentencepiece_vocabulary(file, model);
  CHECK(vocabulary.size == static_cast<std::int64_t>(expected.size()));
  CHECK(vocabulary.ids.at(expected[7][0].get<std::string>()) == 7);
}

std::optional<file_refusal> model_refusal(const temp_dir& dir, const std::string& bytes) {
  write_file(dir / "tokenizer.model", bytes);
  return file_refusal_of([&] { io::read_sentencepiece_model(dir / "tokenizer.model"); });
}

void check_model_refusal(const temp_dir& dir, const std::string& bytes, std::initializer_list<std::string_view> words) {
  check_refusal(model_refusal(dir, bytes), file_kind::malformed, dir / "tokenizer.model", words);
}

}  // namespace

TEST_CASE("SentencePiece models trained by the library: every piece, score and type as the library reads them") {
  check_against_library(formats / "helper_sentencepiece" / "tokenizer.model",
                        formats / "helper_sentencepiece" / "tokenizer.pieces.json");
  check_against_library(formats / "spiece" / "spiece.model", formats / "spiece" / "spiece.pieces.json");
  const io::sentencepiece_model bpe =
      io::read_sentencepiece_model(formats / "helper_sentencepiece" / "tokenizer.model");
  CHECK(bpe.model_type == "bpe");
  CHECK(bpe.byte_fallback);
  CHECK(bpe.has_byte_pieces());
  CHECK(bpe.escape_whitespaces);
  CHECK(bpe.pieces[4].piece == "<mask>");  // trained with user_defined_symbols=["<mask>"] after <pad>
  CHECK(bpe.pieces[4].type == io::piece_type::user_defined);
  const io::sentencepiece_model unigram = io::read_sentencepiece_model(formats / "spiece" / "spiece.model");
  CHECK(unigram.model_type == "unigram");
  CHECK(!unigram.byte_fallback);
  CHECK(!unigram.has_byte_pieces());
}

TEST_CASE("a hand-built model: all six piece types, fields the reader skips, whitespace not escaped") {
  temp_dir dir;
  std::string bytes =
      sentencepiece_model_bytes({{"<unk>", 0, 2},
                                 {"<s>", 0, 3},
                                 {"<mask>", 0, 4},
                                 {"<unused0>", 0, 5},
                                 {"<0x41>", 0, 6},
                                 {"\xe2\x96\x81"
                                  "a",
                                  -1.5f, 1}},
                                /*model_type=*/1, /*byte_fallback=*/false, /*escape_whitespaces=*/false);
  // self_test_data (field 4), an extension field (200, fixed64), a field after the others.
  bytes += protobuf_bytes_field(4, protobuf_bytes_field(1, protobuf_bytes_field(1, "x")));
  bytes += protobuf_varint(200 << 3 | 1) + std::string(8, '\x07');
  write_file(dir / "m.model", bytes);
  const io::sentencepiece_model model = io::read_sentencepiece_model(dir / "m.model");
  REQUIRE(model.pieces.size() == 6);
  const std::vector<io::piece_type> types{io::piece_type::unknown,      io::piece_type::control,
                                          io::piece_type::user_defined, io::piece_type::unused,
                                          io::piece_type::byte,         io::piece_type::normal};
  for (std::size_t i = 0; i < types.size(); ++i) CHECK(model.pieces[i].type == types[i]);
  CHECK(model.pieces[5].score == -1.5f);
  CHECK(model.model_type == "unigram");
  CHECK(!model.escape_whitespaces);
  CHECK(model.has_byte_pieces());
}

TEST_CASE("files that are no SentencePiece model, each refused naming the file, the byte and the field") {
  temp_dir dir;
  const std::string good = sentencepiece_model_bytes({{"<unk>", 0, 2}, {"a", 0, 1}});
  check_model_refusal(dir, "", {"no pieces: not a SentencePiece model"});
  check_model_refusal(dir, good.substr(0, good.size() - 3), {"byte", "runs past the end of the message"});
  check_model_refusal(dir, "\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"s, {"longer than"});
  check_model_refusal(dir, protobuf_varint_field(1, 5),
                      {"field 1 (pieces) has wire type varint, not length-delimited"});
  check_model_refusal(dir, protobuf_varint(1 << 3 | 3), {"wire type 3"});
  check_model_refusal(dir, "\x00\x00"s, {"byte 0: field number 0"});
  check_model_refusal(dir, protobuf_bytes_field(1, protobuf_varint_field(1, 7)),
                      {"field 1 (piece) has wire type varint", "in pieces[0]"});
  check_model_refusal(dir, sentencepiece_model_bytes({{"a", 0, 7}}), {"pieces[0] has type 7"});
  check_model_refusal(dir, sentencepiece_model_bytes({{"", 0, 1}}), {"pieces[0] has no piece"});
  check_model_refusal(dir, sentencepiece_model_bytes({{"a", 0, 1}, {"b", 0, 1}, {"a", 0, 1}}),
                      {"pieces[0] and pieces[2] are both \"a\""});
  check_model_refusal(dir, sentencepiece_model_bytes({{"<0xZZ>", 0, 6}}), {"of type byte but not a byte piece"});
  check_model_refusal(dir, sentencepiece_model_bytes({{"\xff", 0, 1}}), {"pieces[0]", "is not UTF-8"});
  check_model_refusal(dir, protobuf_bytes_field(2, protobuf_varint_field(3, 9)) + good,
                      {"trainer_spec.model_type is 9"});
}

TEST_CASE("a tokenizer.model in tiktoken's text format is recognised and refused by name") {
  const fs::path file = formats / "refusals" / "tiktoken.model";
  CHECK(io::is_tiktoken_file(file));
  CHECK(!io::is_tiktoken_file(formats / "helper_sentencepiece" / "tokenizer.model"));
  check_refusal(file_refusal_of([&] { io::read_sentencepiece_model(file); }), file_kind::malformed, file,
                {"tiktoken's BPE ranks", "not a SentencePiece model"});
}

TEST_CASE("a SentencePiece model agrees with the tokenizer.json converted from it, and a disagreement is named") {
  const fs::path folder = formats / "helper_sentencepiece";
  const io::sentencepiece_model model = io::read_sentencepiece_model(folder / "tokenizer.model");
  const io::token_vocabulary converted = io::read_tokenizer_json(folder / "tokenizer.json").vocabulary;
  io::check_sentencepiece_agrees(folder / "tokenizer.model", model, folder / "tokenizer.json", converted);

  // fairseq's layout (XLM-R): its own special tokens first, every other piece one id later.
  io::token_vocabulary fairseq;
  fairseq.ids = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (std::size_t id = 0; id < model.pieces.size(); ++id)
    if (!fairseq.ids.count(model.pieces[id].piece)) fairseq.ids[model.pieces[id].piece] = std::int64_t(id) + 1;
  io::check_sentencepiece_agrees(folder / "tokenizer.model", model, folder / "tokenizer.json", fairseq);

  io::token_vocabulary swapped = converted;
  const std::string a = model.pieces[300].piece, b = model.pieces[301].piece;
  std::swap(swapped.ids[a], swapped.ids[b]);
  check_refusal(file_refusal_of([&] {
                  io::check_sentencepiece_agrees(folder / "tokenizer.model", model, folder / "tokenizer.json", swapped);
                }),
                file_kind::malformed, folder / "tokenizer.model",
                {"disagrees with tokenizer.json: piece", "is id 300 here and id 301 there"});
  io::token_vocabulary missing = converted;
  missing.ids.erase(model.pieces[0].piece);
  check_refusal(file_refusal_of([&] {
                  io::check_sentencepiece_agrees(folder / "tokenizer.model", model, folder / "tokenizer.json", missing);
                }),
                file_kind::malformed, folder / "tokenizer.model",
                {"disagrees with tokenizer.json: unknown piece \"<unk>\" (id 0 here) is not in it"});
}

TEST_CASE("vocab.txt: one token a line, id = line, read as the tokenizer.json beside it says") {
  const fs::path folder = formats / "helper_wordpiece";
  const io::token_vocabulary vocabulary = io::read_wordpiece_vocab(folder / "vocab.txt");
  const io::token_vocabulary expected = io::read_tokenizer_json(folder / "tokenizer.json").vocabulary;
  CHECK(vocabulary.ids == expected.ids);
  CHECK(vocabulary.size == expected.size);

  temp_dir dir;
  write_file(dir / "vocab.txt", "[PAD]\r\n##a\rb\n\n  \nlast");
  const io::token_vocabulary lines = io::read_wordpiece_vocab(dir / "vocab.txt");
  CHECK(lines.ids == std::unordered_map<std::string, std::int64_t>{
                         {"[PAD]", 0}, {"##a", 1}, {"b", 2}, {"", 3}, {"  ", 4}, {"last", 5}});
  write_file(dir / "vocab.txt", "a\nb\nc\nb\n");
  check_refusal(file_refusal_of([&] { io::read_wordpiece_vocab(dir / "vocab.txt"); }), file_kind::malformed,
                dir / "vocab.txt", {"lines 2 and 4 both hold the token \"b\""});
  write_file(dir / "vocab.txt", "a\n\xc3\n");
  check_refusal(file_refusal_of([&] { io::read_wordpiece_vocab(dir / "vocab.txt"); }), file_kind::malformed,
                dir / "vocab.txt", {"line 2 is not UTF-8"});
  write_file(dir / "vocab.txt", "");
  check_refusal(file_refusal_of([&] { io::read_wordpiece_vocab(dir / "vocab.txt"); }), file_kind::malformed,
                dir / "vocab.txt", {"no vocabulary"});
}

}  // namespace test_sentencepiece
