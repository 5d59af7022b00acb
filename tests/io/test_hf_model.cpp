// Tests for the model-folder half of the I/O layer (io/hf_model.hpp): weights (single and
// sharded), vocabularies, tokenizer files, embedding discovery, JSON files and the staging
// directory. Each refusal is checked for its kind, the file it names and its one-line message.
#include "io/hf_model.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"

namespace io = clp_transfer::io;
using namespace clp_test;

namespace {

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

}  // namespace

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
  check_refusal(refusal_of([&] { (void)model.locate("nope"); }), clp::error_kind::invalid_argument, dir.path,
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
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::io, dir / "s-2.safetensors",
                  {"cannot open"});
  }
  SUBCASE("a tensor the named shard does not hold") {
    write_u8_tensors(dir / "s-2.safetensors", {"x"});
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"tensor \"c\"", "\"s-2.safetensors\"", "does not hold it"});
  }
  SUBCASE("a shard name that leaves the folder") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "../s-1.safetensors"}})");
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"not a file name"});
  }
  SUBCASE("a shard name with a line break (found by the fuzzer: the message took two lines)") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "s-1\nsafetensors"}})");
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"\"s-1\\nsafetensors\" is not a file name"});
  }
  SUBCASE("a shard name with a NUL, which open() would cut short") {
    write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "s-1.safetensors\u0000.x"}})");
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"\"s-1.safetensors\\u0000.x\" is not a file name"});
  }
  SUBCASE("an index without weight_map") {
    write_file(dir / "model.safetensors.index.json", R"({"metadata": {}})");
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"no weight_map"});
  }
}

TEST_CASE("a model folder without weights, and one whose pytorch_model.bin is no torch checkpoint") {
  temp_dir dir;
  check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file, dir.path,
                {"no model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
                 "pytorch_model.bin.index.json"});
  write_file(dir / "pytorch_model.bin", "");
  check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                dir / "pytorch_model.bin", {"not a zip archive"});
}

TEST_CASE("vocabulary of a BPE tokenizer.json with added_tokens") {
  temp_dir dir;
  write_file(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 0, "content": "<|endoftext|>", "special": true},
                     {"id": 5, "content": "<pad>", "special": true}],
    "model": {"type": "BPE", "vocab": {"<|endoftext|>": 0, "a": 1, "b": 2, "ab": 3, "\u0120a": 4},
              "merges": ["a b"]}})");
  const io::token_vocabulary vocabulary = io::read_tokenizer_json(dir / "tokenizer.json");
  CHECK(vocabulary.size == 6);
  CHECK(vocabulary.ids.size() == 6);
  CHECK(vocabulary.ids.at("<|endoftext|>") == 0);
  CHECK(vocabulary.ids.at("\xc4\xa0"
                          "a") == 4);
  CHECK(vocabulary.ids.at("<pad>") == 5);
}

TEST_CASE("vocabulary of a Unigram tokenizer.json") {
  temp_dir dir;
  write_file(dir / "tokenizer.json", R"({
    "added_tokens": [{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}],
    "model": {"type": "Unigram", "unk_id": 0,
              "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<0x0A>", 0.0],
                        ["\u2581the", -2.5], ["s", -3.1]]}})");
  const io::token_vocabulary vocabulary = io::read_tokenizer_json(dir / "tokenizer.json");
  CHECK(vocabulary.size == 6);
  CHECK(vocabulary.ids.at("<unk>") == 0);
  CHECK(vocabulary.ids.at("</s>") == 2);
  CHECK(vocabulary.ids.at("<0x0A>") == 3);
  CHECK(vocabulary.ids.at("\xe2\x96\x81the") == 4);
}

TEST_CASE("vocabulary of a vocab.json, and which file read_vocabulary prefers") {
  temp_dir dir;
  write_file(dir / "vocab.json", R"({"x": 0, "y": 2})");
  io::token_vocabulary vocabulary = io::read_vocabulary(dir.path);
  CHECK(vocabulary.size == 3);  // ids have a gap: rows up to the highest id
  CHECK(vocabulary.ids.size() == 2);

  write_file(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"q": 0}}})");
  vocabulary = io::read_vocabulary(dir.path);
  CHECK(vocabulary.ids.count("q") == 1);

  temp_dir empty;
  check_refusal(refusal_of([&] { io::read_vocabulary(empty.path); }), clp::error_kind::malformed_file, empty.path,
                {"no tokenizer.json, vocab.json, SentencePiece model"});
}

