// Which helper tokens an extension adds: all that the source lacks (the default), the first N of
// them in the helper's own order, or a list the caller gives. Tokens are compared by the bytes
// they stand for, as `--match bytes` compares them; the caller supplies the helper's tokens in
// its order (merge_rank_order below for a BPE helper; by score for SentencePiece).
#pragma once

#include <clp/token_bytes.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

/// The library's name for a model's spelling, for clp::token_bytes.
inline clp::token_spelling library_spelling(const bpe_model& model) {
  switch (model.rules.spelling) {
    case symbol_spelling::byte_level:
      return clp::token_spelling::byte_level;
    case symbol_spelling::wordpiece:
      return clp::token_spelling::wordpiece;
    case symbol_spelling::metaspace:
      break;
  }
  return clp::token_spelling::sentencepiece;
}

/// The bytes each of `ids` stands for in `model`'s spelling, in order.
/// @param[in] model  a model
/// @param[in] ids    ids of its tokens
inline std::vector<std::string> bytes_of_tokens(const bpe_model& model, const std::vector<token_id>& ids) {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const token_id id : ids)
    out.push_back(clp::token_bytes(model.tokens[static_cast<std::size_t>(id)], library_spelling(model)));
  return out;
}

/// The bytes of every token of `model`'s vocabulary: what a new token is compared against.
inline std::unordered_set<std::string> vocabulary_bytes(const bpe_model& model) {
  std::unordered_set<std::string> out;
  out.reserve(model.tokens.size());
  for (const std::string& token : model.tokens)
    if (!token.empty()) out.insert(clp::token_bytes(token, library_spelling(model)));
  return out;
}

/// A BPE model's tokens in the order its training made them: the tokens no merge makes (the
/// alphabet, and tokens only an added-token list or ignore_merges reaches) by id, then each
/// token by the rank of the first merge that makes it.
inline std::vector<token_id> merge_rank_order(const bpe_model& model) {
  std::vector<std::size_t> first_rank(model.tokens.size(), std::numeric_limits<std::size_t>::max());
  const auto made = [&](std::size_t rank) {
    const auto [left, right] = model.merges[rank];
    return model.tokens[static_cast<std::size_t>(left)] + model.tokens[static_cast<std::size_t>(right)];
  };
  std::unordered_map<std::string, token_id> ids;
  for (std::size_t id = 0; id < model.tokens.size(); ++id)
    if (!model.tokens[id].empty()) ids.emplace(model.tokens[id], static_cast<token_id>(id));
  for (std::size_t rank = 0; rank < model.merges.size(); ++rank) {
    std::size_t& slot = first_rank[static_cast<std::size_t>(ids.at(made(rank)))];
    slot = std::min(slot, rank);
  }
  std::vector<token_id> order;
  for (std::size_t id = 0; id < model.tokens.size(); ++id)
    if (!model.tokens[id].empty()) order.push_back(static_cast<token_id>(id));
  // Unmade tokens first by id, then made ones by rank (one merge makes one token).
  const auto key = [&](token_id id) {
    const std::size_t rank = first_rank[static_cast<std::size_t>(id)];
    return rank == std::numeric_limits<std::size_t>::max()
               ? std::pair<int, std::size_t>(0, static_cast<std::size_t>(id))
               : std::pair<int, std::size_t>(1, rank);
  };
  std::sort(order.begin(), order.end(), [&](token_id a, token_id b) { return key(a) < key(b); });
  return order;
}

/// Which tokens to add.
struct token_request {
  enum class kind {
    all_missing,  ///< every helper token the source lacks, in the helper's order
    first,        ///< the first `count` of those
    listed,       ///< exactly `listed`, in its order
  };
  kind which = kind::all_missing;
  std::size_t count = 0;            ///< first: how many, at least 1
  std::vector<std::string> listed;  ///< listed: the tokens, as bytes
  std::string origin = "--tokens";  ///< listed: where the list came from, for messages
};

/// The tokens to add, as bytes, in the order to add them.
/// @param[in] helper_order   the helper's tokens as bytes, in its order; specials excluded by the caller
/// @param[in] source_tokens  the bytes of every source token (vocabulary_bytes)
/// @param[in] request        which
/// @throws clp::invalid_argument: first with count 0 ("--add"); a listed token that is empty,
///         listed twice, or one the source has (naming request.origin)
inline std::vector<std::string> choose_tokens(const std::vector<std::string>& helper_order,
                                              const std::unordered_set<std::string>& source_tokens,
                                              const token_request& request) {
  std::vector<std::string> chosen;
  if (request.which == token_request::kind::listed) {
    std::unordered_set<std::string> seen;
    for (std::size_t i = 0; i < request.listed.size(); ++i) {
      const std::string& token = request.listed[i];
      const std::string where = "entry " + std::to_string(i + 1);
      if (token.empty()) unsupported(request.origin, where + " is empty");
      if (source_tokens.count(token))
        unsupported(request.origin, where + " " + quoted_token(token) + " is a token the source has");
      if (!seen.insert(token).second)
        unsupported(request.origin, where + " " + quoted_token(token) + " is listed twice");
      chosen.push_back(token);
    }
    return chosen;
  }
  if (request.which == token_request::kind::first && request.count == 0)
    unsupported("--add", "must be at least 1, not 0");
  std::unordered_set<std::string> seen;
  for (const std::string& token : helper_order) {
    if (request.which == token_request::kind::first && chosen.size() == request.count) break;
    if (token.empty() || source_tokens.count(token) || !seen.insert(token).second) continue;
    chosen.push_back(token);
  }
  return chosen;
}

}  // namespace clp_transfer::extend
