// Every refusal and warning the program can print, by the id docs/troubleshooting.md lists it
// under: each is driven here by running the built program on a bad input (refused, warned in
// refusals.hpp), and must be one line that names the file, folder or option at fault and shows
// no C++ name and no code of a library. tests/docs/check_troubleshooting.sh compares these ids
// with the page's, so a refusal added here without an entry there fails, and the reverse.
// What each refusal says in detail is checked by the tests of its own module or command.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "model_fixtures.hpp"
#include "refusals.hpp"
#include "support/skip.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_error_messages {

using namespace program_test;

namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";
const fs::path shipped = fs::path(CLP_EXAMPLE_MODELS_DIR);

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// `transfer` of `ws` with `extra`, quietly.
program_result transfer(const workspace& ws, const std::vector<std::string>& extra = {}) {
  return run_program(ws.transfer(with(extra, {"--quiet"})));
}

/// `evaluate` of `ws`'s pair with `extra`, quietly.
program_result evaluate(const workspace& ws, const std::vector<std::string>& extra = {}) {
  return run_program(with(
      {"evaluate", "--source", ws.pair.source.folder.string(), "--helper", ws.pair.helper.folder.string(), "--quiet"},
      extra));
}

/// The JSON of `file`, edited by `edit`, written back.
template <class Edit>
void edit_json(const fs::path& file, Edit edit) {
  auto json = nlohmann::ordered_json::parse(read_file(file));
  edit(json);
  write_json(file, json);
}

/// Appends an F32 tensor of zeros of `shape` to safetensors `file`, after the last one.
void append_tensor(const fs::path& file, const std::string& name, const std::vector<std::int64_t>& shape) {
  const clp_test::safetensors_parts parts = split(file);
  auto header = nlohmann::ordered_json::parse(parts.header);
  std::uint64_t bytes = 4;
  for (const std::int64_t d : shape) bytes *= std::uint64_t(d);
  header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {parts.data.size(), parts.data.size() + bytes}}};
  join(file, header.dump(), parts.data + std::string(std::size_t(bytes), '\0'));
}

/// Sets column `column` of 2-D F32 tensor `name` of `file` to zero in every row.
void zero_column(const fs::path& file, const std::string& name, std::int64_t rows, std::int64_t cols,
                 std::int64_t column) {
  std::uint64_t offset = 0;
  {
    const clp_transfer::io::safetensors_file opened(file);
    offset = opened.at(name).offset;
  }
  std::string bytes = read_file(file);
  for (std::int64_t r = 0; r < rows; ++r)
    std::memset(&bytes[std::size_t(offset) + std::size_t(r * cols + column) * 4], 0, 4);
  write_file(file, bytes);
}

/// The helper with only its weights and config (no tokenizer file), the rest of the pair as made.
void remove_helper_tokenizers(const workspace& ws) {
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt"}) fs::remove(ws.pair.helper.folder / name);
}

/// A run of the program on a broken file, and that file.
struct broken_run {
  program_result result;
  std::string file;
};

/// `transfer` of a fresh GPT-2 pair whose file `name` of the `source` (else helper) folder
/// `edit` broke.
template <class Edit>
broken_run transfer_with_broken(const char* name, Edit edit, bool source = true) {
  const workspace ws = gpt2_workspace();
  const fs::path file = (source ? ws.pair.source.folder : ws.pair.helper.folder) / name;
  edit(file);
  return {transfer(ws), file.string()};
}

/// A source token the helper lacks.
std::string source_only_token(const workspace& ws) {
  for (const std::string& token : ws.pair.source.tokens)
    if (std::find(ws.pair.helper.tokens.begin(), ws.pair.helper.tokens.end(), token) == ws.pair.helper.tokens.end())
      return token;
  FAIL("every source token is the helper's");
  return {};
}

}  // namespace