TEST_CASE("vocabulary errors name the file and the culprits") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto error_for = [&](const std::string& text) {
    write_file(tokenizer, text);
    return refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  check_refusal(error_for("{not json"), clp::error_kind::malformed_file, tokenizer, {"not valid JSON"});
  check_refusal(error_for(R"({"model": {"type": "BPE"}})"), clp::error_kind::malformed_file, tokenizer,
                {"no vocabulary"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {}}})"), clp::error_kind::malformed_file, tokenizer,
                {"no vocabulary"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 1}}})"),
                clp::error_kind::malformed_file, tokenizer, {"tokens \"b\" and \"c\" both have id 1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": -1}}})"), clp::error_kind::malformed_file,
                tokenizer, {"\"a\" has negative id -1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": "0"}}})"), clp::error_kind::malformed_file,
                tokenizer, {"not an integer"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}},
                           "added_tokens": [{"id": 0, "content": "b"}]})"),
                clp::error_kind::malformed_file, tokenizer, {"added token \"b\" has id 0 but already has id 1"});
  check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                           "added_tokens": [{"id": 0, "content": "<x>"}]})"),
                clp::error_kind::malformed_file, tokenizer, {"\"a\" and \"<x>\" both have id 0"});
  check_refusal(error_for(R"({"model": {"type": "Unigram", "vocab": [["a", 0], ["a", 0]]}})"),
                clp::error_kind::malformed_file, tokenizer, {"token \"a\" has id 1 but already has id 0"});
  check_refusal(error_for(R"({"model": {"type": "Unigram", "vocab": {"a": 0}}})"), clp::error_kind::malformed_file,
                tokenizer, {"not an array"});
  check_refusal(error_for(R"({"model": {"type": "Magic", "vocab": {"a": 0}}})"), clp::error_kind::malformed_file,
                tokenizer, {"unsupported", "\"Magic\""});

  write_file(dir / "vocab.json", R"({"\n": 3, "z": 3})");
  check_refusal(refusal_of([&] { io::read_vocab_json(dir / "vocab.json"); }), clp::error_kind::malformed_file,
                dir / "vocab.json", {"tokens \"\\n\" and \"z\" both have id 3"});
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
  check_refusal(refusal_of([&] { io::tokenizer_files(dir / "none"); }), clp::error_kind::io, dir / "none",
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
    check_refusal(refusal_of([&] {
                    io::find_input_embedding(where, {"a.weight", "b.weight"});
                  }),
                  clp::error_kind::malformed_file, where,
                  {"no input embedding among 2 tensors", "wte.weight", "name it explicitly"});
    check_refusal(refusal_of([&] {
                    io::find_input_embedding(where, {"text.embed_tokens.weight", "audio.embed_tokens.weight"});
                  }),
                  clp::error_kind::malformed_file, where,
                  {"several tensors", "\"text.embed_tokens.weight\"", "\"audio.embed_tokens.weight\""});
  }
  SUBCASE("explicit names override the search") {
    const names odd = {"emb.w", "head.w", "model.embed_tokens.weight"};
    CHECK(io::find_input_embedding(where, odd, "emb.w") == "emb.w");
    CHECK(io::find_output_embedding(where, odd, "head.w") == "head.w");
    check_refusal(refusal_of([&] { io::find_input_embedding(where, odd, "missing"); }),
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
    check_refusal(refusal_of([&] { io::check_output_available(output, false); }), clp::error_kind::invalid_argument,
                  output, {"already exists (use --force to replace it)"});
    io::check_output_available(output, true);
    {
      io::staging_directory staging(output);
      write_file(staging.path() / "new", "new");
      check_refusal(refusal_of([&] { staging.commit(false); }), clp::error_kind::invalid_argument, output,
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
      check_refusal(refusal_of([&] { staging.commit(true); }), clp::error_kind::io, output,
                    {"cannot move the new output into place"});
    }
    CHECK(read_file(output / "old") == "old");
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);
  }
  SUBCASE("a missing parent directory is reported before any work") {
    check_refusal(refusal_of([&] { io::check_output_available(dir / "no/out", true); }),
                  clp::error_kind::invalid_argument, dir / "no/out", {"parent directory", "does not exist"});
  }
}

