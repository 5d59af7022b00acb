// Every architecture's layout end to end (issue 14): for each layout fixture, clp-transfer runs and
// every vocabulary-sized tensor of the output is checked: the embedding and every transferred
// tensor (untied heads, per-token biases) against the double-precision oracle applied to that
// tensor's own source values, tied copies byte-equal to the output embedding, anything else
// vocabulary-sized unchanged and named in a warning; every other tensor byte-identical; and
// config.json rewritten where the model reads it.
//
// The report's JSON fields checked here are the ones the program is to write:
//   "vocabulary_tensors": [{"name", "role" ("embedding" | "tied copy" | "transferred" | "warned"),
//                           "reason", "dtype", "shape", "output_shape"}, ...]
//   "warnings": ["SOURCE: tensor \"NAME\" ...", ...]
//   "config_token_ids": [{"key", "source_id", "token" (or null), "target_id" (or null: dropped)}, ...]
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "harness.hpp"
#include "io/embedding_names.hpp"
#include "io/language_model_config.hpp"
#include "io/safetensors.hpp"
#include "io/tokenizer/files.hpp"
#include "layout_fixtures.hpp"
#include "model_fixtures.hpp"
#include "output_checks.hpp"
#include "vocabulary_tensors.hpp"

using namespace program_test;

namespace {

/// A temp dir with one layout's folders and room for the output and the report.
struct layout_workspace {
  temp_dir dir;
  layout_fixture layout;
  fs::path output, report;

  template <class Maker>
  explicit layout_workspace(Maker make)
      : layout(make(dir.path)), output(dir / "out" / "model"), report(dir / "out" / "report.json") {
    fs::create_directories(output.parent_path());
  }

  program_result transfer(const weighting_choice& choice, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"transfer",
                                     "--source",
                                     layout.pair.source.folder.string(),
                                     "--helper",
                                     layout.pair.helper.folder.string(),
                                     "--output",
                                     output.string(),
                                     "--report",
                                     report.string()};
    for (const std::string& a : choice.arguments()) args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(args);
  }
};

const weighting_choice default_choice{"top-k", 10};

std::int64_t target_rows(const layout_fixture& layout) { return layout.pair.helper.embedding.rows; }

/// The F16 counterpart of check_rows: copied rows bit-exact, synthesised rows within one float16
/// ulp of the oracle rounded to float16 (plus 1e-5 of the row's largest entry).
void check_f16_rows(const matrix& got, const matrix& expected, const oracle_rows& oracle, const std::string& what) {
  INFO("matrix: ", what);
  REQUIRE(got.rows == expected.rows);
  REQUIRE(got.cols == expected.cols);
  std::int64_t copied_mismatches = 0, violations = 0, skipped = 0;
  for (std::int64_t r = 0; r < got.rows; ++r) {
    const double* g = got.row(r);
    const double* e = expected.row(r);
    if (oracle.copied[std::size_t(r)]) {
      copied_mismatches += !std::equal(g, g + got.cols, e);
      continue;
    }
    if (oracle.ambiguous[std::size_t(r)]) {
      ++skipped;
      continue;
    }
    double largest = 0;
    for (std::int64_t c = 0; c < got.cols; ++c) largest = std::max(largest, std::abs(e[c]));
    for (std::int64_t c = 0; c < got.cols; ++c) {
      const double rounded = round_to_f16(e[c]);
      violations += !(std::abs(g[c] - rounded) <= f16_ulp(rounded) + 1e-5 * largest);
    }
  }
  CHECK(copied_mismatches == 0);
  CHECK(violations == 0);
  CHECK(skipped * 20 <= got.rows);
}

void check_rows_in(const matrix& got, const matrix& expected, const oracle_rows& oracle, const std::string& dtype,
                   const std::string& what) {
  if (dtype == "F16")
    check_f16_rows(got, expected, oracle, what);
  else
    check_rows(got, expected, oracle, dtype, what.c_str());
}

const char* role_in_report(expected_tensor expect) {
  switch (expect) {
    case expected_tensor::embedding:
      return "embedding";
    case expected_tensor::transferred:
      return "transferred";
    case expected_tensor::tied_copy:
      return "tied copy";
    case expected_tensor::unchanged:
      return "warned";
  }
  return "?";
}

