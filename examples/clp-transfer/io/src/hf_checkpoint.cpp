#include "io/hf_checkpoint.hpp"

#include <system_error>

#include "io/tokenizer/files.hpp"

namespace clp_transfer {

namespace io {

void require_model_folder(const std::filesystem::path& folder) {
  std::error_code ignored;
  if (!std::filesystem::is_directory(folder, ignored)) missing_folder(folder);
  for (const char* name : {"config.json", "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                           "pytorch_model.bin.index.json"})
    if (std::filesystem::exists(folder / name, ignored)) return;
  if (!find_vocabulary_file(folder)) malformed(folder, "no config.json, weights or tokenizer: not a model folder");
}

}  // namespace io

model_json_files model_json_files::read(const std::filesystem::path& folder, bool config) {
  const auto optional = [&](const char* name) {
    return io::read_json_file_if_present<nlohmann::ordered_json>(folder / name);
  };
  model_json_files files;
  files.folder = folder;
  if (config) files.config = optional("config.json");
  files.generation_config = optional("generation_config.json");
  files.tokenizer_config = optional("tokenizer_config.json");
  files.special_tokens_map = optional("special_tokens_map.json");
  return files;
}

hf_checkpoint hf_checkpoint::read(const std::filesystem::path& folder,
                                  const std::function<void(const io::model_weights&)>& headers_read) {
  io::require_model_folder(folder);
  const std::filesystem::path config_file = folder / "config.json";
  auto config = io::read_json_file<nlohmann::ordered_json>(config_file);
  if (!config.is_object()) io::malformed(config_file, "not a JSON object");
  io::model_weights weights(folder);
  if (headers_read) headers_read(weights);
  model_json_files json = model_json_files::read(folder, /*config=*/false);
  json.config = std::move(config);
  const nlohmann::ordered_json* tokenizer_config = json.tokenizer_config ? &*json.tokenizer_config : nullptr;
  tokenizer_reading tokenizer = read_folder_tokenizer(folder, tokenizer_config);
  return {folder, std::move(json), std::move(weights), std::move(tokenizer)};
}

}  // namespace clp_transfer
