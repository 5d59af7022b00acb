// Which file of a model folder its vocabulary and spelling come from (io/tokenizer/reading.hpp,
// io/tokenizer/files.hpp): tokenizer.json, else vocab.json, else a SentencePiece model, else
// vocab.txt; every other SentencePiece model of the folder checked against the vocabulary read;
// and the weights of a folder whose only checkpoint is a pytorch_model.bin. On the real files of
// tests/data/checkpoint_formats (see its PROVENANCE.md), copied into folders of each layout.
#include "io/hf_checkpoint.hpp"

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "io/tokenizer/reading.hpp"
#include "io/tokenizer/spelling.hpp"
#include "support/files.hpp"
#include "io/support/file_refusals.hpp"
#include "support/refusals.hpp"
#include "support/sentencepiece_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace clp_transfer;
using namespace clp_test;
namespace fs = std::filesystem;

namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";

/// A folder under `root` holding copies of `names` from the fixture folder `from`.
fs::path folder_of(const fs::path& root, const std::string& name, const std::string& from,
                   std::initializer_list<const char*> names) {
  const fs::path folder = root / name;
  fs::create_directories(folder);
  for (const char* file : names) fs::copy_file(formats / from / file, folder / file);
  return folder;
}

}  // namespace

TEST_CASE("a folder of config.json, tokenizer.model and pytorch_model.bin reads as its tokenizer.json twin") {
  temp_dir dir;
  const fs::path model = folder_of(dir.path, "model", "helper_sentencepiece",
                                   {"config.json", "tokenizer.model", "pytorch_model.bin"});
  const fs::path twin = folder_of(dir.path, "twin", "helper_sentencepiece",
                                  {"config.json", "tokenizer.json", "model.safetensors"});
  const hf_checkpoint read = hf_checkpoint::read(model);
  const hf_checkpoint expected = hf_checkpoint::read(twin);
  CHECK(read.tokenizer.file == model / "tokenizer.model");
  CHECK(read.tokenizer.vocabulary.ids == expected.tokenizer.vocabulary.ids);
  CHECK(read.tokenizer.spelling.kind == expected.tokenizer.spelling.kind);
  CHECK(read.tokenizer.spelling.byte_fallback);
  CHECK(read.tokenizer.spelling.evidence.find("tokenizer.model (SentencePiece bpe model") == 0);
  CHECK(read.weights.tensor_names() == expected.weights.tensor_names());
  CHECK(read.weights.shards()[0].format() == clp_transfer::io::weight_format::torch);
  CHECK(read.weights.output_name(0) == "model.safetensors");
  CHECK(read_tokenizer_spelling(model).kind == clp::token_spelling::sentencepiece);
}

TEST_CASE("a vocab.txt folder is WordPiece, unless its tokenizer_config.json names another kind of tokenizer") {
  temp_dir dir;
  const fs::path model = folder_of(dir.path, "model", "helper_wordpiece", {"config.json", "vocab.txt", "pytorch_model.bin"});
  const tokenizer_reading read = hf_checkpoint::read(model).tokenizer;
  const tokenizer_reading expected = read_tokenizer(formats / "helper_wordpiece" / "tokenizer.json");
  CHECK(read.vocabulary.ids == expected.vocabulary.ids);
  CHECK(read.spelling.kind == clp::token_spelling::wordpiece);
  CHECK(read.spelling.continuing_prefix == "##");
  CHECK(expected.spelling.kind == clp::token_spelling::wordpiece);
  write_file(model / "tokenizer_config.json", R"({"tokenizer_class": "BertTokenizerFast"})");
  CHECK(read_tokenizer(model).spelling.kind == clp::token_spelling::wordpiece);
  CHECK(read_tokenizer(model).spelling.evidence.find("tokenizer_class BertTokenizerFast") != std::string::npos);
  write_file(model / "tokenizer_config.json", R"({"tokenizer_class": "XLMTokenizer"})");
  CHECK(!read_tokenizer(model).spelling.kind);
  CHECK(!read_tokenizer_spelling(model / "vocab.txt").kind);
}

TEST_CASE("tokenizer.json is read and every SentencePiece model beside it checked: a disagreement is refused") {
  temp_dir dir;
  const fs::path model = folder_of(dir.path, "model", "helper_sentencepiece",
                                   {"config.json", "tokenizer.json", "tokenizer.model", "model.safetensors"});
  const tokenizer_reading agreeing = read_tokenizer(model);
  CHECK(agreeing.file == model / "tokenizer.json");
  CHECK(agreeing.notes.empty());
  // A stale spiece.model beside them: another vocabulary, never silently used or ignored.
  write_file(model / "spiece.model", sentencepiece_model_bytes({{"<unk>", 0, 2}, {"\xe2\x96\x81" "zzz", 0, 1}}));
  check_refusal(file_refusal_of([&] { hf_checkpoint::read(model); }), file_kind::malformed,
                model / "spiece.model", {"disagrees with tokenizer.json", "\"\xe2\x96\x81zzz\"", "is not in it"});
  // A tiktoken file cannot be checked: named in a note, which the program prints as a warning.
  fs::remove(model / "spiece.model");
  fs::copy_file(formats / "refusals" / "tiktoken.model", model / "tokenizer.model", fs::copy_options::overwrite_existing);
  const tokenizer_reading noted = read_tokenizer(model);
  REQUIRE(noted.notes.size() == 1);
  CHECK(noted.notes[0].find("tiktoken") != std::string::npos);
  // Alone, it is refused by name.
  fs::remove(model / "tokenizer.json");
  check_refusal(file_refusal_of([&] { read_tokenizer(model); }), file_kind::malformed, model / "tokenizer.model",
                {"tiktoken's BPE ranks"});
}

TEST_CASE("a sharded pytorch_model.bin reads as its sharded safetensors twin, with safetensors names for the output") {
  temp_dir dir;
  const fs::path model = dir / "model";
  fs::copy(formats / "source_bin", model);
  fs::copy_file(formats / "source" / "config.json", model / "config.json");
  fs::copy_file(formats / "source" / "tokenizer.json", model / "tokenizer.json");
  const hf_checkpoint read = hf_checkpoint::read(model);
  const hf_checkpoint twin = hf_checkpoint::read(formats / "source");
  CHECK(read.weights.tensor_names() == twin.weights.tensor_names());
  CHECK(read.weights.index_path() == model / "pytorch_model.bin.index.json");
  CHECK(read.weights.output_index_name() == "model.safetensors.index.json");
  CHECK(read.weights.output_index() == twin.weights.index());
  REQUIRE(read.weights.shards().size() == 2);
  for (std::size_t s = 0; s < 2; ++s) {  // in order of first appearance in the weight_map
    const std::string name = read.weights.shards()[s].path().filename().string();
    CHECK(read.weights.output_name(s) == "model" + name.substr(13, 15) + ".safetensors");  // "-0000N-of-00002"
  }
  CHECK(clp_transfer::io::output_weight_name("shard-a.bin", clp_transfer::io::weight_format::torch) == "shard-a.safetensors");
  CHECK(clp_transfer::io::output_weight_name("x.safetensors", clp_transfer::io::weight_format::safetensors) == "x.safetensors");
}
