// The program on every checkpoint layout a user has, end to end: a helper whose tokenizer is a
// SentencePiece model or a WordPiece vocab.txt and whose weights are a pytorch_model.bin, and a
// source whose weights are a sharded pytorch_model.bin, each transferred beside its twin in
// the layout the program read before (tokenizer.json, safetensors); the outputs must be the
// same to the byte. The files are real: tests/data/checkpoint_formats/make_fixtures.py wrote
// them with python3-sentencepiece and torch.save. And a pickle that names a global outside
// torch's allow-list is refused by the global's name, and what it names never runs.
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "model_fixtures.hpp"
#include "refusals.hpp"
#include "support/sentencepiece_bytes.hpp"

using namespace program_test;

namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";

/// Copies `names` from the fixture folder `from` into `folder`.
void copy_files(const std::string& from, const fs::path& folder, std::initializer_list<const char*> names) {
  fs::create_directories(folder);
  for (const char* name : names) fs::copy_file(formats / from / name, folder / name);
}

/// The source: source/ as it is (sharded safetensors, tokenizer.json and the tokenizer.model
/// it was converted from), or with `torch` its pytorch_model-0000N-of-00002.bin shards and
/// their index instead of the safetensors ones.
void write_source(const fs::path& folder, bool torch) {
  copy_files("source", folder, {"config.json", "tokenizer.json", "tokenizer.model"});
  if (torch) {
    copy_files(
        "source_bin", folder,
        {"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json"});
  } else {
    copy_files(
        "source", folder,
        {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"});
  }
}

/// A workspace whose source is write_source's and whose helper holds `helper_files` of the
/// fixture folder `helper_from`.
workspace formats_workspace(bool torch_source, const std::string& helper_from,
                            std::initializer_list<const char*> helper_files) {
  return workspace([&](const fs::path& root) {
    model_pair pair;
    pair.source.folder = root / "source";
    pair.helper.folder = root / "helper";
    write_source(pair.source.folder, torch_source);
    copy_files(helper_from, pair.helper.folder, helper_files);
    return pair;
  });
}

/// Runs the transfer of `ws` into its output; it must succeed.
void transfer(const workspace& ws) {
  const program_result result = run_program(ws.transfer({"--quiet"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
}

/// The output's weight files and index, which must be the safetensors names whatever the
/// source's format: identical, byte for byte, in both outputs.
void check_same_weights(const fs::path& output, const fs::path& expected) {
  for (const char* name :
       {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}) {
    INFO("output file ", name);
    REQUIRE(fs::exists(output / name));
    CHECK(read_file(output / name) == read_file(expected / name));
  }
}

}  // namespace

TEST_CASE("a helper of config.json, tokenizer.model and pytorch_model.bin gives its tokenizer.json twin's output") {
  const workspace sentencepiece =
      formats_workspace(false, "helper_sentencepiece", {"config.json", "tokenizer.model", "pytorch_model.bin"});
  const workspace twin =
      formats_workspace(false, "helper_sentencepiece", {"config.json", "tokenizer.json", "model.safetensors"});
  transfer(sentencepiece);
  transfer(twin);
  check_same_weights(sentencepiece.output, twin.output);
  CHECK(folder_entries(sentencepiece.output) ==
        std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                 "model.safetensors.index.json", "tokenizer.model"});
  CHECK(read_file(sentencepiece.output / "tokenizer.model") ==
        read_file(formats / "helper_sentencepiece" / "tokenizer.model"));
}

TEST_CASE("a helper of config.json, vocab.txt and pytorch_model.bin gives its tokenizer.json twin's output") {
  const workspace wordpiece =
      formats_workspace(false, "helper_wordpiece", {"config.json", "vocab.txt", "pytorch_model.bin"});
  const workspace twin =
      formats_workspace(false, "helper_wordpiece", {"config.json", "tokenizer.json", "model.safetensors"});
  transfer(wordpiece);
  transfer(twin);
  check_same_weights(wordpiece.output, twin.output);
  CHECK(read_file(wordpiece.output / "vocab.txt") == read_file(formats / "helper_wordpiece" / "vocab.txt"));
}

TEST_CASE("a source of sharded pytorch_model-0000N-of-00002.bin gives its sharded safetensors twin's output") {
  const workspace torch =
      formats_workspace(true, "helper_sentencepiece", {"config.json", "tokenizer.json", "model.safetensors"});
  const workspace twin =
      formats_workspace(false, "helper_sentencepiece", {"config.json", "tokenizer.json", "model.safetensors"});
  transfer(torch);
  transfer(twin);
  check_same_weights(torch.output, twin.output);
  CHECK(read_file(torch.output / "config.json") == read_file(twin.output / "config.json"));
  CHECK(folder_entries(torch.output) == folder_entries(twin.output));  // no .bin, no pytorch index
}

TEST_CASE("refused: a pickle that names os.system or builtins.eval, by the global's name, and the command never runs") {
  for (const auto& [fixture, global, trace] :
       {std::tuple("os_system.bin", "\"os.system\"", "/tmp/clp-transfer-pickle-ran-os-system"),
        std::tuple("builtins_eval.bin", "\"builtins.eval\"", "/tmp/clp-transfer-pickle-ran-builtins-eval")}) {
    INFO(fixture);
    std::error_code ignored;
    fs::remove(trace, ignored);
    const workspace helper = formats_workspace(false, "helper_sentencepiece", {"config.json", "tokenizer.model"});
    fs::copy_file(formats / "refusals" / fixture, helper.pair.helper.folder / "pytorch_model.bin");
    expect_refusal(helper, helper.pair.helper.folder / "pytorch_model.bin", {"names the global", global});
    // As the second shard of the source: refused when it is opened, before any tensor is read.
    const workspace source =
        formats_workspace(true, "helper_sentencepiece", {"config.json", "tokenizer.json", "model.safetensors"});
    const fs::path shard = source.pair.source.folder / "pytorch_model-00002-of-00002.bin";
    fs::copy_file(formats / "refusals" / fixture, shard, fs::copy_options::overwrite_existing);
    expect_refusal(source, shard, {"names the global", global, "nothing in the file was run"});
    CHECK(!fs::exists(trace));
  }
}

TEST_CASE("refused: a shard its index lists is missing, the index named beside it") {
  const workspace source =
      formats_workspace(true, "helper_sentencepiece", {"config.json", "tokenizer.json", "model.safetensors"});
  const fs::path shard = source.pair.source.folder / "pytorch_model-00002-of-00002.bin";
  fs::remove(shard);
  expect_refusal(source, shard, {"cannot open", "a shard pytorch_model.bin.index.json lists"});
}

TEST_CASE("refused: a tokenizer.model that disagrees with the tokenizer.json beside it") {
  const workspace ws = formats_workspace(false, "helper_sentencepiece",
                                         {"config.json", "tokenizer.json", "tokenizer.model", "model.safetensors"});
  const fs::path model = ws.pair.helper.folder / "tokenizer.model";
  // The source's model, as a folder whose tokenizer.model was replaced would hold it.
  fs::copy_file(formats / "source" / "tokenizer.model", model, fs::copy_options::overwrite_existing);
  expect_refusal(ws, model, {"disagrees with tokenizer.json"});
}