TEST_CASE("error messages: the paths a command is given, in every command") {
  const workspace ws = gpt2_workspace();
  const std::string helper = ws.pair.helper.folder.string();
  const std::string missing = (ws.dir / "no-such-model").string();
  refused("missing-path",
          run_program({"transfer", "--source", missing, "--helper", helper, "--output", ws.output.string(), "--quiet"}),
          missing);
  refused("missing-path", run_program({"evaluate", "--source", missing, "--helper", helper, "--quiet"}), missing);
  refused("missing-path", run_program({"overlap", missing, helper}), missing);
  refused("missing-path", run_program({"similarity", helper, missing}), missing);
  refused("missing-path", run_program({"verify", missing}), missing, 2);

  const std::string file = (ws.pair.source.folder / "config.json").string();
  refused("not-a-folder",
          run_program({"transfer", "--source", file, "--helper", helper, "--output", ws.output.string(), "--quiet"}),
          file);
  refused("not-a-folder", run_program({"evaluate", "--source", helper, "--helper", file, "--quiet"}), file);
  refused("not-a-folder", run_program({"similarity", file, helper}), file);
  refused("not-a-folder", run_program({"verify", file}), file, 2);

  // extend says it in the same words as the others (the line past the "error: " is the same).
  const auto message = [](const program_result& result) { return result.err.substr(result.err.find(": ") + 2); };
  const program_result transfer_missing = run_program(
      {"transfer", "--source", missing, "--helper", helper, "--output", ws.output.string(), "--quiet"});
  const program_result extend_missing =
      run_program({"extend", "--source", missing, "--helper", helper, "--output", ws.output.string(), "--quiet"});
  refused("missing-path", extend_missing, missing);
  CHECK(message(extend_missing) == message(transfer_missing));
  CHECK(message(run_program({"similarity", missing, helper})) == message(transfer_missing));
  const program_result extend_file =
      run_program({"extend", "--source", file, "--helper", helper, "--output", ws.output.string(), "--quiet"});
  refused("not-a-folder", extend_file, file);
  CHECK(message(extend_file) == message(run_program({"similarity", file, helper})));
  refused("not-a-folder",
          run_program({"extend", "--source", (shipped / "en-large").string(), "--helper", file, "--output",
                       ws.output.string(), "--quiet"}),
          file);

  fs::remove(ws.pair.helper.folder / "config.json");
  refused("cannot-open", transfer(ws), (ws.pair.helper.folder / "config.json").string());
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("error messages: config.json") {
  const auto broken = [](auto edit) { return transfer_with_broken("config.json", edit); };
  {
    const auto [result, file] = broken([](const fs::path& f) { write_file(f, "{\n  \"n_embd\": 64,\n"); });
    refused("json-invalid", result, file);
  }
  {
    const auto [result, file] =
        broken([](const fs::path& f) { write_file(f, replaced(read_file(f), "{", "{\"n_ctx\": 9e999, ")); });
    refused("json-invalid", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      write_file(f,
                 replaced(read_file(f), "{", "{\"deep\": " + std::string(2000, '[') + std::string(2000, ']') + ", "));
    });
    refused("json-too-deep", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { write_file(f, "[]"); });
    refused("json-not-object", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { edit_json(f, [](auto& c) { c.erase("n_embd"); }); });
    refused("config-no-hidden-size", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { edit_json(f, [](auto& c) { c["n_embd"] = "64"; }); });
    refused("config-bad-value", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { edit_json(f, [](auto& c) { c["vocab_size"] = -1; }); });
    refused("config-bad-value", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { edit_json(f, [](auto& c) { c["n_embd"] = 65; }); });
    refused("hidden-size-mismatch", result, file);
  }
}

