// Every tensor of the source that holds one row or one value per token follows the new
// vocabulary: the program's side of the decisions in vocabulary_tensors.hpp and
// io/language_model_config.hpp, as each phase uses it:
// - read (read_models.hpp): plan_source_tensors decides each tensor's role from the headers and,
//   for tied copies, the mapped bytes; read_transferred maps the tensors to transfer as
//   #source rows by values-per-token matrices;
// - synthesise (synthesise.hpp): one output matrix per transferred tensor, in its own dtype;
// - write (weights_output.hpp): replacement_for says what to write in each tensor's place;
// - report (report.hpp): the plan, the warnings, and what happened to config token ids.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/embedding_matrix.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/language_model_config.hpp"
#include "io/model_weights.hpp"
#include "library_names.hpp"
#include "vocabulary_tensors.hpp"

namespace clp_transfer {

/// A tensor of the source that is transferred with the embedding's weights (an untied head, a
/// per-token bias, a tensor named by --transfer-tensor).
struct transferred_tensor {
  vocabulary_tensor entry;  ///< its entry in the plan
  embedding_matrix source;  ///< #source rows by entry.columns, the tensor's own dtype
};

/// Every tensor of `weights`, shard by shard in file order, as its header describes it.
inline std::vector<tensor_description> describe_tensors(const io::model_weights& weights) {
  std::vector<tensor_description> tensors;
  for (const io::weight_file& shard : weights.shards())
    for (const io::tensor_entry& t : shard.tensors())
      tensors.push_back({t.name, t.shape, std::string(io::dtype_name(t.dtype))});
  return tensors;
}

/// The roles of the source's vocabulary-sized tensors. A tensor of the embedding's shape and
/// dtype is a tied copy when its mapped bytes equal `embedding`'s.
/// @param[in] transfer_tensors  --transfer-tensor names
/// @param[in] source     the source model
/// @param[in] embedding  the source's input embedding as read, #rows by hidden size
/// @param[in] embedding_name, head_name  io::find_input_embedding's and io::find_output_embedding's answers
inline vocabulary_plan plan_source_tensors(const std::vector<std::string>& transfer_tensors,
                                           const hf_checkpoint& source, const embedding_matrix& embedding,
                                           const std::string& embedding_name,
                                           const std::optional<std::string>& head_name) {
  vocabulary_tensor_options options;
  options.head = head_name;
  options.transfer_tensors = transfer_tensors;
  options.config_vocab_size = language_model_vocab_size(source.config(), source.config_file());
  const auto equal_bytes = [&](const std::string& name) {
    const embedding_matrix candidate = embedding_matrix::read(source.weights, name);
    return candidate.byte_size() == embedding.byte_size() &&
           (embedding.byte_size() == 0 ||
            std::memcmp(candidate.bytes(), embedding.bytes(), embedding.byte_size()) == 0);
  };
  return plan_vocabulary_tensors(source.folder, describe_tensors(source.weights), embedding_name, options, equal_bytes);
}

/// Maps every transferred tensor of `plan` as a #source rows by values-per-token matrix.
inline std::vector<transferred_tensor> read_transferred(const io::model_weights& source, const vocabulary_plan& plan,
                                                        Index source_rows) {
  std::vector<transferred_tensor> tensors;
  for (const vocabulary_tensor* entry : plan.with_role(vocabulary_role::transferred))
    tensors.push_back({*entry, embedding_matrix::read(source, entry->name, source_rows, entry->columns)});
  return tensors;
}

/// One output matrix per transferred tensor: #target_rows by its columns, its dtype.
inline std::vector<embedding_matrix> allocate_transferred_outputs(const std::vector<transferred_tensor>& tensors,
                                                                  Index target_rows) {
  std::vector<embedding_matrix> outputs;
  outputs.reserve(tensors.size());
  for (const transferred_tensor& t : tensors)
    outputs.emplace_back(t.source.dtype(), target_rows, t.entry.columns, "output " + t.entry.name);
  return outputs;
}

/// What to write in place of a source tensor that follows the vocabulary.
struct tensor_replacement {
  std::vector<std::int64_t> shape;  ///< the source's shape with the target rows on the vocabulary axis
  const embedding_matrix* values = nullptr;
};

/// The replacement of source tensor `name`: the output embedding for the embedding and its tied
/// copies, a transferred tensor's own output; nullopt for every other tensor (warned ones
/// included), which is copied unchanged.
/// @param[in] sources  the transferred tensors (read_transferred)
/// @param[in] outputs  their outputs, in the same order
inline std::optional<tensor_replacement> replacement_for(std::string_view name, const vocabulary_plan& plan,
                                                         const embedding_matrix& output_embedding,
                                                         const std::vector<transferred_tensor>& sources,
                                                         const std::vector<embedding_matrix>& outputs) {
  const vocabulary_tensor* entry = plan.find(name);
  if (!entry || entry->role == vocabulary_role::warned) return std::nullopt;
  const std::vector<std::int64_t> shape = entry->output_shape(output_embedding.rows());
  if (entry->role != vocabulary_role::transferred) return tensor_replacement{shape, &output_embedding};
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (sources[i].entry.name == name) return tensor_replacement{shape, &outputs[i]};
  return std::nullopt;  // not reached: every transferred entry was read
}

/// The warning lines of a run (without the "clp-transfer: warning: " prefix): one per warned
/// tensor, naming the source's folder, and one per config.json token id the new vocabulary has
/// no token for, naming `source_config`, the source's config.json the id was read from.
inline std::vector<std::string> layout_warnings(const vocabulary_plan& plan, const transferred_config& config,
                                                const std::filesystem::path& source_config) {
  std::vector<std::string> warnings;
  for (const vocabulary_tensor* t : plan.with_role(vocabulary_role::warned))
    warnings.push_back(source_config.parent_path().string() + ": " + warning_text(*t));
  for (const token_id_change& change : config.token_ids) {
    if (change.target_id) continue;
    const std::string id = std::to_string(change.source_id);
    warnings.push_back(source_config.string() + ": " + change.key + " " + id +
                       (change.token ? " is \"" + *change.token + "\", which the new vocabulary lacks"
                                     : " names no token of the source vocabulary") +
                       "; removed from the output's config.json");
  }
  return warnings;
}

/// The plan for the JSON report: name, role, reason, dtype, shape and output_shape of each entry
/// (output_shape equals shape for a warned tensor, which is copied unchanged).
inline nlohmann::ordered_json vocabulary_tensors_json(const vocabulary_plan& plan, std::int64_t target_rows) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const vocabulary_tensor& t : plan.tensors)
    list.push_back({{"name", t.name},
                    {"role", role_name(t.role)},
                    {"reason", t.reason},
                    {"dtype", t.dtype},
                    {"shape", t.shape},
                    {"output_shape", t.role == vocabulary_role::warned ? t.shape : t.output_shape(target_rows)}});
  return list;
}

/// The config.json token ids carried over by token, for the JSON report (null: none / dropped).
inline nlohmann::ordered_json config_token_ids_json(const transferred_config& config) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const token_id_change& change : config.token_ids) {
    nlohmann::ordered_json entry = {{"key", change.key}, {"source_id", change.source_id}};
    entry["token"] = change.token ? nlohmann::ordered_json(*change.token) : nlohmann::ordered_json(nullptr);
    entry["target_id"] = change.target_id ? nlohmann::ordered_json(*change.target_id) : nlohmann::ordered_json(nullptr);
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace clp_transfer
