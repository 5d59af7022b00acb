// A BPE tokenizer model as plain data, and an index over it that encodes one pre-token exactly as
// Hugging Face tokenizers' BPE model does (tokenizers/src/models/bpe): each character of the
// pre-token is a symbol (its byte-fallback pieces <0xNN> when the vocabulary lacks it and the
// model has byte_fallback, else the unknown token, fused when fuse_unk); then the merge of lowest
// rank among adjacent symbols is applied, the leftmost first on ties, until none applies. With
// ignore_merges a pre-token that is a token is that token at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/characters.hpp"
#include "extend/pre_tokenizer.hpp"

namespace clp_transfer::extend {

using token_id = std::int32_t;

/// A BPE model as its tokenizer.json declares it.
struct bpe_model {
  /// id -> token string in the model's spelling; an id the vocabulary does not use (an added
  /// token's, or a gap) holds "" and is absent from the index.
  std::vector<std::string> tokens;
  /// The merges in rank order (rank = position), as the ids of their two sides.
  std::vector<std::pair<token_id, token_id>> merges;
  /// Whether tokenizer.json writes merges as ["a", "b"] pairs rather than "a b" strings.
  bool merges_as_pairs = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  std::optional<token_id> unknown;  ///< model.unk_token's id
  /// Ids the tokenizer uses outside model.vocab (added_tokens); new tokens must avoid them.
  std::vector<token_id> reserved_ids;
  text_rules rules;
};

/// An index over a bpe_model that can grow: token and merge lookups, and the encoder. Tokens and
/// merges are added at the end only, so a later merge never outranks an earlier one.
class bpe_table {
 public:
  /// The index of `model`, which it keeps.
  /// @param[in] model  as read by read_bpe_model; merges name tokens of model.tokens
  explicit bpe_table(bpe_model model) : model_(std::move(model)) {
    for (std::size_t id = 0; id < model_.tokens.size(); ++id)
      if (!model_.tokens[id].empty()) ids_.emplace(model_.tokens[id], static_cast<token_id>(id));
    for (std::size_t rank = 0; rank < model_.merges.size(); ++rank) index_merge(rank);
  }

  const bpe_model& model() const { return model_; }
  const std::string& token(token_id id) const { return model_.tokens[static_cast<std::size_t>(id)]; }
  std::optional<token_id> id(std::string_view token) const {
    const auto it = ids_.find(std::string(token));
    return it == ids_.end() ? std::nullopt : std::optional<token_id>(it->second);
  }
  /// The merge of `left` then `right`: its rank and the token it makes.
  std::optional<std::pair<std::size_t, token_id>> merge(token_id left, token_id right) const {
    const auto it = merges_.find(key(left, right));
    return it == merges_.end() ? std::nullopt : std::optional(it->second);
  }

  /// Adds `token` (not in the vocabulary, not empty) with id `id` (unused, past every token).
  void add_token(std::string token, token_id id) {
    if (model_.tokens.size() <= static_cast<std::size_t>(id)) model_.tokens.resize(static_cast<std::size_t>(id) + 1);
    ids_.emplace(token, id);
    model_.tokens[static_cast<std::size_t>(id)] = std::move(token);
  }
  /// Appends the merge `left` `right`, ranked after every other; their concatenation must be a
  /// token and the pair must have no merge yet. Returns the token it makes.
  token_id add_merge(token_id left, token_id right) {
    model_.merges.emplace_back(left, right);
    return index_merge(model_.merges.size() - 1);
  }
  /// Removes the tokens and merges added since the model had `tokens` ids and `merges` merges.
  void truncate(std::size_t tokens, std::size_t merges) {
    for (std::size_t rank = merges; rank < model_.merges.size(); ++rank)
      merges_.erase(key(model_.merges[rank].first, model_.merges[rank].second));
    model_.merges.resize(merges);
    for (std::size_t id = tokens; id < model_.tokens.size(); ++id) ids_.erase(model_.tokens[id]);
    model_.tokens.resize(tokens);
  }