TEST_CASE("error messages: weight files") {
  const auto broken = [](auto edit) { return transfer_with_broken("model.safetensors", edit); };
  {
    const workspace ws = gpt2_workspace();
    fs::remove(ws.pair.source.folder / "model.safetensors");
    refused("no-weights", transfer(ws), ws.pair.source.folder.string());
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      const std::string bytes = read_file(f);
      write_file(f, bytes.substr(0, bytes.size() - 100));
    });
    refused("truncated", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      const std::string bytes = read_file(f);
      write_file(f, clp_test::length_prefix(bytes.size()) + bytes.substr(8));
    });
    refused("truncated", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { write_file(f, ""); });
    refused("safetensors-too-short", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      std::string bytes = read_file(f);
      bytes.replace(8, 12, "{not json!!!");
      write_file(f, bytes);
    });
    refused("safetensors-header", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) { join(f, "[" + split(f).header + "]", split(f).data); });
    refused("safetensors-header", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      edit_header(f, [](nlohmann::ordered_json& h) { h["transformer.ln_f.bias"]["dtype"] = "X99"; });
    });
    refused("safetensors-tensor", result, file);
  }
  {
    const auto [result, file] = broken([](const fs::path& f) {
      edit_header(f, [](nlohmann::ordered_json& h) { h["transformer.wpe.weight"]["shape"] = {31, 64}; });
    });
    refused("safetensors-tensor", result, file);
  }
  {
    const auto [result, file] =
        broken([](const fs::path& f) { join(f, split(f).header, split(f).data + std::string(16, '\0')); });
    refused("safetensors-layout", result, file);
  }
  {
    const workspace ws = llama_workspace();
    const fs::path index = ws.pair.source.folder / "model.safetensors.index.json";
    write_file(index, R"({"metadata": {}})");
    refused("weight-index", transfer(ws), index.string());
  }
  // A helper whose weights are the pytorch_model.bin `fixture` of tests/data/checkpoint_formats.
  const auto torch_helper = [](const char* fixture) {
    return transfer_with_broken(
        "pytorch_model.bin",
        [fixture](const fs::path& f) {
          fs::remove(f.parent_path() / "model.safetensors");
          if (std::string(fixture).empty())
            write_file(f, std::string(100, 'x'));
          else
            fs::copy_file(formats / "refusals" / fixture, f);
        },
        false);
  };
  {
    const auto [result, file] = torch_helper("legacy.bin");
    refused("torch-legacy", result, file);
  }
  {
    const auto [result, file] = torch_helper("os_system.bin");
    refused("torch-global", result, file);
  }
  {
    const auto [result, file] = torch_helper("transposed.bin");
    refused("torch-tensor", result, file);
  }
  {
    const auto [result, file] = torch_helper("view.bin");
    refused("torch-tensor", result, file);
  }
  {
    const auto [result, file] = torch_helper("");
    refused("torch-archive", result, file);
  }
}

