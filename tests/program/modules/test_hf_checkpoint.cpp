// io/hf_checkpoint.hpp: a model folder read once into one value (its JSON files, its weights'
// headers and index, its tokenizer), and the refusals of a folder that is not a model, each
// checked for its kind and the file it names; and what read_models.hpp warms from it.
#include "io/hf_checkpoint.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "support/files.hpp"
#include "io/support/file_refusals.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"
#include "transfer/read_models.hpp"

using namespace clp_transfer;
using namespace clp_test;
namespace fs = std::filesystem;

namespace {

/// A minimal model folder: config.json, one F32 embedding of `rows` x 2, and a byte-level BPE
/// tokenizer.json of tokens "t0", "t1", ...
void write_model(const fs::path& folder, int rows = 3) {
  fs::create_directories(folder);
  write_file(folder / "config.json",
             R"({"model_type": "gpt2", "n_embd": 2, "vocab_size": )" + std::to_string(rows) + "}");
  clp_transfer::io::safetensors_writer writer(
      folder / "model.safetensors",
      {{"transformer.wte.weight", clp_transfer::io::dtype::f32, {rows, 2}, std::uint64_t(rows) * 8}}, {}, false);
  const std::vector<float> values(std::size_t(rows) * 2, 0.5f);
  writer.append(values.data(), values.size() * sizeof(float));
  writer.finish();
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < rows; ++id) vocab["t" + std::to_string(id)] = id;
  write_file(
      folder / "tokenizer.json",
      nlohmann::json({{"decoder", {{"type", "ByteLevel"}}}, {"model", {{"type", "BPE"}, {"vocab", vocab}}}}).dump());
}

}  // namespace

TEST_CASE("a model folder is read once into one value") {
  temp_dir dir;
  write_model(dir.path);
  write_file(dir / "generation_config.json", R"({"eos_token_id": 2, "temperature": 0.7})");
  write_file(dir / "tokenizer_config.json", R"({"eos_token": "t2"})");
  const hf_checkpoint model = hf_checkpoint::read(dir.path);
  CHECK(model.folder == dir.path);
  CHECK(model.config()["n_embd"] == 2);
  CHECK(model.config_file() == dir / "config.json");
  REQUIRE(model.json.generation_config);
  CHECK((*model.json.generation_config)["temperature"] == 0.7);
  REQUIRE(model.json.tokenizer_config);
  CHECK_FALSE(model.json.special_tokens_map);
  CHECK(model.weights.tensor_names() == std::vector<std::string>{"transformer.wte.weight"});
  CHECK(model.tokenizer.file == dir / "tokenizer.json");
  CHECK(model.tokenizer.vocabulary.size == 3);
  REQUIRE(model.tokenizer.spelling.kind);
  CHECK(*model.tokenizer.spelling.kind == clp::token_spelling::byte_level);
}

TEST_CASE("a vocab.json's spelling comes from the tokenizer_config.json the folder read") {
  temp_dir dir;
  write_model(dir.path);
  fs::remove(dir / "tokenizer.json");
  write_file(dir / "vocab.json", R"({"t0": 0, "t1": 1, "t2": 2})");
  write_file(dir / "tokenizer_config.json", R"({"tokenizer_class": "GPT2TokenizerFast"})");
  const hf_checkpoint model = hf_checkpoint::read(dir.path);
  CHECK(model.tokenizer.file == dir / "vocab.json");
  CHECK(model.tokenizer.spelling.evidence == "tokenizer_config.json tokenizer_class GPT2TokenizerFast");
}

TEST_CASE("a folder that is no model is refused naming the file at fault, the first in reading order") {
  temp_dir dir;
  const fs::path model = dir / "model";
  const auto refusal = [&] { return file_refusal_of([&] { hf_checkpoint::read(model); }); };
  check_refusal(refusal(), file_kind::io, model, {"no such file or folder"});
  write_model(model);
  SUBCASE("config.json missing") {
    fs::remove(model / "config.json");
    check_refusal(refusal(), file_kind::io, model / "config.json", {"cannot open"});
  }
  SUBCASE("config.json not an object") {
    write_file(model / "config.json", "[1]");
    check_refusal(refusal(), file_kind::malformed, model / "config.json", {"not a JSON object"});
  }
  SUBCASE("no weights") {
    fs::remove(model / "model.safetensors");
    check_refusal(refusal(), file_kind::malformed, model, {"no model.safetensors"});
  }
  SUBCASE("a tokenizer_config.json that is not JSON") {
    write_file(model / "tokenizer_config.json", "{");
    check_refusal(refusal(), file_kind::malformed, model / "tokenizer_config.json", {"not valid JSON"});
  }
  SUBCASE("no tokenizer") {
    fs::remove(model / "tokenizer.json");
    check_refusal(refusal(), file_kind::malformed, model, {"no tokenizer.json, vocab.json, SentencePiece model"});
  }
}

TEST_CASE("the weights' headers are handed out before the tokenizer is read, whether it is then refused or not") {
  temp_dir dir;
  write_model(dir.path);
  std::vector<std::string> seen;
  const auto headers_read = [&](const clp_transfer::io::model_weights& weights) { seen = weights.tensor_names(); };
  hf_checkpoint::read(dir.path, headers_read);
  CHECK(seen == std::vector<std::string>{"transformer.wte.weight"});
  seen.clear();
  fs::remove(dir / "tokenizer.json");
  check_refusal(file_refusal_of([&] { hf_checkpoint::read(dir.path, headers_read); }), file_kind::malformed,
                dir.path, {"no tokenizer.json, vocab.json, SentencePiece model"});
  CHECK(seen == std::vector<std::string>{"transformer.wte.weight"});
}

TEST_CASE("read_models' warm-up: the bytes of the tensors the transfer maps, best effort") {
  temp_dir dir;
  write_model(dir.path, 5);
  const clp_transfer::io::model_weights weights(dir.path);
  const clp_transfer::io::located_tensor wte = weights.locate("transformer.wte.weight");
  const std::vector<detail::tensor_bytes> found = detail::mapped_tensor_bytes(dir.path, weights, "", nullptr);
  REQUIRE(found.size() == 1);
  CHECK(found[0].offset == wte.tensor.offset);
  CHECK(found[0].size == 40);  // 5 x 2 float32
  CHECK(found[0].file.get() != wte.file.descriptor());  // its own descriptor, for a thread of its own
  detail::warm_pages(found);                            // maps and unmaps; nothing to see but no harm
  // A name that is not there: nothing, and no error (the read that follows reports it).
  CHECK(detail::mapped_tensor_bytes(dir.path, weights, "no.such.tensor", nullptr).empty());
  const std::string no_head = "lm_head.weight";
  CHECK(detail::mapped_tensor_bytes(dir.path, weights, "", &no_head).empty());
}