/// Every tensor of the output: vocabulary-sized ones as the layout expects, the rest
/// byte-identical; same names, dtypes and files as the source.
void check_tensors(const layout_fixture& layout, const fs::path& output, const weighting_choice& choice) {
  const model_fixture& source = layout.pair.source;
  const std::int64_t rows = target_rows(layout);
  const std::string embedding_bytes =
      tensor_bytes(output / layout.file_of.at(source.embedding_name), source.embedding_name);
  for (const std::string& file : source.weight_files) {
    const clp_transfer::io::safetensors_file before(source.folder / file);
    const clp_transfer::io::safetensors_file after(output / file);
    REQUIRE(after.tensors().size() == before.tensors().size());
    for (std::size_t i = 0; i < before.tensors().size(); ++i) {
      const clp_transfer::io::tensor_entry& a = before.tensors()[i];
      const clp_transfer::io::tensor_entry& b = after.tensors()[i];
      INFO("tensor ", a.name, " in ", file);
      CHECK(b.name == a.name);
      CHECK(b.dtype == a.dtype);
      const layout_tensor* vocabulary = nullptr;
      for (const layout_tensor& t : layout.vocabulary)
        if (t.name == a.name) vocabulary = &t;
      if (!vocabulary || vocabulary->expect == expected_tensor::unchanged) {
        CHECK(b.shape == a.shape);
        CHECK(tensor_bytes(output / file, b.name) == tensor_bytes(source.folder / file, a.name));
        continue;
      }
      std::vector<std::int64_t> shape = a.shape;
      shape[vocabulary->axis] = rows;
      REQUIRE(b.shape == shape);
      const std::string bytes = tensor_bytes(output / file, b.name);
      if (vocabulary->expect == expected_tensor::tied_copy) {
        CHECK(bytes == embedding_bytes);
        continue;
      }
      const oracle_rows oracle = clp_oracle(with_source_rows(layout.pair, vocabulary->values), choice);
      const std::string dtype(clp_transfer::io::dtype_name(b.dtype));
      check_rows_in(decode_values(bytes, dtype, rows, vocabulary->values.cols), oracle.embedding, oracle, dtype,
                    a.name);
    }
  }
  if (source.weight_files.size() > 1) {
    const auto before = nlohmann::json::parse(read_file(source.folder / "model.safetensors.index.json"));
    const auto after = nlohmann::json::parse(read_file(output / "model.safetensors.index.json"));
    CHECK(after["weight_map"] == before["weight_map"]);
  }
}

/// The report lists every vocabulary-sized tensor with its role, and a warning for each warned one;
/// stderr names each warned tensor on a warning line.
void check_report(const layout_workspace& ws, const program_result& result) {
  const auto report = nlohmann::json::parse(read_file(ws.report));
  REQUIRE(report.contains("vocabulary_tensors"));
  CHECK(report["vocabulary_tensors"].size() == ws.layout.vocabulary.size());
  for (const layout_tensor& t : ws.layout.vocabulary) {
    INFO("tensor ", t.name);
    bool listed = false;
    for (const auto& entry : report["vocabulary_tensors"])
      if (entry["name"] == t.name) {
        listed = true;
        CHECK(entry["role"] == role_in_report(t.expect));
        CHECK(entry["dtype"] == t.dtype);
      }
    CHECK(listed);
    bool warned_in_report = false, warned_on_stderr = false;
    for (const auto& warning : report["warnings"])
      warned_in_report = warned_in_report || warning.get<std::string>().find(t.name) != std::string::npos;
    for (const std::string& line : lines_of(result.err))
      warned_on_stderr =
          warned_on_stderr || (line.find("warning") != std::string::npos && line.find(t.name) != std::string::npos);
    CHECK(warned_in_report == (t.expect == expected_tensor::unchanged));
    CHECK(warned_on_stderr == (t.expect == expected_tensor::unchanged));
  }
}

/// Runs the transfer on a layout and checks tensors, report and the output's other files.
void check_layout(const layout_workspace& ws, const std::vector<std::string>& extra = {}) {
  INFO("layout ", ws.layout.architecture);
  const program_result result = ws.transfer(default_choice, extra);
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.out.empty());
  check_tensors(ws.layout, ws.output, default_choice);
  check_report(ws, result);
  for (const char* file : {"tokenizer.json"})
    CHECK(read_file(ws.output / file) == read_file(ws.layout.pair.helper.folder / file));
}

nlohmann::ordered_json written_config(const layout_workspace& ws) {
  return nlohmann::ordered_json::parse(read_file(ws.output / "config.json"));
}

std::int64_t helper_id(const layout_fixture& layout, const std::string& token) {
  return layout_detail::id_of(layout.pair.helper.tokens, token);
}

