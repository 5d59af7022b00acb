// Fuzz target: a sharded model folder's model.safetensors.index.json (io/model_weights.hpp,
// model_weights). The folder holds a fixed config.json and two valid shards; the input is the
// index. An accepted folder must locate every tensor of every shard it opened.
#include "fuzz_support.hpp"
#include "io/model_weights.hpp"

using namespace clp_fuzz;

namespace fuzz_shard_index {

void write_shard(const fs::path& file, const std::vector<std::string>& names) {
  std::vector<clp_transfer::io::tensor_spec> specs;
  for (const std::string& name : names) specs.push_back({name, clp_transfer::io::dtype::f32, {4, 2}, 32});
  clp_transfer::io::safetensors_writer writer(file, specs, {{"format", "pt"}}, /*durable=*/false);
  const std::vector<float> values(8 * names.size(), 0.5f);
  writer.append(values.data(), values.size() * sizeof(float));
  writer.finish();
}

const fs::path& model() {
  static const fs::path folder = [] {
    const fs::path f = fresh_folder("sharded");
    write_bytes(f / "config.json", R"({"model_type": "gpt2", "vocab_size": 4, "n_embd": 2})");
    write_shard(f / "model-00001-of-00002.safetensors", {"transformer.wte.weight", "transformer.h.0.ln_1.weight"});
    write_shard(f / "model-00002-of-00002.safetensors", {"lm_head.weight", "transformer.ln_f.bias"});
    return f;
  }();
  return folder;
}

CLP_FUZZ_TARGET(shard_index) {
  const fs::path& folder = model();
  write_bytes(folder / "model.safetensors.index.json", data, size);
  expect_clean(folder, [&] {
    const clp_transfer::io::model_weights opened(folder);
    if (opened.index_path().empty()) finding("the index was not used");
    for (const std::string& name : opened.tensor_names())
      if (opened.locate(name).tensor.name != name) finding("located the wrong tensor", name);
  });
  return 0;
}

}  // namespace fuzz_shard_index
