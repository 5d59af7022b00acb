// Fuzz target: config.json handling (io/hf_model.hpp): model_folder reading it, the vocab and
// hidden sizes, and the config written for a transferred model. The folder holds a fixed
// valid model.safetensors; the input is config.json. A written config must parse back with
// the new vocab_size.
#include "fuzz_support.hpp"
#include "io/hf_model.hpp"

using namespace clp_fuzz;

namespace {

const fs::path& model() {
  static const fs::path folder = [] {
    const fs::path f = fresh_folder("config");
    clp::io::safetensors_writer writer(
        f / "model.safetensors", {{"transformer.wte.weight", clp::io::dtype::f32, {2, 2}, 16}}, {}, /*durable=*/false);
    const float values[4] = {1, 2, 3, 4};
    writer.append(values, sizeof values);
    writer.finish();
    return f;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& folder = model();
  const fs::path config_file = folder / "config.json";
  write_bytes(config_file, data, size);
  expect_clean(folder, [&] {
    const clp::io::model_folder opened(folder);
    expect_clean(folder, [&] {
      if (clp::io::config_vocab_size(opened.config(), config_file) <= 0) finding("non-positive vocab_size accepted");
    });
    expect_clean(folder, [&] {
      if (clp::io::config_hidden_size(opened.config(), config_file) <= 0) finding("non-positive hidden size accepted");
    });
    const auto written = clp::io::target_config(opened.config(), opened.config(), 7).dump(2);
    if (nlohmann::json::parse(written).at("vocab_size") != 7) finding("the written config lost vocab_size");
  });
  return 0;
}
