// Issue 11's hardened inputs, end to end: JSON numbers that overflow a double, ids and sizes at
// the limits of int64, and safetensors files the format's reference validate() refuses (gaps,
// bytes after the last tensor, repeated names, a header that is not an object, metadata that is
// not string -> string, a header over 100 MB). Each is refused with exit status 1 and one line
// naming the file, leaves nothing beside the output path, and leaves an existing output as it
// was even with --force.
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model_fixtures.hpp"
#include "harness.hpp"
#include "refusals.hpp"

using namespace program_test;

TEST_CASE("refused: a safetensors file the reference validate() refuses") {
  const workspace ws = gpt2_workspace();
  const fs::path file = ws.pair.source.folder / "model.safetensors";
  const clp_test::safetensors_parts parts = split(file);

  SUBCASE("bytes after the last tensor") {
    join(file, parts.header, parts.data + std::string(16, '\0'));
    expect_refusal(ws, file, {"belong to no tensor", "16 bytes after the last tensor"});
  }
  SUBCASE("a gap between two tensors") {
    // The last tensor moved 4 bytes on, over 4 new bytes: same size, one gap before it.
    auto header = nlohmann::ordered_json::parse(parts.header);
    std::string last;
    std::uint64_t last_end = 0;
    for (const auto& [name, entry] : header.items())
      if (name != "__metadata__" && entry["data_offsets"][1].get<std::uint64_t>() > last_end) {
        last = name;
        last_end = entry["data_offsets"][1].get<std::uint64_t>();
      }
    const std::uint64_t begin = header[last]["data_offsets"][0];
    header[last]["data_offsets"] = {begin + 4, last_end + 4};
    join(file, header.dump(), parts.data.substr(0, begin) + "gap!" + parts.data.substr(begin));
    expect_refusal(
        ws, file,
        {"data bytes [" + std::to_string(begin) + ", " + std::to_string(begin + 4) + ") belong to no tensor", last});
  }
  SUBCASE("a tensor name listed twice") {
    join(file, replaced(parts.header, "\"transformer.ln_f.bias\"", "\"transformer.wpe.weight\""), parts.data);
    expect_refusal(ws, file, {"tensor name \"transformer.wpe.weight\" appears twice"});
  }
  SUBCASE("a header that is not a JSON object") {
    join(file, "[" + parts.header + "]", parts.data);
    expect_refusal(ws, file, {"header is not a JSON object"});
  }
  SUBCASE("__metadata__ that is not string -> string") {
    join(file, replaced(parts.header, "\"format\":\"pt\"", "\"format\":[\"pt\"]"), parts.data);
    expect_refusal(ws, file, {"__metadata__ value of \"format\" is not a string"});
  }
  SUBCASE("a number too large for a double in the header") {
    join(file, replaced(parts.header, "{", "{\"x\":9e999,"), parts.data);
    expect_refusal(ws, file, {"header is not valid JSON", "number overflow"});
  }
  SUBCASE("a header length over the 100 MB cap") {
    join(file, parts.header, parts.data);
    std::string bytes = read_file(file);
    const std::uint64_t length = 100'000'001;
    bytes.replace(0, 8, clp_test::length_prefix(length));
    write_file(file, bytes);
    fs::resize_file(file, 8 + length);  // sparse: costs no disk
    expect_refusal(ws, file, {"exceeds the 100 MB limit"});
  }
}

TEST_CASE("refused: JSON numbers that overflow a double name their file") {
  SUBCASE("tokenizer.json") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.helper.folder / "tokenizer.json";
    write_file(file, replaced(read_file(file), "{", "{\"truncation\": 9e999, "));
    expect_refusal(ws, file, {"not valid JSON", "number overflow"});
  }
  SUBCASE("config.json") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "config.json";
    write_file(file, replaced(read_file(file), "{", "{\"layer_norm_epsilon\": 1e-400, \"n_ctx\": 9e999, "));
    expect_refusal(ws, file, {"not valid JSON", "number overflow"});
  }
  SUBCASE("model.safetensors.index.json") {
    const workspace ws = llama_workspace();
    const fs::path file = ws.pair.source.folder / "model.safetensors.index.json";
    auto index = nlohmann::ordered_json::parse(read_file(file));
    index["metadata"]["total_size"] = 0;
    write_file(file, replaced(index.dump(), "\"total_size\":0", "\"total_size\":-9e999"));
    expect_refusal(ws, file, {"not valid JSON", "number overflow"});
  }
}

TEST_CASE("refused: JSON nested 200,000 deep (a copy of it used to overflow the stack)") {
  const workspace ws = gpt2_workspace();
  const fs::path file = ws.pair.source.folder / "config.json";
  write_file(file, replaced(read_file(file), "{",
                            "{\"deep\": " + std::string(200'000, '[') + std::string(200'000, ']') + ", "));
  expect_refusal(ws, file, {"nested deeper than 1000 levels"});
}

TEST_CASE("refused: ids and sizes at the limits of int64") {
  SUBCASE("a token id of 9223372036854775807") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "tokenizer.json";
    auto json = bpe_tokenizer_json(ws.pair.source.tokens);
    json["model"]["vocab"]["Ġextra"] = INT64_MAX;
    write_json(file, json);
    expect_refusal(ws, file, {"\"Ġextra\" has id 9223372036854775807, too large"});

    // similarity used to wrap the vocabulary size round and report "7 of 7 tokens".
    const program_result result =
        run_program({"similarity", ws.pair.source.folder.string(), ws.pair.source.folder.string()});
    check_error_line(result, file.string(), {"too large"});
  }
  SUBCASE("a token id of 9223372036854775806 is past the embedding's rows") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.helper.folder / "tokenizer.json";
    auto json = bpe_tokenizer_json(ws.pair.helper.tokens);
    json["added_tokens"].push_back({{"id", INT64_MAX - 1}, {"content", "<big>"}, {"special", true}});
    write_json(file, json);
    expect_refusal(ws, file, {"\"<big>\" has id 9223372036854775806, past the"});
  }
  SUBCASE("a hidden size of 9223372036854775807") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "config.json";
    auto config = ws.pair.source.config;
    config["n_embd"] = INT64_MAX;
    write_json(file, config);
    expect_refusal(ws, file, {"hidden size 9223372036854775807 does not fit"});
  }
  SUBCASE("a dimension of 9223372036854775807") {
    const workspace ws = gpt2_workspace();
    const fs::path file = ws.pair.source.folder / "model.safetensors";
    const clp_test::safetensors_parts parts = split(file);
    auto header = nlohmann::ordered_json::parse(parts.header);
    header["transformer.wpe.weight"]["shape"] = {INT64_MAX, 64};
    join(file, header.dump(), parts.data);
    expect_refusal(ws, file, {"transformer.wpe.weight", "too many elements"});
  }
}
