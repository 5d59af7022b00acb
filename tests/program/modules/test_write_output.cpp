// transfer/write_output.hpp: the write phase takes what it writes as values (the output target,
// the output matrices, the vocabulary's files), so a command other than `transfer` can write a
// source model with rows appended and a tokenizer it made. The oracle: the source's bytes and
// the appended rows as written by hand, compared with the output's safetensors data section.
#include "transfer/write_output.hpp"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "progress.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/safetensors_bytes.hpp"
#include "support/temp_dir.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/output_target.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/weights_output.hpp"

using namespace clp_transfer;
using namespace clp_test;
namespace fs = std::filesystem;

namespace {

/// A model folder of 4 tokens "t0".."t3" (byte-level BPE) whose F32 embedding, 4 x 2, holds
/// `values`; written byte by byte from the safetensors format, not by the program's writer.
void write_model(const fs::path& folder, const std::vector<float>& values) {
  fs::create_directories(folder);
  write_file(folder / "config.json", R"({"model_type": "gpt2", "n_embd": 2, "vocab_size": 4})");
  const std::string header = R"({"transformer.wte.weight":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]}})";
  std::string data(values.size() * sizeof(float), '\0');
  std::memcpy(data.data(), values.data(), data.size());
  write_file(folder / "model.safetensors", safetensors_bytes(header, data));
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < 4; ++id) vocab["t" + std::to_string(id)] = id;
  write_file(
      folder / "tokenizer.json",
      nlohmann::json({{"decoder", {{"type", "ByteLevel"}}}, {"model", {{"type", "BPE"}, {"vocab", vocab}}}}).dump());
}

}  // namespace

