// The two models a command reads: the large source and the small helper, which of their tensors
// to take, and how their vocabularies are matched. What read_models reads, whichever command
// asks (`transfer`, `evaluate`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "library_names.hpp"
#include "token_matching.hpp"

namespace clp_transfer {

struct model_pair {
  std::filesystem::path source, helper;  ///< model folders
  /// --embedding-tensor, --helper-embedding-tensor, --lm-head-tensor; empty: found
  /// (io::find_input_embedding, io::find_output_embedding).
  std::string source_embedding, helper_embedding, source_head;
  /// --transfer-tensor: further source tensors with a row or value per token, transferred with
  /// the embedding's weights.
  std::vector<std::string> transfer_tensors;
  match_arguments matching;  ///< --match
};

}  // namespace clp_transfer
