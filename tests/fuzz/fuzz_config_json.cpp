// Fuzz target: config.json as the program reads and writes it: a model folder read once
// (io/hf_checkpoint.hpp), the language model's vocab and hidden sizes (io/language_model_config.hpp),
// and the config written for a transferred model (transfer_config). The folder holds a fixed
// valid model.safetensors and tokenizer.json; the input is config.json. A written config must
// parse back with the new vocab_size where the language model reads it.
#include "fuzz_support.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/language_model_config.hpp"

using namespace clp_fuzz;

namespace fuzz_config_json {

const fs::path& model() {
  static const fs::path folder = [] {
    const fs::path f = fresh_folder("config");
    clp_transfer::io::safetensors_writer writer(
        f / "model.safetensors", {{"transformer.wte.weight", clp_transfer::io::dtype::f32, {2, 2}, 16}}, {}, /*durable=*/false);
    const float values[4] = {1, 2, 3, 4};
    writer.append(values, sizeof values);
    writer.finish();
    write_bytes(f / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}})");
    return f;
  }();
  return folder;
}

CLP_FUZZ_TARGET(config_json) {
  namespace program = clp_transfer;
  const fs::path& folder = model();
  const fs::path config_file = folder / "config.json";
  write_bytes(config_file, data, size);
  expect_clean(folder, [&] {
    const program::hf_checkpoint checkpoint = program::hf_checkpoint::read(folder);
    const nlohmann::ordered_json& config = checkpoint.config();
    expect_clean(folder, [&] {
      const auto vocab_size = program::language_model_vocab_size(config, config_file);
      if (vocab_size && *vocab_size <= 0) finding("non-positive vocab_size accepted");
    });
    expect_clean(folder, [&] {
      if (program::language_model_hidden_size(config, config_file) <= 0) finding("non-positive hidden size accepted");
    });
    const auto& ids = checkpoint.tokenizer.vocabulary.ids;
    const auto written =
        nlohmann::ordered_json::parse(program::transfer_config(config, config, 7, ids, ids).config.dump(2));
    const std::vector<std::string> path = program::language_model_config_path(written);
    const nlohmann::ordered_json* level = &written;
    for (const std::string& key : path) level = &level->at(key);
    if (level->at("vocab_size") != 7) finding("the written config lost vocab_size");
  });
  return 0;
}

}  // namespace fuzz_config_json