  /// The symbols `pre_token` starts as, before any merge (see the file's comment).
  /// @param[in] pre_token  one pre-token in the model's spelling
  std::vector<token_id> initial_symbols(std::string_view pre_token) const;
  /// The tokens BPE's merges make of `pre_token`, ignore_merges left aside: what a longer word
  /// holding the same symbols starts from.
  std::vector<token_id> merged(std::string_view pre_token) const { return merge_symbols(initial_symbols(pre_token)); }
  /// The ids the model encodes `pre_token` as, as Hugging Face tokenizers does.
  std::vector<token_id> encode(std::string_view pre_token) const {
    if (model_.ignore_merges)
      if (const auto whole = id(pre_token)) return {*whole};
    return merged(pre_token);
  }
  /// Applies the merges to `symbols`, lowest rank first, the leftmost first on ties.
  std::vector<token_id> merge_symbols(std::vector<token_id> symbols) const;

 private:
  static std::uint64_t key(token_id left, token_id right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  /// Indexes merge `rank`; a pair listed twice takes its last rank, as Hugging Face's does.
  token_id index_merge(std::size_t rank) {
    const auto [left, right] = model_.merges[rank];
    const token_id made = ids_.at(token(left) + token(right));
    merges_[key(left, right)] = {rank, made};
    return made;
  }

  bpe_model model_;
  std::unordered_map<std::string, token_id> ids_;
  std::unordered_map<std::uint64_t, std::pair<std::size_t, token_id>> merges_;
};

inline std::vector<token_id> bpe_table::initial_symbols(std::string_view pre_token) const {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::vector<token_id> symbols;
  std::optional<token_id> pending_unknown;  // fuse_unk: one unknown for a run of unknown characters
  for (const text_character& c : decode_characters(pre_token)) {
    const std::string_view character = pre_token.substr(c.offset, c.size);
    std::optional<token_id> found = id(character);
    std::vector<token_id> bytes;
    if (!found && model_.byte_fallback) {
      for (const char byte : character) {
        const auto b = static_cast<unsigned char>(byte);
        const std::string piece = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
        if (const auto piece_id = id(piece)) bytes.push_back(*piece_id);
      }
      if (bytes.size() != character.size()) bytes.clear();
    }
    if (found) {
      if (pending_unknown) symbols.push_back(*pending_unknown);
      pending_unknown.reset();
      symbols.push_back(*found);
    } else if (!bytes.empty()) {
      // Hugging Face's order: byte pieces do not end a run of unknown characters.
      symbols.insert(symbols.end(), bytes.begin(), bytes.end());
    } else if (model_.unknown) {
      if (pending_unknown && !model_.fuse_unk) symbols.push_back(*pending_unknown);
      pending_unknown = model_.unknown;
    }
  }
  if (pending_unknown) symbols.push_back(*pending_unknown);
  return symbols;
}

inline std::vector<token_id> bpe_table::merge_symbols(std::vector<token_id> symbols) const {
  if (symbols.size() < 2) return symbols;
  struct candidate {
    std::size_t rank, position;
    token_id made;
    bool operator<(const candidate& other) const {  // the queue's top is the lowest rank, then position
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  const std::size_t n = symbols.size();
  std::vector<std::ptrdiff_t> previous(n), next(n);
  std::vector<bool> alive(n, true);
  std::priority_queue<candidate> queue;
  for (std::size_t i = 0; i < n; ++i) {
    previous[i] = static_cast<std::ptrdiff_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::ptrdiff_t>(i + 1) : -1;
    if (i + 1 < n)
      if (const auto m = merge(symbols[i], symbols[i + 1])) queue.push({m->first, i, m->second});
  }
  while (!queue.empty()) {
    const candidate top = queue.top();
    queue.pop();
    if (!alive[top.position] || next[top.position] < 0) continue;
    const auto right = static_cast<std::size_t>(next[top.position]);
    const auto current = merge(symbols[top.position], symbols[right]);
    if (!current || current->second != top.made) continue;  // the pair changed since it was queued
    symbols[top.position] = top.made;
    alive[right] = false;
    next[top.position] = next[right];
    if (next[right] >= 0) previous[static_cast<std::size_t>(next[right])] = static_cast<std::ptrdiff_t>(top.position);
    if (previous[top.position] >= 0) {
      const auto left = static_cast<std::size_t>(previous[top.position]);
      if (const auto m = merge(symbols[left], symbols[top.position])) queue.push({m->first, left, m->second});
    }
    if (next[top.position] >= 0)
      if (const auto m = merge(symbols[top.position], symbols[static_cast<std::size_t>(next[top.position])]))
        queue.push({m->first, top.position, m->second});
  }
  std::vector<token_id> out;
  for (std::ptrdiff_t i = 0; i >= 0; i = next[static_cast<std::size_t>(i)])
    out.push_back(symbols[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace clp_transfer::extend
