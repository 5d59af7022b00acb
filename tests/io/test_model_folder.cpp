// Tests of the model-folder level of the file layer: the weights of a folder (single file and
// sharded, io/model_weights.hpp), the tokenizer files an output needs (io/tokenizer/files.hpp),
// embedding discovery (io/embedding_names.hpp), the staging directory (io/output_folder.hpp), and
// JSON errors of every file a folder holds. Each refusal is checked for its kind, the file it
// names and its one-line message.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "io/embedding_names.hpp"
#include "io/json/file.hpp"
#include "io/model_weights.hpp"
#include "io/output_folder.hpp"
#include "io/safetensors.hpp"
#include "io/support/file_refusals.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"

namespace io = clp_transfer::io;
using namespace clp_test;

namespace test_model_folder {
/// Writes a safetensors file holding one U8 tensor of `size` bytes per name.
/// @param[in] file   file to write
/// @param[in] names  tensor names, in order
/// @param[in] size   bytes per tensor
void write_u8_tensors(const std::filesystem::path& file, const std::vector<std::string>& names, std::size_t size = 4) {
  std::vector<io::tensor_spec> specs;
  for (const std::string& name : names)
    specs.push_back({name, clp_transfer::io::dtype::u8, {static_cast<std::int64_t>(size)}, size});
  io::safetensors_writer writer(file, specs);
  const std::vector<char> bytes(size * names.size(), 'x');
  writer.append(bytes.data(), bytes.size());
  writer.finish();
}

}  // namespace test_model_folder

using test_model_folder::write_u8_tensors;

TEST_CASE("the weights of a single-file model folder") {
  temp_dir dir;
  write_u8_tensors(dir / "model.safetensors", {"transformer.wte.weight", "transformer.h.0.w"});

  const io::model_weights model(dir.path);
  CHECK(model.folder() == dir.path);
  CHECK(model.index_path().empty());
  CHECK(model.index().is_null());
  REQUIRE(model.shards().size() == 1);
  CHECK(model.tensor_names() == std::vector<std::string>{"transformer.wte.weight", "transformer.h.0.w"});
  const io::located_tensor found = model.locate("transformer.h.0.w");
  CHECK(found.file.path() == dir / "model.safetensors");
  CHECK(found.tensor.byte_size == 4);
  check_refusal(file_refusal_of([&] { (void)model.locate("nope"); }), clp::error_kind::invalid_argument, dir.path,
                {"no tensor \"nope\""});
}

TEST_CASE("the weights of a sharded model folder: index plus three shards") {
  temp_dir dir;
  write_u8_tensors(dir / "s-1.safetensors", {"a", "b"});
  write_u8_tensors(dir / "s-2.safetensors", {"c"});
  write_u8_tensors(dir / "s-3.safetensors", {"d", "e"});
  // Keys out of order: shard order follows first appearance in the file, not key order.
  const std::string index = R"({"metadata": {"total_size": 20}, "weight_map": {
      "d": "s-3.safetensors", "a": "s-1.safetensors", "c": "s-2.safetensors",
      "b": "s-1.safetensors", "e": "s-3.safetensors"}})";
  write_file(dir / "model.safetensors.index.json", index);

  SUBCASE("shards open in order of first appearance") {
    const io::model_weights model(dir.path);
    CHECK(model.index_path() == dir / "model.safetensors.index.json");
    CHECK(model.index()["metadata"]["total_size"] == 20);  // kept as read, for the output's index
    CHECK(model.index()["weight_map"].begin().key() == "d");
    REQUIRE(model.shards().size() == 3);
    CHECK(model.shards()[0].path() == dir / "s-3.safetensors");
    CHECK(model.shards()[1].path() == dir / "s-1.safetensors");
    CHECK(model.shards()[2].path() == dir / "s-2.safetensors");
    CHECK(model.tensor_names() == std::vector<std::string>{"d", "e", "a", "b", "c"});
    CHECK(model.locate("c").file.path() == dir / "s-2.safetensors");
  }
  SUBCASE("a missing shard") {
    std::filesystem::remove(dir / "s-2.safetensors");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::io, dir / "s-2.safetensors",
                  {"cannot open"});
  }
  SUBCASE("a tensor the named shard does not hold") {
    write_u8_tensors(dir / "s-2.safetensors", {"x"});
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"tensor \"c\"", "\"s-2.safetensors\"", "does not hold it"});
  }
  SUBCASE("a shard name that leaves the folder") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "../s-1.safetensors"}})");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"not a file name"});
  }
  SUBCASE("a shard name with a line break (found by the fuzzer: the message took two lines)") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "s-1\nsafetensors"}})");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"\"s-1\\nsafetensors\" is not a file name"});
  }
  SUBCASE("a shard name with a NUL, which open() would cut short") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "s-1.safetensors\u0000.x"}})");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"\"s-1.safetensors\\u0000.x\" is not a file name"});
  }
  SUBCASE("an index without weight_map") {
    write_file(dir / "model.safetensors.index.json", R"({"metadata": {}})");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"no weight_map"});
  }
}

