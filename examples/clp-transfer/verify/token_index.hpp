// A tokenizer's vocabulary looked up both ways, for the checks that start from an id (a special
// id of config.json, a row of a tensor) and ask which token it is.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/errors.hpp"

#include "io/tokenizer/vocabulary.hpp"
#include "verify/model_folder.hpp"

namespace clp_transfer::verify {

/// A vocabulary, token -> id and id -> token. Borrows the vocabulary it indexes.
class token_index {
 public:
  /// @param[in] view  a vocabulary and its file; view.vocabulary must not be null
  explicit token_index(const vocabulary_view& view) : file_(view.file), vocabulary_(*view.vocabulary) {
    by_id_.reserve(vocabulary_.ids.size());
    for (const auto& [token, id] : vocabulary_.ids) by_id_.emplace(id, &token);
  }

  /// The token with id `id`, or null when no token has it.
  const std::string* token_of(std::int64_t id) const {
    const auto found = by_id_.find(id);
    return found == by_id_.end() ? nullptr : found->second;
  }
  const io::token_vocabulary& vocabulary() const { return vocabulary_; }
  /// The file the vocabulary was read from.
  const std::filesystem::path& file() const { return file_; }
  /// Its name alone ("tokenizer.json"), for messages.
  std::string file_name() const { return file_.filename().string(); }

 private:
  std::filesystem::path file_;
  const io::token_vocabulary& vocabulary_;
  std::unordered_map<std::int64_t, const std::string*> by_id_;
};

/// "N token(s) ("TOKEN" id N, ...)" with up to three examples, lowest ids first, for findings
/// about many tokens.
/// @param[in] tokens  (id, token) pairs
inline std::string token_examples(std::vector<std::pair<std::int64_t, std::string>> tokens) {
  std::sort(tokens.begin(), tokens.end());
  std::string text = std::to_string(tokens.size()) + (tokens.size() == 1 ? " token" : " tokens") + " (";
  for (std::size_t i = 0; i < tokens.size() && i < 3; ++i)
    text += (i ? ", " : "") + io::quoted_name(tokens[i].second) + " id " + std::to_string(tokens[i].first);
  return text + (tokens.size() > 3 ? ", ...)" : ")");
}

}  // namespace clp_transfer::verify