TEST_CASE("error messages: the embedding and the tensors named") {
  const workspace ws = gpt2_workspace();
  const fs::path source = ws.pair.source.folder, file = source / "model.safetensors";
  refused("tensor-not-found", transfer(ws, {"--embedding-tensor", "transformer.nope.weight"}), source.string());
  refused("embedding-shape", transfer(ws, {"--embedding-tensor", "transformer.ln_f.bias"}), file.string());
  refused("transfer-tensor", transfer(ws, {"--transfer-tensor", "transformer.ln_f.bias"}), "--transfer-tensor");
  refused("transfer-tensor", transfer(ws, {"--transfer-tensor", "transformer.nope"}), "--transfer-tensor");
  const std::string good = read_file(file);

  edit_header(file, [](nlohmann::ordered_json& h) {
    h["transformer.token_table"] = h["transformer.wte.weight"];
    h.erase("transformer.wte.weight");
  });
  refused("no-embedding", transfer(ws), source.string());
  write_file(file, good);

  edit_header(file, [](nlohmann::ordered_json& h) {
    h["a.wte.weight"] = h["transformer.wte.weight"];
    h["b.embed_tokens.weight"] = h["transformer.wpe.weight"];
    h.erase("transformer.wte.weight");
    h.erase("transformer.wpe.weight");
  });
  refused("several-embeddings", transfer(ws), source.string());
  write_file(file, good);

  edit_header(file, [](nlohmann::ordered_json& h) { h["transformer.wte.weight"]["dtype"] = "I32"; });
  refused("embedding-dtype", transfer(ws), file.string());
  write_file(file, good);

  poke(file, ws.pair.source.embedding_name, 7, 3, std::numeric_limits<float>::quiet_NaN());
  refused("non-finite", transfer(ws), file.string());
  refused("non-finite", run_program({"similarity", source.string(), source.string()}), file.string());
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("error messages: tokenizer files") {
  using tokens = std::vector<std::string>;
  // The helper's tokenizer.json as bpe_tokenizer_json writes it, edited by `edit`.
  const auto broken = [](auto edit) {
    return transfer_with_broken(
        "tokenizer.json",
        [&](const fs::path& f) {
          const auto& helper_tokens = nlohmann::ordered_json::parse(read_file(f.parent_path() / "vocab.json"));
          tokens t(helper_tokens.size());
          for (const auto& [token, id] : helper_tokens.items()) t[id.template get<std::size_t>()] = token;
          auto json = bpe_tokenizer_json(t);
          edit(json, t);
          write_json(f, json);
        },
        false);
  };
  {
    const auto [result, file] = broken([](nlohmann::ordered_json& j, const tokens&) { j["model"].erase("vocab"); });
    refused("tokenizer-no-vocabulary", result, file);
  }
  {
    const auto [result, file] =
        broken([](nlohmann::ordered_json& j, const tokens&) { j["model"]["type"] = "Unknown"; });
    refused("tokenizer-structure", result, file);
  }
  {
    const auto [result, file] = broken([](nlohmann::ordered_json& j, const tokens&) { j["added_tokens"] = 3; });
    refused("tokenizer-structure", result, file);
  }
  {
    const auto [result, file] =
        broken([](nlohmann::ordered_json& j, const tokens&) { j["model"]["vocab"]["Ġextra"] = -3; });
    refused("token-id-invalid", result, file);
  }
  {
    const auto [result, file] =
        broken([](nlohmann::ordered_json& j, const tokens&) { j["model"]["vocab"]["Ġextra"] = INT64_MAX; });
    refused("token-id-invalid", result, file);
  }
  {
    const auto [result, file] =
        broken([](nlohmann::ordered_json& j, const tokens& t) { j["model"]["vocab"][t[5]] = 6; });
    refused("token-id-twice", result, file);
  }
  {
    const auto [result, file] = broken(
        [](nlohmann::ordered_json& j, const tokens&) { j["model"]["vocab"]["Ġextra"] = gpt2_sizes::helper_rows; });
    refused("token-id-past-rows", result, file);
  }
  {
    const workspace ws = gpt2_workspace();
    remove_helper_tokenizers(ws);
    refused("no-tokenizer", transfer(ws), ws.pair.helper.folder.string());
    write_file(ws.pair.helper.folder / "vocab.txt", "[PAD]\nhouse\n##s\nhouse\n");
    refused("vocab-txt-invalid", transfer(ws), (ws.pair.helper.folder / "vocab.txt").string());
    fs::remove(ws.pair.helper.folder / "vocab.txt");
    fs::copy_file(formats / "refusals" / "tiktoken.model", ws.pair.helper.folder / "tokenizer.model");
    refused("tiktoken-model", transfer(ws), (ws.pair.helper.folder / "tokenizer.model").string());
  }
  {
    const workspace ws = gpt2_workspace();
    write_file(ws.pair.helper.folder / "tokenizer.model", std::string("\x0a\xff\xff\xff\xff\xff", 6));
    refused("sentencepiece-invalid", transfer(ws), (ws.pair.helper.folder / "tokenizer.model").string());
  }
  {
    const workspace ws = workspace([](const fs::path& root) {
      model_pair pair;
      pair.source.folder = root / "source";
      pair.helper.folder = root / "helper";
      fs::create_directories(pair.source.folder);
      fs::create_directories(pair.helper.folder);
      for (const char* name : {"config.json", "tokenizer.json", "model.safetensors"})
        fs::copy_file(formats / "helper_sentencepiece" / name, pair.source.folder / name);
      for (const char* name : {"config.json", "tokenizer.json", "model.safetensors"})
        fs::copy_file(formats / "helper_sentencepiece" / name, pair.helper.folder / name);
      fs::copy_file(formats / "source" / "tokenizer.model", pair.helper.folder / "tokenizer.model");
      return pair;
    });
    refused("sentencepiece-disagrees", transfer(ws), (ws.pair.helper.folder / "tokenizer.model").string());
  }
}

TEST_CASE("error messages: matching the vocabularies") {
  {
    workspace ws = gpt2_workspace();
    const fs::path tokenizer = ws.pair.helper.folder / "tokenizer.json";
    edit_json(tokenizer, [](auto& j) {
      j["pre_tokenizer"] = nullptr;
      j["decoder"] = nullptr;
    });
    refused("spelling-unknown", transfer(ws, {"--match", "bytes"}), tokenizer.string());
    refused("spelling-unknown",
            run_program({"overlap", ws.pair.source.folder.string(), tokenizer.string(), "--match", "bytes"}),
            tokenizer.string());
    warned("warn-spelling-unknown", run_program(ws.transfer({"--force"})), tokenizer.string(), "matching exactly");
  }
  {
    const workspace ws = gpt2_workspace();
    std::vector<std::string> renamed = ws.pair.helper.tokens;
    for (std::string& token : renamed) token = "zz" + token;
    auto json = bpe_tokenizer_json(renamed);
    json.erase("added_tokens");
    write_json(ws.pair.helper.folder / "tokenizer.json", json);
    refused("no-shared-token", transfer(ws), (ws.pair.helper.folder / "tokenizer.json").string());
    // One shared token and no special token to pair by role: a transfer, but nothing to hold out.
    renamed[5] = ws.pair.helper.tokens[5];
    write_json(ws.pair.helper.folder / "tokenizer.json", [&] {
      auto one = bpe_tokenizer_json(renamed);
      one.erase("added_tokens");
      return one;
    }());
    edit_json(ws.pair.helper.folder / "config.json", [](auto& c) {
      c.erase("bos_token_id");
      c.erase("eos_token_id");
    });
    refused("evaluate-too-few-shared", evaluate(ws), ws.pair.source.folder.string());
  }
  {
    const workspace ws = gpt2_workspace();
    refused("similarity-other-tokenizer",
            run_program({"similarity", ws.pair.source.folder.string(), ws.pair.helper.folder.string()}),
            ws.pair.helper.folder.string());
    // A token id past the embedding's rows, in both models of `similarity`.
    const fs::path tokenizer = ws.pair.source.folder / "tokenizer.json";
    edit_json(tokenizer, [](auto& j) {
      j["added_tokens"].push_back({{"id", gpt2_sizes::source_vocab}, {"content", "<extra>"}, {"special", true}});
    });
    refused("similarity-rows",
            run_program({"similarity", ws.pair.source.folder.string(), ws.pair.source.folder.string()}),
            (ws.pair.source.folder / "model.safetensors").string());
  }
}

TEST_CASE("error messages: options") {
  const workspace ws = gpt2_workspace();
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--method", "bogus"},
                                              {"--weighting", "topk"},
                                              {"--weighting", "ridge"},
                                              {"--match", "strings"},
                                              {"--similarity-product", "fp16"},
                                              {"--row-norms", "mean"},
                                              {"--undertrained", "drop"}})
    refused("option-unknown-value", transfer(ws, bad), bad[0]);
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--weighting", "top-k", "--k", "0"},
                                              {"--weighting", "softmax", "--temperature", "0"},
                                              {"--weighting", "least-squares", "--lambda", "inf"},
                                              {"--tile-mb", "0"},
                                              {"--threads", "-1"}})
    refused("option-out-of-range", transfer(ws, bad), bad[bad.size() - 2]);
  refused("option-out-of-range", evaluate(ws, {"--held-out", "1.5"}), "--held-out");
  refused("option-out-of-range", evaluate(ws, {"--splits", "0"}), "--splits");
  refused("option-out-of-range",
          run_program({"similarity", ws.pair.source.folder.string(), ws.pair.source.folder.string(), "--sample", "-1"}),
          "--sample");
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--weighting", "paper", "--k", "5"},
                                              {"--weighting", "top-k", "--temperature", "0.2"},
                                              {"--seed", "3"},
                                              {"--method", "random", "--undertrained", "keep"}})
    refused("option-does-not-apply", transfer(ws, bad), bad[bad.size() - 2]);
  refused("option-does-not-apply", evaluate(ws, {"--weightings", "paper", "--similarity-product", "bf16"}),
          "--similarity-product");
  refused("weightings-list", evaluate(ws, {"--weightings", "top-k,ridge"}), "--weightings");
  refused("usage", run_program({"transfer", "--source", ws.pair.source.folder.string()}), "--helper", 2);
  refused("usage", run_program({"tranfser"}), "tranfser", 2);
  refused("usage", transfer(ws, {"--k", "ten"}), "--k", 2);
  // An unsigned option refuses a negative value, which its conversion would wrap.
  const program_result negative_seed = transfer(ws, {"--method", "random", "--seed", "-1"});
  refused("usage", negative_seed, "--seed", 2);
  CHECK(negative_seed.err.find("must be 0 or more, got -1") != std::string::npos);
  const program_result negative_add =
      run_program({"extend", "--source", ws.pair.source.folder.string(), "--helper", ws.pair.helper.folder.string(),
                   "--output", ws.output.string(), "--add", "-3", "--quiet"});
  refused("usage", negative_add, "--add", 2);
  CHECK(negative_add.err.find("must be at least 1, got -3") != std::string::npos);
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("error messages: --similarity-product bf16 where it cannot run (skipped where it runs)") {
  const workspace ws = gpt2_workspace();
  const program_result result = transfer(ws, {"--weighting", "top-k", "--similarity-product", "bf16"});
  if (result.exit_status == 0) {
    clp_test::skip("this build runs the bf16 product on this CPU");
    return;
  }
  refused("bf16-unavailable", result, "--similarity-product");
}