TEST_CASE("a model folder without weights, and one whose pytorch_model.bin is no torch checkpoint") {
  temp_dir dir;
  check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed, dir.path,
                {"no model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
                 "pytorch_model.bin.index.json"});
  write_file(dir / "pytorch_model.bin", "");
  check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed, dir / "pytorch_model.bin",
                {"not a zip archive"});
}

TEST_CASE("tokenizer_files lists the files an output model needs") {
  temp_dir dir;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                           "merges.txt", "spiece.model", "config.json", "model.safetensors", "README.md"})
    write_file(dir / name, "{}");
  std::filesystem::create_directory(dir / "sub.model");
  std::vector<std::string> names;
  for (const auto& file : io::tokenizer_files(dir.path)) names.push_back(file.filename().string());
  CHECK(names == std::vector<std::string>{"merges.txt", "special_tokens_map.json", "spiece.model", "tokenizer.json",
                                          "tokenizer_config.json", "vocab.json"});
  check_refusal(file_refusal_of([&] { io::tokenizer_files(dir / "none"); }), file_kind::io, dir / "none",
                {"cannot list"});
}

TEST_CASE("embedding discovery") {
  const std::filesystem::path where = "/models/m";
  using names = std::vector<std::string>;

  SUBCASE("the common families") {
    const names gpt2 = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.attn.c_attn.weight"};
    CHECK(io::find_input_embedding(where, gpt2) == "transformer.wte.weight");
    CHECK_FALSE(io::find_output_embedding(where, gpt2).has_value());  // tied

    const names llama = {"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "lm_head.weight"};
    CHECK(io::find_input_embedding(where, llama) == "model.embed_tokens.weight");
    CHECK(io::find_output_embedding(where, llama) == "lm_head.weight");

    const names neox = {"gpt_neox.embed_in.weight", "gpt_neox.layers.0.attention.dense.weight", "embed_out.weight"};
    CHECK(io::find_input_embedding(where, neox) == "gpt_neox.embed_in.weight");
    CHECK(io::find_output_embedding(where, neox) == "embed_out.weight");

    const names bert = {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight"};
    CHECK(io::find_input_embedding(where, bert) == "bert.embeddings.word_embeddings.weight");

    const names meta = {"tok_embeddings.weight", "layers.0.attention.wq.weight", "output.weight"};
    CHECK(io::find_input_embedding(where, meta) == "tok_embeddings.weight");
    CHECK(io::find_output_embedding(where, meta) == "output.weight");
  }
  SUBCASE("several candidates: the well-known full name wins") {
    const names t5 = {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"};
    CHECK(io::find_input_embedding(where, t5) == "shared.weight");
    const names bart = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                        "model.decoder.embed_tokens.weight"};
    CHECK(io::find_input_embedding(where, bart) == "model.shared.weight");
  }
  SUBCASE("names inside numbered blocks are not heads") {
    const names nested = {"model.embed_tokens.weight", "model.layers.3.attention.output.weight"};
    CHECK_FALSE(io::find_output_embedding(where, nested).has_value());
  }
  SUBCASE("none, or several without a winner") {
    check_refusal(file_refusal_of([&] {
                    io::find_input_embedding(where, {"a.weight", "b.weight"});
                  }),
                  file_kind::malformed, where,
                  {"no input embedding among 2 tensors", "wte.weight", "name it explicitly"});
    check_refusal(file_refusal_of([&] {
                    io::find_input_embedding(where, {"text.embed_tokens.weight", "audio.embed_tokens.weight"});
                  }),
                  file_kind::malformed, where,
                  {"several tensors", "\"text.embed_tokens.weight\"", "\"audio.embed_tokens.weight\""});
  }
  SUBCASE("explicit names override the search") {
    const names odd = {"emb.w", "head.w", "model.embed_tokens.weight"};
    CHECK(io::find_input_embedding(where, odd, "emb.w") == "emb.w");
    CHECK(io::find_output_embedding(where, odd, "head.w") == "head.w");
    check_refusal(file_refusal_of([&] { io::find_input_embedding(where, odd, "missing"); }),
                  clp::error_kind::invalid_argument, where, {"no tensor \"missing\""});
  }
}

TEST_CASE("staging directory") {
  temp_dir dir;
  const auto output = dir / "out";

  SUBCASE("commit moves the staged files into place") {
    io::check_output_available(output, false);
    {
      io::staging_directory staging(output);
      CHECK(staging.path().parent_path() == dir.path);
      CHECK(staging.path().filename().string().rfind(".out.tmp-", 0) == 0);
      struct stat info {};
      REQUIRE(::stat(staging.path().c_str(), &info) == 0);
      CHECK((info.st_mode & 0077) != 0);  // not mkdtemp's private 0700
      write_file(staging.path() / "config.json", "{}");
      staging.commit(false);
    }
    CHECK(read_file(output / "config.json") == "{}");
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);
  }
  SUBCASE("without commit nothing appears and the staging directory goes away") {
    {
      io::staging_directory staging(output.string() + "/");
      write_file(staging.path() / "partial", "x");
    }
    CHECK(std::filesystem::is_empty(dir.path));
  }
  SUBCASE("an existing output is kept without force and replaced with it") {
    std::filesystem::create_directory(output);
    write_file(output / "old", "old");
    check_refusal(file_refusal_of([&] { io::check_output_available(output, false); }),
                  clp::error_kind::invalid_argument, output, {"already exists (use --force to replace it)"});
    io::check_output_available(output, true);
    {
      io::staging_directory staging(output);
      write_file(staging.path() / "new", "new");
      check_refusal(file_refusal_of([&] { staging.commit(false); }), clp::error_kind::invalid_argument, output,
                    {"already exists"});
      CHECK(read_file(output / "old") == "old");
      staging.commit(true);
    }
    CHECK(read_file(output / "new") == "new");
    CHECK_FALSE(std::filesystem::exists(output / "old"));
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);
  }
  SUBCASE("the old output survives a failed run and a failed commit") {
    std::filesystem::create_directory(output);
    write_file(output / "old", "old");
    try {
      io::staging_directory staging(output);
      write_file(staging.path() / "half", "x");
      throw std::runtime_error("the transfer failed");
    } catch (const std::runtime_error&) {
    }
    CHECK(read_file(output / "old") == "old");
    {
      io::staging_directory staging(output);
      std::filesystem::remove(staging.path());  // makes the final rename fail
      check_refusal(file_refusal_of([&] { staging.commit(true); }), file_kind::io, output,
                    {"cannot move the new output into place"});
    }
    CHECK(read_file(output / "old") == "old");
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);
  }
  SUBCASE("a missing parent directory is reported before any work") {
    check_refusal(file_refusal_of([&] { io::check_output_available(dir / "no/out", true); }),
                  clp::error_kind::invalid_argument, dir / "no/out", {"parent directory", "does not exist"});
  }
}