TEST_CASE("JSON errors of every kind name the file: syntax, number overflow, ids at the limits of int64") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto vocab = dir / "vocab.json";
  const auto tokenizer_error = [&](const std::string& text) {
    write_file(tokenizer, text);
    return refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  const auto vocab_error = [&](const std::string& text) {
    write_file(vocab, text);
    return refusal_of([&] { io::read_vocab_json(vocab); });
  };

  SUBCASE("a number too large for a double (nlohmann's out_of_range.406)") {
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 9e999}}})"),
                  clp::error_kind::malformed_file, tokenizer, {"not valid JSON", "number overflow", "9e999"});
    check_refusal(vocab_error(R"({"a": -9e999})"), clp::error_kind::malformed_file, vocab,
                  {"not valid JSON", "number overflow"});
    write_file(dir / "config.json", R"({"vocab_size": 9e999, "n_embd": 4})");
    check_refusal(refusal_of([&] { io::read_json_file<nlohmann::ordered_json>(dir / "config.json"); }),
                  clp::error_kind::malformed_file, dir / "config.json", {"number overflow"});
  }
  SUBCASE("a number overflow in the shard index") {
    write_u8_tensors(dir / "s-1.safetensors", {"a"});
    write_file(dir / "model.safetensors.index.json",
               R"({"metadata": {"total_size": 1e999}, "weight_map": {"a": "s-1.safetensors"}})");
    check_refusal(refusal_of([&] { io::model_weights{dir.path}; }), clp::error_kind::malformed_file,
                  dir / "model.safetensors.index.json", {"not valid JSON", "number overflow"});
  }
  SUBCASE("token id 9223372036854775807: the vocabulary size would overflow") {
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "h": 9223372036854775807}}})"),
                  clp::error_kind::malformed_file, tokenizer, {"\"h\" has id 9223372036854775807, too large"});
    check_refusal(tokenizer_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                                   "added_tokens": [{"id": 9223372036854775807, "content": "<s>"}]})"),
                  clp::error_kind::malformed_file, tokenizer, {"\"<s>\" has id 9223372036854775807, too large"});
    check_refusal(vocab_error(R"({"z": 9223372036854775807})"), clp::error_kind::malformed_file, vocab, {"too large"});
    check_refusal(vocab_error(R"({"z": 9223372036854775808})"), clp::error_kind::malformed_file, vocab,
                  {"not an integer"});
    check_refusal(vocab_error(R"({"z": 18446744073709551616})"), clp::error_kind::malformed_file, vocab,
                  {"not an integer"});
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
    check_refusal(refusal_of([&] { io::read_json_file<nlohmann::ordered_json>(dir / "config.json"); }),
                  clp::error_kind::malformed_file, dir / "config.json", {"nested deeper than 1000 levels"});
    check_refusal(vocab_error(R"({"a": 0, "b": )" + deep + "}"), clp::error_kind::malformed_file, vocab,
                  {"nested deeper than 1000 levels"});
    // 1000 levels are fine (and copy and dump without trouble).
    const std::string limit = std::string(999, '[') + std::string(999, ']');
    write_file(dir / "config.json", R"({"n_embd": 4, "vocab_size": 8, "x": )" + limit + "}");
    nlohmann::ordered_json config = io::read_json_file<nlohmann::ordered_json>(dir / "config.json");
    const nlohmann::ordered_json copy = config;
    config["vocab_size"] = 9;
    CHECK(config.dump().size() > 1998);
    CHECK(copy.dump().size() > 1998);
    check_refusal(vocab_error(R"({"a": 0, "b": )" + limit + "}"), clp::error_kind::malformed_file, vocab,
                  {"\"b\" has id an array, not an integer"});
  }
}

namespace {

/// What a whole parse of a tokenizer.json says read_tokenizer_json_contents should give: the
/// declarations are the document less model.vocab, model.merges and added_tokens; the
/// vocabulary is model.vocab (object: token -> id; array: id = position) plus added_tokens.
struct whole_parse {
  std::map<std::string, std::int64_t> ids;
  nlohmann::json declarations;

  explicit whole_parse(const std::string& text) : declarations(nlohmann::json::parse(text)) {
    nlohmann::json& model = declarations["model"];
    if (model["vocab"].is_array())
      for (std::size_t i = 0; i < model["vocab"].size(); ++i)
        ids[model["vocab"][i][0].get<std::string>()] = std::int64_t(i);
    else
      for (const auto& [token, id] : model["vocab"].items()) ids[token] = id.get<std::int64_t>();
    for (const nlohmann::json& added : declarations.value("added_tokens", nlohmann::json::array()))
      ids[added["content"].get<std::string>()] = added["id"].get<std::int64_t>();
    model.erase("vocab");
    model.erase("merges");
    declarations.erase("added_tokens");
  }
};

}  // namespace