/// The config.json the output must hold: the source's with vocab_size = the helper's rows where
/// the model reads it; special ids from the helper (dropped where it has none); other token ids
/// carried over by their token.
nlohmann::ordered_json expected_config(const layout_fixture& layout) {
  const model_pair& pair = layout.pair;
  nlohmann::ordered_json expected = pair.source.config;
  if (layout.architecture == "gemma3") {
    expected["boi_token_index"] = helper_id(layout, "<start_of_image>");
    expected["eoi_token_index"] = helper_id(layout, "<end_of_image>");
    expected["eos_token_id"] = 1;                                 // the helper's, where the source had one
    expected.erase("image_token_index");                          // the helper has no <image_soft_token>
    expected["text_config"]["vocab_size"] = target_rows(layout);  // absent before: the class default
    expected["text_config"]["bos_token_id"] = 2;
    expected["text_config"]["eos_token_id"] = 1;
    expected["text_config"]["pad_token_id"] = 0;
    return expected;
  }
  expected["vocab_size"] = target_rows(layout);
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "sep_token_id",
                          "cls_token_id", "mask_token_id", "decoder_start_token_id"}) {
    if (pair.helper.config.contains(key))
      expected[key] = pair.helper.config[key];
    else
      expected.erase(key);
  }
  if (layout.architecture == "bart") {
    expected["forced_bos_token_id"] = helper_id(layout, "<s>");
    expected["forced_eos_token_id"] = helper_id(layout, "</s>");
  }
  return expected;
}

}  // namespace

TEST_CASE("the layout fixtures agree with the layout decisions (no program run)") {
  // plan_vocabulary_tensors on each fixture's real files (byte equality by reading them) gives the
  // roles the end-to-end checks expect, and transfer_config the config they expect.
  temp_dir dir;
  const std::vector<layout_fixture> layouts = {
      make_gpt2_layout(dir / "gpt2"),   make_llama_layout(dir / "llama", true), make_gpt_neox_layout(dir / "neox"),
      make_bloom_layout(dir / "bloom"), make_bert_layout(dir / "bert"),         make_t5_layout(dir / "t5"),
      make_bart_layout(dir / "bart"),   make_gemma3_layout(dir / "gemma3")};
  for (const layout_fixture& layout : layouts) {
    INFO("layout ", layout.architecture);
    const model_fixture& source = layout.pair.source;
    std::vector<clp_transfer::tensor_description> tensors;
    for (const std::string& file : source.weight_files) {
      const clp_transfer::io::safetensors_file opened(source.folder / file);
      for (const clp_transfer::io::tensor_entry& t : opened.tensors())
        tensors.push_back({t.name, t.shape, std::string(clp_transfer::io::dtype_name(t.dtype))});
    }
    std::vector<std::string> names;
    for (const auto& t : tensors) names.push_back(t.name);
    CHECK(clp_transfer::io::find_input_embedding(source.folder, names) == source.embedding_name);
    clp_transfer::vocabulary_tensor_options options;
    if (auto head = clp_transfer::io::find_output_embedding(source.folder, names)) options.head = *head;
    const std::string embedding_bytes =
        tensor_bytes(source.folder / layout.file_of.at(source.embedding_name), source.embedding_name);
    const auto plan = clp_transfer::plan_vocabulary_tensors(
        source.folder, tensors, source.embedding_name, options, [&](const std::string& name) {
          return tensor_bytes(source.folder / layout.file_of.at(name), name) == embedding_bytes;
        });
    CHECK(plan.tensors.size() == layout.vocabulary.size());
    for (const layout_tensor& t : layout.vocabulary) {
      INFO("tensor ", t.name);
      const clp_transfer::vocabulary_tensor* planned = plan.find(t.name);
      REQUIRE(planned);
      CHECK(std::string(clp_transfer::vocabulary_role_name(planned->role)) == role_in_report(t.expect));
      CHECK(planned->axis == t.axis);
      CHECK(planned->columns == t.values.cols);
    }

    const auto source_vocabulary = clp_transfer::io::read_vocabulary(source.folder);
    const auto helper_vocabulary = clp_transfer::io::read_vocabulary(layout.pair.helper.folder);
    CHECK(source_vocabulary.size == std::int64_t(source.tokens.size()));
    const auto config = clp_transfer::transfer_config(source.config, layout.pair.helper.config, target_rows(layout),
                                                      source_vocabulary.ids, helper_vocabulary.ids);
    CHECK(config.config.dump() == expected_config(layout).dump());
    CHECK(clp_transfer::language_model_hidden_size(source.config, "config.json") == source.embedding.cols);

    // The oracle's weights are not vacuous: a real overlap, and only the helper's padding falls back.
    const oracle_rows oracle = clp_oracle(layout.pair, default_choice);
    CHECK(oracle.overlap > 100);
    CHECK(oracle.degenerate == layout_detail::sizes::helper_padding);
  }
}

