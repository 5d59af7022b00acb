// The weights of a Hugging Face model folder: model.safetensors, or the shards that
// model.safetensors.index.json names; else pytorch_model.bin, or the shards that
// pytorch_model.bin.index.json names (torch checkpoints, read without running them). Opening
// checks every weight file's tensors and the index against the shards, and keeps the index as
// read; no tensor data is read. The program writes safetensors whatever it read: each weight
// file has the name of its output (output_name), and the output's index is the one read with
// those names (output_index).
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
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/safetensors.hpp"
#include "io/weight_file.hpp"

namespace clp_transfer::io {

/// One tensor of a model folder and the shard holding it.
struct located_tensor {
  const weight_file& file;
  const tensor_entry& tensor;
};

namespace detail {

/// The shard file names of an index's weight_map, in order of first appearance; throws naming
/// the index for a map that is missing or names anything but a file in the folder.
std::vector<std::string> shard_names(const std::filesystem::path& index_path, const nlohmann::ordered_json& index);

}  // namespace detail

/// The name a weight file's output gets: its own for a safetensors file; for a torch
/// checkpoint, the safetensors name transformers gives the same shard ("pytorch_model.bin" ->
/// "model.safetensors", "pytorch_model-00001-of-00002.bin" -> "model-00001-of-00002.safetensors";
/// any other "X.bin" -> "X.safetensors").
/// @param[in] name    the weight file's name
/// @param[in] format  its format
std::string output_weight_name(const std::string& name, weight_format format);

/// The weights of a model folder. Throws naming the file at fault: io_error for a file
/// that cannot be opened, malformed_file for one that lies.
class model_weights {
 public:
  /// Opens the weights in `folder`: the first of model.safetensors,
  /// model.safetensors.index.json, pytorch_model.bin and pytorch_model.bin.index.json.
  explicit model_weights(std::filesystem::path folder);

  const std::filesystem::path& folder() const noexcept { return folder_; }
  /// Weight files: the single one, or the shards in order of first appearance in the index's
  /// weight_map.
  const std::vector<weight_file>& shards() const noexcept { return shards_; }
  /// The index file, or empty when the weights are a single file.
  const std::filesystem::path& index_path() const noexcept { return index_path_; }
  /// The index as read, key order kept; null when the weights are a single file.
  const nlohmann::ordered_json& index() const noexcept { return index_; }

  /// The name of shard `shard`'s output file (output_weight_name).
  std::string output_name(std::size_t shard) const {
    return output_weight_name(shards_[shard].path().filename().string(), shards_[shard].format());
  }
  /// The name of the output's index file: the index's own for safetensors weights,
  /// model.safetensors.index.json for torch ones; empty when the weights are a single file.
  std::string output_index_name() const {
    if (index_path_.empty()) return {};
    return format_ == weight_format::safetensors ? index_path_.filename().string() : "model.safetensors.index.json";
  }
  /// The index as read, with each shard's name in its weight_map replaced by its output's.
  nlohmann::ordered_json output_index() const;

  /// Every tensor name, shard by shard in file order.
  std::vector<std::string> tensor_names() const;

  /// The tensor called `name` and its shard; throws clp::invalid_argument naming the folder when
  /// no shard holds it.
  located_tensor locate(std::string_view name) const;

 private:
  void open_index(const char* name, weight_format format);

  void open_shards();

  std::filesystem::path folder_;
  weight_format format_ = weight_format::safetensors;
  std::filesystem::path index_path_;
  nlohmann::ordered_json index_;
  std::vector<weight_file> shards_;
};

}  // namespace clp_transfer::io