TEST_CASE("tokenizer.json in one pass: the vocabulary and declarations a whole parse finds") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const std::vector<std::string> documents = {
      // Hugging Face's key order; merges as strings; a post_processor whose own "vocab" and
      // "merges" are not the model's and stay.
      R"({"version": "1.0", "truncation": null, "added_tokens": [{"id": 3, "content": "<s>", "special": true},
          {"id": 4, "content": "<pad>"}], "normalizer": {"type": "NFC"},
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}},
                                                                  {"type": "ByteLevel", "add_prefix_space": false}]},
          "post_processor": {"type": "TemplateProcessing", "vocab": [1, 2], "merges": {"x": [true, null, -1.5]}},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "dropout": null, "byte_fallback": false, "vocab": {"a": 0, "b": 1, "<s>": 3,
                    "\u0120a\u00e9": 2}, "merges": [["a", "b"], ["\u0120", "a"]], "continuing_subword_prefix": ""}})",
      // The model's keys in another order, model.type after model.vocab; a Unigram vocabulary
      // with extra fields in an entry; merges that are an object (skipped whatever they are).
      R"({"model": {"vocab": [["<unk>", 0.0], ["\u2581the", -2.5, "extra", [1]], ["s", -3]], "unk_id": 0,
                    "merges": {"deep": [[[]]]}, "type": "Unigram"},
          "decoder": {"type": "Metaspace", "replacement": "\u2581"}, "added_tokens": []})",
      // WordPiece, no added_tokens, nothing else.
      R"({"model": {"type": "WordPiece", "continuing_subword_prefix": "##", "vocab": {"[UNK]": 0, "##s": 1}}})"};
  for (const std::string& text : documents) {
    INFO(text);
    write_file(tokenizer, text);
    const whole_parse expected(text);
    const io::tokenizer_json_contents contents = io::read_tokenizer_json_contents(tokenizer);
    CHECK(std::map<std::string, std::int64_t>(contents.vocabulary.ids.begin(), contents.vocabulary.ids.end()) ==
          expected.ids);
    std::int64_t highest = 0;
    for (const auto& entry : expected.ids) highest = std::max(highest, entry.second);
    CHECK(contents.vocabulary.size == highest + 1);
    CHECK(contents.declarations == expected.declarations);
    CHECK(io::read_tokenizer_json(tokenizer).ids == contents.vocabulary.ids);
    CHECK(io::read_tokenizer_declarations(tokenizer) == expected.declarations);
  }
}

