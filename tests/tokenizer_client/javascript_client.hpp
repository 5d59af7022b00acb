// Hugging Face's JavaScript tokenizers (@huggingface/tokenizers, pinned and fetched by
// tests/data/fetch_tokenizer_client.sh) as the tokenizer-client tests run them: tokenize.mjs
// under node, asked {"encode": [...], "decode": [...], "model": [...]} for a tokenizer.json's
// folder, answering the same keys.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/real_tokenizers.hpp"
#include "support/temp_dir.hpp"

namespace tokenizer_client {

inline const std::filesystem::path javascript_script =
    clp_test::data_dir.parent_path() / "tokenizer_client" / "tokenize.mjs";
inline const std::filesystem::path javascript_package =
    clp_test::data_dir / "fetched" / "tokenizers-js" / "package" / "dist" / "tokenizers.mjs";

/// `text` in single quotes for the shell.
inline std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The JavaScript client's answer to `request` for the tokenizer in `folder` (requires it to run).
inline nlohmann::json ask_javascript(const std::filesystem::path& folder, const nlohmann::json& request) {
  clp_test::temp_dir dir;
  clp_test::write_file(dir / "request.json", request.dump());
  const std::string command = "node " + shell_quoted(javascript_script.string()) + " " +
                              shell_quoted(javascript_package.string()) + " " + shell_quoted(folder.string()) + " " +
                              shell_quoted((dir / "request.json").string()) + " " +
                              shell_quoted((dir / "answer.json").string());
  REQUIRE(std::system(command.c_str()) == 0);
  return nlohmann::json::parse(clp_test::read_file(dir / "answer.json"));
}

}  // namespace tokenizer_client