TEST_CASE("layout GPT-2 (tied F32): the embedding against the oracle, config as for every flat config") {
  const layout_workspace ws([](const fs::path& root) { return make_gpt2_layout(root); });
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout Llama (untied BF16 lm_head, two shards): embedding and head against the oracle") {
  const layout_workspace ws([](const fs::path& root) { return make_llama_layout(root); });
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout GPT-NeoX (padded F16 embed_in, F32 embed_out): mixed dtypes, each in its own") {
  const layout_workspace ws([](const fs::path& root) { return make_gpt_neox_layout(root); });
  REQUIRE(ws.layout.tensor("gpt_neox.embed_in.weight").dtype == "F16");
  REQUIRE(ws.layout.tensor("embed_out.weight").dtype == "F32");
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout BLOOM (word_embeddings, word_embeddings_layernorm): the layernorm is copied unchanged") {
  const layout_workspace ws([](const fs::path& root) { return make_bloom_layout(root); });
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout BERT masked-LM: cls.predictions.bias transferred, the tied decoder equal to the embedding") {
  const layout_workspace ws([](const fs::path& root) { return make_bert_layout(root); });
  REQUIRE(ws.layout.tensor("cls.predictions.bias").expect == expected_tensor::transferred);
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout T5: encoder/decoder embed_tokens stay equal to shared.weight, the untied lm_head is transferred") {
  const layout_workspace ws([](const fs::path& root) { return make_t5_layout(root); });
  check_layout(ws);
  check_config(ws.layout.pair, ws.output);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout BART: final_logits_bias [1, vocab] transferred, forced_bos/forced_eos follow their tokens") {
  const layout_workspace ws([](const fs::path& root) { return make_bart_layout(root); });
  check_layout(ws);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());
}

TEST_CASE("layout Gemma-3 (multimodal): text_config gets vocab_size and the special ids, image ids by token") {
  const layout_workspace ws([](const fs::path& root) { return make_gemma3_layout(root); });
  check_layout(ws);
  CHECK(written_config(ws).dump() == expected_config(ws.layout).dump());

  const auto report = nlohmann::json::parse(read_file(ws.report));
  bool dropped = false;
  for (const auto& entry : report["config_token_ids"])
    if (entry["key"] == "image_token_index") {
      dropped = true;
      CHECK(entry["token"] == "<image_soft_token>");
      CHECK(entry["target_id"].is_null());
    }
  CHECK(dropped);
  bool warned = false;
  for (const std::string& line : lines_of(ws.transfer(default_choice, {"--force"}).err))
    warned =
        warned || (line.find("warning") != std::string::npos && line.find("image_token_index") != std::string::npos);
  CHECK(warned);
}

TEST_CASE(
    "an unknown vocabulary-sized tensor: copied unchanged with a warning, or transferred with --transfer-tensor") {
  SUBCASE("warned") {
    const layout_workspace ws([](const fs::path& root) { return make_llama_layout(root, true); });
    REQUIRE(ws.layout.tensor("model.vocab_adapter.weight").expect == expected_tensor::unchanged);
    check_layout(ws);
  }
  SUBCASE("--transfer-tensor") {
    layout_workspace ws([](const fs::path& root) { return make_llama_layout(root, true); });
    for (layout_tensor& t : ws.layout.vocabulary)
      if (t.name == "model.vocab_adapter.weight") t.expect = expected_tensor::transferred;
    check_layout(ws, {"--transfer-tensor", "model.vocab_adapter.weight"});
  }
}

TEST_CASE("--transfer-tensor naming no tensor, or one without a row per token, is refused before any output") {
  const layout_workspace ws([](const fs::path& root) { return make_llama_layout(root, true); });
  SUBCASE("no such tensor") {
    const program_result result = ws.transfer(default_choice, {"--transfer-tensor", "model.no_such.weight"});
    CHECK(result.exit_status == 1);
    CHECK(result.err.find("clp-transfer: error: " + ws.layout.pair.source.folder.string() +
                          ": --transfer-tensor \"model.no_such.weight\": no such tensor") != std::string::npos);
  }
  SUBCASE("hidden-sized") {
    const program_result result = ws.transfer(default_choice, {"--transfer-tensor", "model.norm.weight"});
    CHECK(result.exit_status == 1);
    CHECK(result.err.find("--transfer-tensor \"model.norm.weight\" has shape [32]") != std::string::npos);
  }
  CHECK(!fs::exists(ws.output));
  CHECK(!fs::exists(ws.report));
}