TEST_CASE("tokenizer.json in one pass: what the vocabulary holds is refused as the whole parse refused it") {
  temp_dir dir;
  const auto tokenizer = dir / "tokenizer.json";
  const auto error_for = [&](const std::string& text) {
    write_file(tokenizer, text);
    return refusal_of([&] { io::read_tokenizer_json(tokenizer); });
  };
  const auto bpe = [](const std::string& vocab) { return R"({"model": {"type": "BPE", "vocab": )" + vocab + "}}"; };
  const auto unigram = [](const std::string& vocab) {
    return R"({"model": {"type": "Unigram", "vocab": )" + vocab + "}}";
  };

  SUBCASE("ids that are not integers, whatever their JSON type") {
    check_refusal(error_for(bpe(R"({"a": 0, "b": []})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id [], not an integer"});
    check_refusal(error_for(bpe(R"({"a": 0, "b": [0]})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id an array, not an integer"});
    check_refusal(error_for(bpe(R"({"b": {}, "a": 0})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id {}, not an integer"});
    check_refusal(error_for(bpe(R"({"b": {"x": 1}})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id an object, not an integer"});
    check_refusal(error_for(bpe(R"({"b": 1.5})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id 1.5, not an integer"});
    check_refusal(error_for(bpe(R"({"b": null})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id null, not an integer"});
    check_refusal(error_for(bpe(R"({"b": true})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"b\" has id true, not an integer"});
  }
  SUBCASE("Unigram entries that are not [piece, score] pairs, by position") {
    for (const char* bad : {"5", "[]", "{\"p\": 1}", "[1, \"b\"]", "[[\"b\"], 0]", "[{}, 0]", "null"})
      check_refusal(error_for(unigram(std::string(R"([["a", 0], )") + bad + R"(, ["c", 0]])")),
                    clp::error_kind::malformed_file, tokenizer, {"model.vocab[1] is not a [piece, score] pair"});
  }
  SUBCASE("a token given twice in model.vocab (a whole parse kept the last silently)") {
    check_refusal(error_for(bpe(R"({"a": 0, "b": 1, "a": 2})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"a\" has id 2 but already has id 0"});
    check_refusal(error_for(bpe(R"({"a": 0, "a": 0})")), clp::error_kind::malformed_file, tokenizer,
                  {"token \"a\" has id 0 but already has id 0"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "vocab": {"b": 0}}})"),
                  clp::error_kind::malformed_file, tokenizer, {"key \"vocab\" appears twice in model"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "model": {"type": "BPE"}})"),
                  clp::error_kind::malformed_file, tokenizer, {"key \"model\" appears twice"});
  }
  SUBCASE("the order of refusals: syntax first, then the model's type and shape, then the entries") {
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": -1}}, "x": })"),
                  clp::error_kind::malformed_file, tokenizer, {"not valid JSON"});
    check_refusal(error_for(R"({"model": {"vocab": {"a": -1}, "type": "Magic"}})"), clp::error_kind::malformed_file,
                  tokenizer, {"unsupported tokenizer model type \"Magic\""});
    check_refusal(error_for(unigram(R"({"a": -1})")), clp::error_kind::malformed_file, tokenizer,
                  {"model.vocab of a Unigram model is not an array"});
    check_refusal(error_for(bpe(R"([["a", 0]])")), clp::error_kind::malformed_file, tokenizer,
                  {"model.vocab is not an object of token -> id"});
    check_refusal(error_for(bpe("null")), clp::error_kind::malformed_file, tokenizer,
                  {"model.vocab is not an object of token -> id"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 0}]})"),
                  clp::error_kind::malformed_file, tokenizer,
                  {"added_tokens holds an entry without \"id\" and \"content\""});
  }
  SUBCASE("nesting deeper than 1000 levels, in the vocabulary, the merges or the declarations") {
    const std::string deep = std::string(1001, '[') + std::string(1001, ']');
    check_refusal(error_for(bpe(R"({"a": )" + deep + "}")), clp::error_kind::malformed_file, tokenizer,
                  {"nested deeper than 1000 levels"});
    check_refusal(error_for(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": )" + deep + "}}"),
                  clp::error_kind::malformed_file, tokenizer, {"nested deeper than 1000 levels"});
    check_refusal(error_for(R"({"truncation": )" + deep + R"(, "model": {"type": "BPE", "vocab": {"a": 0}}})"),
                  clp::error_kind::malformed_file, tokenizer, {"nested deeper than 1000 levels"});
    // 1000 levels in all are read (the object holding "x" is the first).
    const std::string limit = std::string(999, '[') + std::string(999, ']');
    write_file(tokenizer, R"({"x": )" + limit + R"(, "model": {"type": "BPE", "vocab": {"a": 0}}})");
    CHECK(io::read_tokenizer_json_contents(tokenizer).declarations["x"].is_array());
  }
  SUBCASE("ids far apart: two tokens with one id are found however far it is from the others") {
    std::string vocab = R"({"x": 5000)";
    for (int id = 0; id < 1000; ++id) vocab += ", \"t" + std::to_string(id) + "\": " + std::to_string(id);
    check_refusal(error_for(bpe(vocab + R"(, "y": 5000})")), clp::error_kind::malformed_file, tokenizer,
                  {"tokens \"x\" and \"y\" both have id 5000"});
    write_file(tokenizer, bpe(vocab + R"(, "y": 9223372036854775806})"));
    const io::token_vocabulary vocabulary = io::read_tokenizer_json(tokenizer);
    CHECK(vocabulary.ids.size() == 1002);
    CHECK(vocabulary.size == INT64_MAX);
  }
}

TEST_CASE("read_tokenizer_declarations reads any JSON, without checking a vocabulary") {
  temp_dir dir;
  const auto file = dir / "tokenizer.json";
  write_file(file, R"({"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": -1, "a": []}},
                      "added_tokens": 7})");
  CHECK(io::read_tokenizer_declarations(file) == nlohmann::json::parse(R"({"decoder": {"type": "ByteLevel"},
                                                                         "model": {"type": "BPE"}})"));
  write_file(file, R"([{"model": {"vocab": 1}}, 2])");
  CHECK(io::read_tokenizer_declarations(file) == nlohmann::json::parse(R"([{"model": {"vocab": 1}}, 2])"));
  write_file(file, R"({"model": {"merges": 9e999}})");
  check_refusal(refusal_of([&] { io::read_tokenizer_declarations(file); }), clp::error_kind::malformed_file, file,
                {"not valid JSON", "number overflow"});
  check_refusal(refusal_of([&] { io::read_tokenizer_declarations(dir / "absent.json"); }), clp::error_kind::io,
                dir / "absent.json", {"cannot open"});
}