TEST_CASE("write_output: the source's rows kept, rows appended, a tokenizer from memory, no helper vocabulary") {
  temp_dir dir;
  const std::vector<float> source_rows{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> appended{-1.5f, 0.25f, 9, -9};
  write_model(dir / "source", source_rows);
  model_pair pair;
  pair.source = pair.helper = dir / "source";
  const loaded_models models = read_models(pair);

  // Six rows: the source's four as they are, then two new ones.
  synthesised_embeddings out = allocate_outputs(models.source, 6);
  REQUIRE(out.embedding.rows() == 6);
  auto* rows = static_cast<float*>(out.embedding.output_view().data());
  std::memcpy(rows, source_rows.data(), source_rows.size() * sizeof(float));
  std::memcpy(rows + source_rows.size(), appended.data(), appended.size() * sizeof(float));

  output_target target;
  target.folder = dir / "out";
  target.check({pair.source});
  io::staging_directory staging(target.folder);
  weights_output weights(staging.path(), target.durable(), models.source, out);
  weights.rows_started(6);
  weights.rows_finished(6);
  const std::string tokenizer = R"({"model": {"type": "BPE", "vocab": {"t0": 0, "t1": 1, "t2": 2, "t3": 3}}})";
  output_vocabulary vocabulary{{{"model_type", "gpt2"}, {"n_embd", 2}, {"vocab_size", 6}}, std::nullopt, {}, {}};
  vocabulary.written_files.push_back({"tokenizer.json", tokenizer});
  progress_reporter quiet(true);
  write_output(staging, false, models.source.checkpoint.weights, weights, vocabulary, quiet);
  commit_output(staging, false, target, {});

  CHECK(folder_entries(target.folder) ==
        std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"});
  CHECK(read_file(target.folder / "tokenizer.json") == tokenizer);
  CHECK(nlohmann::json::parse(read_file(target.folder / "config.json"))["vocab_size"] == 6);
  const safetensors_parts written = split_safetensors(read_file(target.folder / "model.safetensors"));
  const nlohmann::json header = nlohmann::json::parse(written.header);
  CHECK(header["transformer.wte.weight"]["shape"] == nlohmann::json::array({6, 2}));
  std::vector<float> expected = source_rows;
  expected.insert(expected.end(), appended.begin(), appended.end());
  REQUIRE(written.data.size() == expected.size() * sizeof(float));
  CHECK(std::memcmp(written.data.data(), expected.data(), written.data.size()) == 0);
}

/// What output_target::check refuses `target` for, against `inputs`; nothing when it passes.
auto refused(const output_target& target, const std::vector<fs::path>& inputs) {
  return refusal_of([&] { target.check(inputs); });
}

TEST_CASE("output_target: an output in the way, a report in the way or an input as output, refused before any work") {
  temp_dir dir;
  write_model(dir / "model", {1, 2, 3, 4, 5, 6, 7, 8});
  const clp::error_kind invalid = clp::error_kind::invalid_argument;
  output_target target;
  target.folder = dir / "model";
  check_refusal(refused(target, {}), invalid, target.folder, {"already exists", "--force"});
  target.force = true;
  check_refusal(refused(target, {dir / "model"}), invalid, target.folder, {"is the input model"});
  CHECK(target.durable());  // --force replaces an output: flushed before the old one goes
  target = output_target{};
  target.folder = dir / "new";
  target.report = dir / "model" / "config.json";
  check_refusal(refused(target, {}), invalid, target.report, {"already exists"});
  target.report = dir / "missing" / "report.json";
  check_refusal(refused(target, {}), invalid, target.report, {"parent directory"});
  target.report.clear();
  CHECK_FALSE(refused(target, {dir / "model"}));
  CHECK_FALSE(target.durable());
}

TEST_CASE("output_target: --force replaces only a model folder, and a report is a file outside the output and the inputs") {
  temp_dir dir;
  write_model(dir / "model", {1, 2, 3, 4, 5, 6, 7, 8});
  const clp::error_kind invalid = clp::error_kind::invalid_argument;
  output_target target;
  target.force = true;
  // What --force may replace: a folder with a config.json (an output of this program), or an empty one.
  fs::create_directories(dir / "old");
  write_file(dir / "old" / "config.json", "{}");
  target.folder = dir / "old";
  CHECK_FALSE(refused(target, {dir / "model"}));
  fs::create_directories(dir / "empty");
  target.folder = dir / "empty";
  CHECK_FALSE(refused(target, {}));
  // ... and not a file, nor a folder that is not a model's (a home folder given by mistake).
  write_file(dir / "notes.txt", "mine");
  target.folder = dir / "notes.txt";
  check_refusal(refused(target, {}), invalid, target.folder, {"is a file", "--force"});
  fs::create_directories(dir / "home");
  write_file(dir / "home" / "thesis.tex", "mine");
  target.folder = dir / "home";
  check_refusal(refused(target, {}), invalid, target.folder, {"no config.json", "not a model folder"});
  target.folder = dir / "home" / "";
  check_refusal(refused(target, {}), invalid, dir / "home", {"no config.json"});

  target.folder = dir / "new";
  target.report = dir / "new";  // the report in the output's place, or inside it
  check_refusal(refused(target, {}), invalid, target.report, {"is also the output", "beside it"});
  target.report = dir / "new" / "report.json";
  check_refusal(refused(target, {}), invalid, target.report, {"inside the output", "beside it"});
  target.folder = dir / "old";  // an output that exists, replaced with --force
  target.report = dir / "old" / ".." / "old" / "report.json";
  check_refusal(refused(target, {}), invalid, target.report, {"inside the output"});
  target.folder = dir / "new";
  target.report = dir / "empty";  // a folder, even with --force
  check_refusal(refused(target, {}), invalid, target.report, {"is a folder", "--report"});
  target.report = dir / "model" / "report.json";  // into an input model's folder
  check_refusal(refused(target, {dir / "model"}), invalid, target.report, {"inside the input model"});
  target.report = dir / "report.json";
  CHECK_FALSE(refused(target, {dir / "model"}));
  for (const char* left : {"old", "empty", "notes.txt", "home"}) CHECK(fs::exists(dir / left));
  CHECK(read_file(dir / "home" / "thesis.tex") == "mine");
}
