// The safetensors weights of a Hugging Face model folder: model.safetensors, or the shards that
// model.safetensors.index.json names. Opening checks every weight file's header and the index
// against the shards, and keeps the index as read (the output's index is that one with a new
// total size); no tensor data is read.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json_file.hpp"
#include "io/safetensors.hpp"
#include "library_names.hpp"

namespace clp_transfer::io {

/// One tensor of a model folder and the shard holding it.
struct located_tensor {
  const safetensors_file& file;
  const tensor_entry& tensor;
};

namespace detail {

/// The shard file names of an index's weight_map, in order of first appearance; throws naming
/// the index for a map that is missing or names anything but a file in the folder.
inline std::vector<std::string> shard_names(const std::filesystem::path& index_path,
                                            const nlohmann::ordered_json& index) {
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

/// The weights of a model folder. Throws naming the file at fault: clp::io_error for a file
/// that cannot be opened, clp::malformed_file for one that lies.
class model_weights {
 public:
  /// Opens the weights in `folder`.
  explicit model_weights(std::filesystem::path folder) : folder_(std::move(folder)) {
    std::error_code ignored;
    if (std::filesystem::exists(folder_ / "model.safetensors", ignored)) {
      shards_.emplace_back(folder_ / "model.safetensors");
    } else if (std::filesystem::exists(folder_ / "model.safetensors.index.json", ignored)) {
      index_path_ = folder_ / "model.safetensors.index.json";
      index_ = read_json_file<nlohmann::ordered_json>(index_path_);
      naming_file(index_path_, [&] { open_shards(); });
    } else {
      const bool pytorch = std::filesystem::exists(folder_ / "pytorch_model.bin", ignored);
      malformed(folder_, std::string("no model.safetensors or model.safetensors.index.json") +
                             (pytorch ? " (pytorch_model.bin is not read: convert it to safetensors)" : ""));
    }
  }

  const std::filesystem::path& folder() const noexcept { return folder_; }
  /// Weight files: model.safetensors alone, or the shards in order of first appearance in the
  /// index's weight_map.
  const std::vector<safetensors_file>& shards() const noexcept { return shards_; }
  /// model.safetensors.index.json, or empty when the weights are a single file.
  const std::filesystem::path& index_path() const noexcept { return index_path_; }
  /// The index as read, key order kept; null when the weights are a single file.
  const nlohmann::ordered_json& index() const noexcept { return index_; }

  /// Every tensor name, shard by shard in file order.
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> names;
    for (const safetensors_file& shard : shards_)
      for (const tensor_entry& tensor : shard.tensors()) names.push_back(tensor.name);
    return names;
  }

  /// The tensor called `name` and its shard; throws clp::invalid_argument naming the folder when
  /// no shard holds it.
  located_tensor locate(std::string_view name) const {
    for (const safetensors_file& shard : shards_)
      if (const tensor_entry* tensor = shard.find(name)) return {shard, *tensor};
    throw clp::invalid_argument(about(folder_), "no tensor " + quoted_name(name) + " in any weight file");
  }

 private:
  void open_shards() {
    const std::vector<std::string> names = detail::shard_names(index_path_, index_);
    for (const std::string& name : names) shards_.emplace_back(folder_ / name);
    for (const auto& [tensor, shard] : index_["weight_map"].items()) {
      const auto position = std::find(names.begin(), names.end(), shard.get<std::string>());
      if (!shards_[static_cast<std::size_t>(position - names.begin())].find(tensor))
        malformed(index_path_, "tensor " + quoted_name(tensor) + " is mapped to " + quoted_name(*position) +
                                   ", which does not hold it");
    }
  }

  std::filesystem::path folder_;
  std::filesystem::path index_path_;
  nlohmann::ordered_json index_;
  std::vector<safetensors_file> shards_;
};

}  // namespace clp_transfer::io