TEST_CASE("error messages: the output") {
  const workspace ws = gpt2_workspace();
  const fs::path report = ws.dir / "report.json";
  fs::create_directories(ws.output);
  refused("output-exists", transfer(ws), ws.output.string());
  fs::remove_all(ws.output);
  write_file(report, "old");
  refused("output-exists", transfer(ws, {"--report", report.string()}), report.string());
  const fs::path orphan = ws.dir / "no-such-folder" / "model";
  refused("output-parent-missing", run_program(ws.transfer({"--quiet"}, orphan)), orphan.string());
  refused("output-parent-missing", transfer(ws, {"--report", orphan.string()}), orphan.string());
  refused("output-is-input", run_program(ws.transfer({"--quiet", "--force"}, ws.pair.source.folder)),
          ws.pair.source.folder.string());
  // --force replaces a model folder, not a file or a folder of something else.
  const fs::path mine = ws.dir / "mine";
  fs::create_directories(mine);
  write_file(mine / "thesis.tex", "mine");
  refused("output-not-replaceable", run_program(ws.transfer({"--quiet", "--force"}, mine)), mine.string());
  refused("output-not-replaceable", run_program(ws.transfer({"--quiet", "--force"}, mine / "thesis.tex")),
          (mine / "thesis.tex").string());
  CHECK(read_file(mine / "thesis.tex") == "mine");
  fs::remove_all(mine);
  // A report inside the output (written whole), or inside an input model, or a folder.
  refused("report-misplaced", transfer(ws, {"--report", ws.output.string()}), ws.output.string());
  refused("report-misplaced", transfer(ws, {"--report", (ws.output / "report.json").string()}),
          (ws.output / "report.json").string());
  refused("report-misplaced", transfer(ws, {"--report", (ws.pair.source.folder / "report.json").string()}),
          (ws.pair.source.folder / "report.json").string());
  refused("report-misplaced", transfer(ws, {"--report", ws.out_parent.string(), "--force"}), ws.out_parent.string());
  refused("write-failed", run_program(ws.transfer({"--quiet"}, "/proc/clp-transfer-test-output")), "/proc/");
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("error messages: the synthesis") {
  const workspace ws = gpt2_workspace();
  // A helper column that is zero in every row: its Gram matrix is singular, which --lambda 0 refuses.
  zero_column(ws.pair.helper.folder / "model.safetensors", ws.pair.helper.embedding_name, gpt2_sizes::helper_rows,
              gpt2_sizes::helper_width, 3);
  refused("lambda-singular", transfer(ws, {"--weighting", "least-squares", "--lambda", "0"}), "--lambda");
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("error messages: a folder that is no model folder, in every command that reads one") {
  const workspace ws = gpt2_workspace();
  const fs::path empty = ws.dir / "empty";
  fs::create_directories(empty);
  const std::string helper = ws.pair.helper.folder.string(), output = ws.output.string();
  const std::vector<std::vector<std::string>> runs{
      {"transfer", "--source", empty.string(), "--helper", helper, "--output", output, "--quiet"},
      {"extend", "--source", empty.string(), "--helper", helper, "--output", output, "--quiet"},
      {"evaluate", "--source", helper, "--helper", empty.string(), "--quiet"},
      {"similarity", empty.string(), helper}};
  std::vector<std::string> lines;
  for (const std::vector<std::string>& args : runs) {
    const program_result result = run_program(args);
    refused("not-a-model-folder", result, empty.string());
    lines.push_back(result.err);
  }
  const program_result verified = run_program({"verify", empty.string()});
  refused("not-a-model-folder", verified, empty.string(), 2);  // verify's status for a refusal
  lines.push_back(verified.err);
  for (const std::string& line : lines) CHECK(line == lines.front());  // the same words in every command
  CHECK(folder_entries(ws.out_parent).empty());
}

TEST_CASE("warnings: one line each, naming the file or tensor") {
  {
    const workspace ws = gpt2_workspace();
    const fs::path config = ws.pair.helper.folder / "tokenizer_config.json";
    write_file(config, R"({"eos_token": "<missing>", "pad_token": 7})");
    warned("warn-special-token-ignored", run_program(ws.transfer()), config.string(), "ignored");
  }
  {
    const workspace ws = gpt2_workspace();
    write_file(ws.pair.helper.folder / "tokenizer_config.json", R"({"eos_token": "<|endoftext|>"})");
    const fs::path config = ws.pair.helper.folder / "config.json";
    edit_json(config, [](auto& c) { c["eos_token_id"] = 5; });
    warned("warn-special-ids-disagree", run_program(ws.transfer()), config.string(), "without the eos token");
  }
  {
    const workspace ws = gpt2_workspace();
    fs::copy_file(formats / "refusals" / "tiktoken.model", ws.pair.helper.folder / "tokenizer.model");
    warned("warn-tiktoken-beside", run_program(ws.transfer()), (ws.pair.helper.folder / "tokenizer.model").string(),
           "not checked");
  }
  {
    const workspace ws = gpt2_workspace();
    append_tensor(ws.pair.source.folder / "model.safetensors", "transformer.token_flags",
                  {gpt2_sizes::source_vocab, 2});
    warned("warn-tensor-copied", run_program(ws.transfer()), ws.pair.source.folder.string() + ": tensor",
           "transformer.token_flags");
  }
  {
    const workspace ws = gpt2_workspace();
    const std::string token = source_only_token(ws);
    edit_json(ws.pair.source.folder / "config.json",
              [&](auto& c) { c["image_token_index"] = id_of(ws.pair.source, token); });
    warned("warn-config-id-removed", run_program(ws.transfer()), (ws.pair.source.folder / "config.json").string(),
           "image_token_index");
  }
  {
    const temp_dir dir;
    const program_result result =
        run_program({"transfer", "--source", (shipped / "en-large").string(), "--helper",
                     (shipped / "de-small").string(), "--output", (dir / "out").string(), "--weighting", "paper"});
    warned("warn-large-rows", result, "--weighting", "largest synthesised row norm");
  }
}

}  // namespace test_error_messages
