#include "io/model_weights.hpp"

namespace clp_transfer::io {

namespace detail {

std::vector<std::string> shard_names(const std::filesystem::path& index_path, const nlohmann::ordered_json& index) {
  const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
  if (weight_map == index.end() || !weight_map->is_object() || weight_map->empty())
    malformed(index_path, "no weight_map object of tensor name -> shard file");
  std::vector<std::string> names;
  for (const auto& [tensor, shard] : weight_map->items()) {
    if (!shard.is_string())
      malformed(index_path, "tensor " + quoted_name(tensor) + " maps to " + json_excerpt(shard) + ", not a file name");
    const std::string name = shard.get<std::string>();
    // Shards live in the folder itself; a path here would reach outside it. A NUL would end the
    // name early at open(): another file than the one named. No shard's name holds a control
    // character (a line break in it would break the one-line messages).
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
      malformed(index_path, "shard " + quoted_name(name) + " is not a file name");
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace detail

std::string output_weight_name(const std::string& name, weight_format format) {
  if (format == weight_format::safetensors) return name;
  std::string stem =
      name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0 ? name.substr(0, name.size() - 4) : name;
  if (stem.compare(0, 13, "pytorch_model") == 0) stem = "model" + stem.substr(13);
  return stem + ".safetensors";
}

model_weights::model_weights(std::filesystem::path folder) : folder_(std::move(folder)) {
  std::error_code ignored;
  const auto present = [&](const char* name) { return std::filesystem::exists(folder_ / name, ignored); };
  if (present("model.safetensors")) {
    shards_.emplace_back(folder_ / "model.safetensors", format_);
  } else if (present("model.safetensors.index.json")) {
    open_index("model.safetensors.index.json", weight_format::safetensors);
  } else if (present("pytorch_model.bin")) {
    format_ = weight_format::torch;
    shards_.emplace_back(folder_ / "pytorch_model.bin", format_);
  } else if (present("pytorch_model.bin.index.json")) {
    open_index("pytorch_model.bin.index.json", weight_format::torch);
  } else {
    malformed(folder_,
              "no model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
              "pytorch_model.bin.index.json");
  }
}

nlohmann::ordered_json model_weights::output_index() const {
  nlohmann::ordered_json index = index_;
  if (format_ == weight_format::safetensors || !index.is_object()) return index;
  for (auto& [tensor, shard] : index["weight_map"].items())
    shard = output_weight_name(shard.get<std::string>(), format_);
  return index;
}

std::vector<std::string> model_weights::tensor_names() const {
  std::vector<std::string> names;
  for (const weight_file& shard : shards_)
    for (const tensor_entry& tensor : shard.tensors()) names.push_back(tensor.name);
  return names;
}

located_tensor model_weights::locate(std::string_view name) const {
  for (const weight_file& shard : shards_)
    if (const tensor_entry* tensor = shard.find(name)) return {shard, *tensor};
  throw clp::invalid_argument(about(folder_), "no tensor " + quoted_name(name) + " in any weight file");
}

void model_weights::open_index(const char* name, weight_format format) {
  format_ = format;
  index_path_ = folder_ / name;
  index_ = read_json_file<nlohmann::ordered_json>(index_path_);
  naming_file(index_path_, [&] { open_shards(); });
}

void model_weights::open_shards() {
  const std::vector<std::string> names = detail::shard_names(index_path_, index_);
  std::vector<std::string> outputs;
  for (const std::string& name : names) {
    const std::string output = output_weight_name(name, format_);
    // Two shards written to one file, or a shard over the index, would lose tensors.
    if (std::find(outputs.begin(), outputs.end(), output) != outputs.end() || output == output_index_name())
      malformed(index_path_, "shard " + quoted_name(name) + " would be written as " + quoted_name(output) +
                                 ", the name of another output file");
    outputs.push_back(output);
    try {
      shards_.emplace_back(folder_ / name, format_);
    } catch (const io_error& e) {
      // A shard that cannot be opened (missing, unreadable): the message names the index too,
      // whose weight_map is what asked for the file.
      if (e.file() != folder_ / name) throw;
      throw io_error(e.file(), e.problem() + " (a shard " + index_path_.filename().string() + " lists)", e.tensor(),
                     e.offset());
    }
  }
  for (const auto& [tensor, shard] : index_["weight_map"].items()) {
    const auto position = std::find(names.begin(), names.end(), shard.get<std::string>());
    if (!shards_[static_cast<std::size_t>(position - names.begin())].find(tensor))
      malformed(index_path_, "tensor " + quoted_name(tensor) + " is mapped to " + quoted_name(*position) +
                                 ", which does not hold it");
  }
}

}  // namespace clp_transfer::io