TEST_CASE("JSON errors of every kind name the file: syntax, number overflow, ids at the limits of int64") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto vocab = dir / "vocab.json";
  const auto tokenizer_error = [&](const std::string& text) {
    write_file(tokenizer, text);
    return file_refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  const auto vocab_error = [&](const std::string& text) {
    write_file(vocab, text);
    return file_refusal_of([&] { io::read_vocab_json(vocab); });
  };

  SUBCASE("a number too large for a double (nlohmann's out_of_range.406)") {
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 9e999}}})"), file_kind::malformed,
                  tokenizer, {"not valid JSON", "number overflow", "9e999"});
    check_refusal(vocab_error(R"({"a": -9e999})"), file_kind::malformed, vocab, {"not valid JSON", "number overflow"});
    write_file(dir / "config.json", R"({"vocab_size": 9e999, "n_embd": 4})");
    check_refusal(file_refusal_of([&] { io::read_json_file<nlohmann::ordered_json>(dir / "config.json"); }),
                  file_kind::malformed, dir / "config.json", {"number overflow"});
  }
  SUBCASE("a number overflow in the shard index") {
    write_u8_tensors(dir / "s-1.safetensors", {"a"});
    write_file(dir / "model.safetensors.index.json",
               R"({"metadata": {"total_size": 1e999}, "weight_map": {"a": "s-1.safetensors"}})");
    check_refusal(file_refusal_of([&] { io::model_weights{dir.path}; }), file_kind::malformed,
                  dir / "model.safetensors.index.json", {"not valid JSON", "number overflow"});
  }
  SUBCASE("token id 9223372036854775807: the vocabulary size would overflow") {
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "h": 9223372036854775807}}})"),
                  file_kind::malformed, tokenizer, {"\"h\" has id 9223372036854775807, too large"});
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                                   "added_tokens": [{"id": 9223372036854775807, "content": "<s>"}]})"),
                  file_kind::malformed, tokenizer, {"\"<s>\" has id 9223372036854775807, too large"});
    check_refusal(vocab_error(R"({"z": 9223372036854775807})"), file_kind::malformed, vocab, {"too large"});
    check_refusal(vocab_error(R"({"z": 9223372036854775808})"), file_kind::malformed, vocab, {"not an integer"});
    check_refusal(vocab_error(R"({"z": 18446744073709551616})"), file_kind::malformed, vocab, {"not an integer"});
  }
  SUBCASE("token id 9223372036854775806 is the largest the reader accepts (the program checks rows)") {
    write_file(vocab, R"({"a": 0, "z": 9223372036854775806})");
    const io::token_vocabulary vocabulary = io::read_vocab_json(vocab);
    CHECK(vocabulary.size == INT64_MAX);
    CHECK(vocabulary.ids.at("z") == INT64_MAX - 1);
  }
  SUBCASE("nesting deeper than 1000 levels, in any JSON file") {
    const std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
    write_file(dir / "config.json", R"({"n_embd": 4, "vocab_size": 8, "x": )" + deep + "}");
    check_refusal(file_refusal_of([&] { io::read_json_file<nlohmann::ordered_json>(dir / "config.json"); }),
                  file_kind::malformed, dir / "config.json", {"nested deeper than 1000 levels"});
    check_refusal(vocab_error(R"({"a": 0, "b": )" + deep + "}"), file_kind::malformed, vocab,
                  {"nested deeper than 1000 levels"});
    // 1000 levels are fine (and copy and dump without trouble).
    const std::string limit = std::string(999, '[') + std::string(999, ']');
    write_file(dir / "config.json", R"({"n_embd": 4, "vocab_size": 8, "x": )" + limit + "}");
    nlohmann::ordered_json config = io::read_json_file<nlohmann::ordered_json>(dir / "config.json");
    const nlohmann::ordered_json copy = config;
    config["vocab_size"] = 9;
    CHECK(config.dump().size() > 1998);
    CHECK(copy.dump().size() > 1998);
    check_refusal(vocab_error(R"({"a": 0, "b": )" + limit + "}"), file_kind::malformed, vocab,
                  {"\"b\" has id an array, not an integer"});
  }
}
