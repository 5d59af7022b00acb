// The source model alone, read as read_models (transfer/read_models.hpp) reads the source of a
// pair: for an extension without a helper, whose new rows come from the source's own rows.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/embedding_matrix.hpp"
#include "io/embedding_names.hpp"
#include "io/hf_checkpoint.hpp"
#include "library_names.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/read_models.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp_transfer {

/// The source of `pair` (its helper is not read): its embedding, the tensors that follow the
/// vocabulary and their roles, checked as read_models checks them (config.json's hidden size
/// and the embedding's width, the token ids and its rows). Throws naming the file at fault.
inline loaded_model read_source_model(const model_pair& pair) {
  hf_checkpoint source = hf_checkpoint::read(pair.source);
  const std::vector<std::string> names = source.weights.tensor_names();
  const std::string embedding_name = io::find_input_embedding(pair.source, names, pair.source_embedding);
  const std::optional<std::string> head = io::find_output_embedding(pair.source, names, pair.source_head);
  embedding_matrix embedding = embedding_matrix::read(source.weights, embedding_name);
  vocabulary_plan plan = plan_source_tensors(pair.transfer_tensors, source, embedding, embedding_name, head);
  std::vector<transferred_tensor> transferred = read_transferred(source.weights, plan, embedding.rows());
  detail::require_hidden_size(source, embedding);
  detail::require_ids_fit(source, embedding);
  std::optional<std::string> head_name;  // the head when it is transferred (untied), as read_models names it
  for (const transferred_tensor& t : transferred)
    if (head && t.entry.name == *head) head_name = t.entry.name;
  return {std::move(source), embedding_name,         std::move(embedding),
          std::move(plan),   std::move(transferred), std::move(head_name)};
}

}  // namespace clp_transfer
