// The config.json of an extended model: the source's, key order kept, with vocab_size the output
// embedding's rows where transfer_config (io/language_model_config.hpp) puts it: in the
// language-model config (added there when absent), and at the top level of a nested config that
// has it there. Every token id stays, since every source token keeps its id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/language_model_config.hpp"

namespace clp_transfer {

/// `source` with vocab_size = `rows` (see the file's comment).
/// @param[in] source  the source model's config.json
/// @param[in] rows    rows of the output embedding
inline nlohmann::ordered_json extended_config(const nlohmann::ordered_json& source, std::int64_t rows) {
  nlohmann::ordered_json config = source;
  const std::vector<std::string> path = language_model_config_path(source);
  nlohmann::ordered_json* nested = &config;
  for (const std::string& key : path) nested = &(*nested)[key];
  (*nested)["vocab_size"] = rows;
  if (!path.empty() && source.contains("vocab_size")) config["vocab_size"] = rows;
  return config;
}

}  // namespace clp_transfer
