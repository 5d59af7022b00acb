// The tokenizer files of a model folder: where its vocabulary is read from (tokenizer.json, else
// vocab.json), and which files an output model needs to be loadable with the new vocabulary.
#pragma once

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "io/errors.hpp"
#include "io/tokenizer_json.hpp"
#include "io/vocabulary.hpp"
#include "library_names.hpp"

namespace clp_transfer::io {

/// Reads the vocabulary of a model folder from tokenizer.json, or else vocab.json; throws
/// clp::malformed_file naming the folder when it has neither.
/// @param[in] folder  model folder
inline token_vocabulary read_vocabulary(const std::filesystem::path& folder) {
  if (std::filesystem::exists(folder / "tokenizer.json")) return read_tokenizer_json(folder / "tokenizer.json");
  if (std::filesystem::exists(folder / "vocab.json")) return read_vocab_json(folder / "vocab.json");
  malformed(folder, "no tokenizer.json or vocab.json to read the vocabulary from");
}

/// The tokenizer files present in `folder`, sorted by name: tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt and any *.model
/// (SentencePiece). An output model needs them to be loadable with its new vocabulary.
/// @param[in] folder  model folder
inline std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder) {
  static constexpr std::array<std::string_view, 5> names = {"tokenizer.json", "tokenizer_config.json",
                                                            "special_tokens_map.json", "vocab.json", "merges.txt"};
  std::error_code error;
  std::filesystem::directory_iterator items(folder, error);
  if (error) throw clp::io_error(about(folder), "cannot list: " + error.message());
  std::vector<std::filesystem::path> files;
  for (const auto& item : items) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file(error) &&
        (std::find(names.begin(), names.end(), name) != names.end() || item.path().extension() == ".model"))
      files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace clp_transfer::io
