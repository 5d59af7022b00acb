// A tokenizer's vocabulary as the program reads it from any file: token -> id pairs collected
// once, refusing what an embedding could not follow (a negative id, an id held by two tokens, a
// token with two ids) as a malformed_file naming the file; and vocab.json, the simplest
// such file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// A tokenizer's vocabulary.
struct token_vocabulary {
  std::unordered_map<std::string, std::int64_t> ids;  ///< token string -> id
  /// Highest id + 1: the rows an embedding matrix needs to cover every token. Equals
  /// ids.size() unless the ids have gaps.
  std::int64_t size = 0;
};

namespace detail {

/// Collects token -> id pairs, refusing negative ids and ids held by two tokens.
class vocabulary_builder {
 public:
  /// @param[in] file  file being read, for messages
  explicit vocabulary_builder(std::filesystem::path file) : file_(std::move(file)) {}

  /// Adds `token` with `id`.
  /// @param[in] token      token string
  /// @param[in] id         its id, as found in the file
  /// @param[in] may_repeat true for added_tokens, which repeat vocabulary entries: a repeat
  ///                       with the same id is then accepted
  void add(const std::string& token, const nlohmann::json& id, bool may_repeat) {
    const auto value = as_int64(id);
    if (!value) malformed(file_, "token " + quoted_name(token) + " has id " + json_excerpt(id) + ", not an integer");
    if (*value < 0) malformed(file_, "token " + quoted_name(token) + " has negative id " + std::to_string(*value));
    // The vocabulary's size is the highest id + 1, which must itself be an int64.
    if (*value == std::numeric_limits<std::int64_t>::max())
      malformed(file_, "token " + quoted_name(token) + " has id " + std::to_string(*value) +
                           ", too large (ids must be below " + std::to_string(*value) + ")");
    const auto [entry, inserted] = vocabulary_.ids.emplace(token, *value);
    if (!inserted) {
      if (may_repeat && entry->second == *value) return;
      malformed(file_, (may_repeat ? "added token " : "token ") + quoted_name(token) + " has id " +
                           std::to_string(*value) + " but already has id " + std::to_string(entry->second));
    }
    if (const std::string* owner = claim(*value, &entry->first))
      malformed(file_, "tokens " + quoted_name(*owner) + " and " + quoted_name(token) + " both have id " +
                           std::to_string(*value));
    vocabulary_.size = std::max(vocabulary_.size, *value + 1);
  }

  /// The vocabulary; throws when nothing was added.
  token_vocabulary finish() {
    if (vocabulary_.ids.empty()) malformed(file_, "no vocabulary (no tokens found)");
    return std::move(vocabulary_);
  }

 private:
  /// Records `token` as the owner of `id`; returns the token that owned it already, or null.
  const std::string* claim(std::int64_t id, const std::string* token) {
    // Ids are mostly 0..n-1: a vector indexed by id, grown at most to a few times the tokens
    // seen so far (so that a stray id of 2^60 cannot allocate), is much cheaper than a hash
    // map. An id too large for it when it came stays in sparse_owners_.
    const auto index = static_cast<std::uint64_t>(id);
    if (index >= dense_owners_.size() && index < 4 * (vocabulary_.ids.size() + 1024))
      dense_owners_.resize(std::max<std::size_t>(index + 1, 2 * dense_owners_.size()));
    if (index < dense_owners_.size()) {
      const std::string*& owner = dense_owners_[index];
      if (!owner && !sparse_owners_.empty())
        if (const auto it = sparse_owners_.find(id); it != sparse_owners_.end()) return it->second;
      if (owner) return owner;
      owner = token;
      return nullptr;
    }
    const auto [owner, fresh] = sparse_owners_.emplace(id, token);
    return fresh ? nullptr : owner->second;
  }

  std::filesystem::path file_;
  token_vocabulary vocabulary_;
  // id -> key in vocabulary_: small ids in dense_owners_ (null where no token has it yet),
  // the others in sparse_owners_
  std::vector<const std::string*> dense_owners_;
  std::unordered_map<std::int64_t, const std::string*> sparse_owners_;
};

}  // namespace detail

/// Reads a `vocab.json`: one object token -> id (GPT-2 style tokenizers without
/// tokenizer.json).
/// @param[in] file  vocab.json
token_vocabulary read_vocab_json(const std::filesystem::path& file);

}  // namespace clp_transfer::io
