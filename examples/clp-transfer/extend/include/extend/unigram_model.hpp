// A SentencePiece Unigram model (tokenizer.model, model_type unigram) for extend: its encoder, and
// the extension that appends pieces scored so that each is what the encoder makes of its own text.
//
// The encoder is SentencePiece's (unigram_model.cc, the optimised Viterbi it runs by default): over
// the characters of the normalised text ("▁" for each space, one before the text when
// add_dummy_prefix), the path of pieces whose scores sum highest, with SentencePiece's arithmetic
// (each candidate summed in double, compared with the best kept so far as a float, kept rounded
// to float: ties between paths are common in an extended model, and this decides them as it
// does); at each start, in order of their length, every normal piece that starts there ends a
// candidate path, a later candidate replacing the kept one only when strictly higher; a
// start where no one-character piece begins gets the unknown piece over one character, scored 10
// below the lowest normal piece. The unknown pieces are then written as their UTF-8 bytes'
// <0xNN> pieces where the model has byte fallback.
//
// Unigram has no merges: any string is a piece that the lattice can take. A new piece p of text t
// is given the score V(t) + m, V(t) the best path's score of t under the model as extended so far
// and m a small margin (1e-4, or 1e-6 |V(t)| where that is larger), so the encoder now takes p for
// t alone. The pieces are scored shortest first, so that a longer piece is scored against the
// shorter new ones it could be made of; a piece the encoder still does not give for its text is
// left out. A piece also takes the place of a path inside a longer text where its span is
// segmented on its own and scores less than p: old texts can encode differently (drift.hpp
// measures it on the probe). What extend does not reproduce is refused as for BPE
// (sentencepiece_bpe.hpp: the normaliser, suffix spaces, user-defined and unused pieces).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/characters.hpp"
#include "extend/extension.hpp"
#include "extend/pre_tokenizer.hpp"
#include "extend/refusal.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "io/tokenizer/sentencepiece.hpp"

namespace clp_transfer::extend {

/// A Unigram model as extend encodes with it.
struct unigram_model {
  std::vector<std::string> tokens;  ///< id -> piece
  std::vector<float> scores;        ///< id -> score (log-probability)
  std::vector<bool> normal;         ///< id -> whether the lattice takes it (a normal piece)
  bool byte_fallback = false;
  std::optional<token_id> unknown;
  text_rules rules;
};

/// The unigram_model of a SentencePiece Unigram model (which sentencepiece_bpe_refusal lets
/// through but for its type).
inline unigram_model sentencepiece_unigram_model(const io::sentencepiece_model& spec) {
  unigram_model model;
  for (std::size_t id = 0; id < spec.pieces.size(); ++id) {
    const io::sentencepiece_piece& piece = spec.pieces[id];
    model.tokens.push_back(piece.piece);
    model.scores.push_back(piece.score);
    model.normal.push_back(piece.type == io::piece_type::normal);
    if (piece.type == io::piece_type::unknown) model.unknown = static_cast<token_id>(id);
  }
  model.byte_fallback = spec.byte_fallback;
  model.rules = sentencepiece_text_rules(spec, "Unigram");
  return model;
}

/// A unigram_model with its index and encoder; pieces are added at the end only.
class unigram_table {
 public:
  explicit unigram_table(unigram_model model) : model_(std::move(model)) {
    for (std::size_t id = 0; id < model_.tokens.size(); ++id) index(static_cast<token_id>(id));
  }

  const unigram_model& model() const { return model_; }
  const std::string& token(token_id id) const { return model_.tokens[std::size_t(id)]; }
  std::optional<token_id> id(std::string_view piece) const {
    const auto it = ids_.find(std::string(piece));
    return it == ids_.end() ? std::nullopt : std::optional<token_id>(it->second);
  }
  token_id size() const { return static_cast<token_id>(model_.tokens.size()); }

  /// Appends the normal piece `piece` (not in the model) with `score`; returns its id.
  token_id add_piece(std::string piece, float score) {
    model_.tokens.push_back(std::move(piece));
    model_.scores.push_back(score);
    model_.normal.push_back(true);
    index(size() - 1);
    return size() - 1;
  }

  /// The ids SentencePiece encodes the normalised `pre_token` as (see the file's comment).
  std::vector<token_id> encode(std::string_view pre_token) const {
    std::vector<token_id> out;
    for (const auto& [id, text] : best_path(pre_token).pieces) {
      if (!(model_.unknown && id == *model_.unknown && model_.byte_fallback)) {
        out.push_back(id);
        continue;
      }
      static constexpr char hex[] = "0123456789ABCDEF";
      for (const char byte : text) {
        const auto b = static_cast<unsigned char>(byte);
        const auto piece = this->id(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
        out.push_back(piece ? *piece : *model_.unknown);
      }
    }
    return out;
  }

  /// The best path's score of `pre_token`, summed in float32 as SentencePiece sums it.
  float best_score(std::string_view pre_token) const { return best_path(pre_token).score; }

 private:
  struct path {
    std::vector<std::pair<token_id, std::string_view>> pieces;
    float score = 0;
  };

  void index(token_id id) {
    const std::string& piece = model_.tokens[std::size_t(id)];
    ids_.emplace(piece, id);
    if (!model_.normal[std::size_t(id)]) return;
    lattice_.emplace(piece, id);
    longest_ = std::max(longest_, piece.size());
    lowest_ = std::min(lowest_, model_.scores[std::size_t(id)]);
  }

  /// The best path over the normalised `text` (see the file's comment).
  path best_path(std::string_view text) const;

  unigram_model model_;
  std::unordered_map<std::string, token_id> ids_;      // every piece
  std::unordered_map<std::string, token_id> lattice_;  // the normal pieces
  std::size_t longest_ = 0;                            // the longest normal piece, in bytes
  float lowest_ = std::numeric_limits<float>::max();   // the lowest normal piece's score
};

inline unigram_table::path unigram_table::best_path(std::string_view text) const {
  const std::vector<text_character> characters = decode_characters(text);
  const std::size_t n = characters.size();
  const auto offset = [&](std::size_t c) { return c < n ? characters[c].offset : text.size(); };
  struct node {
    float score = 0;
    std::ptrdiff_t from = -1;  // the character the best path's last piece starts at
    token_id id = -1;
  };
  std::vector<node> best(n + 1);
  best[0].from = 0;
  const float unknown_score = lowest_ - 10.0f;
  for (std::size_t start = 0; start < n; ++start) {
    if (best[start].from < 0) continue;  // unreachable (never: every start has an unknown node)
    const float before = best[start].score;
    // A piece's candidate is summed in double and compared with the float kept (SentencePiece's
    // arithmetic: its piece score is a double there); the unknown piece's in float.
    const auto offer = [&](std::size_t end, token_id id, double candidate) {
      if (best[end].from < 0 || candidate > double(best[end].score))
        best[end] = {static_cast<float>(candidate), std::ptrdiff_t(start), id};
    };
    bool single = false;
    for (std::size_t end = start + 1; end <= n && offset(end) - offset(start) <= longest_; ++end) {
      const auto it = lattice_.find(std::string(text.substr(offset(start), offset(end) - offset(start))));
      if (it == lattice_.end()) continue;
      offer(end, it->second, double(model_.scores[std::size_t(it->second)]) + double(before));
      single = single || end == start + 1;
    }
    if (!single && model_.unknown) offer(start + 1, *model_.unknown, double(unknown_score + before));
  }
  path result;
  result.score = best[n].score;
  for (std::size_t end = n; end > 0;) {
    const auto start = static_cast<std::size_t>(best[end].from);
    result.pieces.emplace_back(best[end].id, text.substr(offset(start), offset(end) - offset(start)));
    end = start;
  }
  std::reverse(result.pieces.begin(), result.pieces.end());
  return result;
}

/// An extension of a Unigram model: as a bpe_extension (its table holds the tokens, no merges;
/// written, already present and left out as extend_bpe records them), with each new piece's score.
struct unigram_extension {
  bpe_extension extension;
  std::unordered_map<std::string, float> scores;  ///< new piece -> its score
};

/// Extends `source` by `new_tokens` (their bytes, in the order their ids are given out, after the
/// source's pieces); see the file's comment.
inline unigram_extension extend_unigram(const unigram_model& source, const std::vector<std::string>& new_tokens) {
  bpe_model tokens_only;
  tokens_only.tokens = source.tokens;
  tokens_only.rules = source.rules;
  tokens_only.byte_fallback = source.byte_fallback;
  bpe_table ids(std::move(tokens_only));
  std::vector<written_token> written;
  std::vector<std::string> present;
  std::vector<left_out_token> left_out;
  std::vector<std::pair<std::string, std::string>> candidates;  // (bytes, piece)
  for (const std::string& bytes : new_tokens) {
    if (bytes.empty()) {
      left_out.push_back({bytes, "is empty"});
      continue;
    }
    if (!is_utf8(bytes)) {
      left_out.push_back({bytes,
                          "is not whole UTF-8 characters, which a '\xE2\x96\x81' tokenizer writes only as "
                          "single-byte <0xNN> pieces"});
      continue;
    }
    if (bytes.find(space_mark) != std::string::npos) {
      left_out.push_back({bytes, "holds '\xE2\x96\x81', which the source reads as a space"});
      continue;
    }
    const std::vector<std::string> pieces = pre_tokens(bytes, source.rules, false);
    if (pieces.size() != 1) {
      left_out.push_back({bytes, "spans a pre-tokenizer boundary (" + source.rules.description + ")"});
      continue;
    }
    if (ids.id(pieces.front())) {
      present.push_back(bytes);
      continue;
    }
    candidates.emplace_back(bytes, pieces.front());
  }
  // Scored shortest first (see the file's comment); ids in the order given.
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::size_t> length(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) length[i] = decode_characters(candidates[i].second).size();
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return length[a] < length[b]; });
  unigram_table table(source);
  std::unordered_map<std::string, float> scores;
  std::vector<bool> reached(candidates.size(), false);
  for (const std::size_t i : order) {
    const std::string& piece = candidates[i].second;
    const float before = table.best_score(piece);
    const float score = before + std::max(1e-4f, 1e-6f * std::fabs(before));
    const token_id id = table.add_piece(piece, score);
    reached[i] = table.encode(piece) == std::vector<token_id>{id};
    if (reached[i]) scores.emplace(piece, score);
  }
  auto next = static_cast<token_id>(source.tokens.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& [bytes, piece] = candidates[i];
    if (!reached[i]) {
      left_out.push_back({bytes, "is not what the Unigram encoder makes of its own text, whatever its score"});
      continue;
    }
    ids.add_token(piece, next);
    written.push_back({next++, bytes, true, false});
  }
  return {bpe_extension{std::move(ids), 0, false, std::move(written), std::move(present), std::move(left_out)},
          std::move(scores)};
}

/// The pieces `extension` (a Unigram extension's, perhaps given its ids again by
/// in_helper_order) appends to its source's, in id order, each with its score from `scores`.
inline std::vector<io::sentencepiece_piece> appended_unigram_pieces(
    const bpe_extension& extension, const std::unordered_map<std::string, float>& scores) {
  std::vector<written_token> written = extension.written;
  std::sort(written.begin(), written.end(), [](const written_token& a, const written_token& b) { return a.id < b.id; });
  std::vector<io::sentencepiece_piece> out;
  for (const written_token& token : written) {
    const std::string& piece = extension.table.token(token.id);
    out.push_back({piece, scores.at(piece), io::piece_type::normal});
  }
  return out;
}

/// The encoder of `source` extended by `appended` (appended_unigram_pieces).
inline unigram_table extended_unigram_table(unigram_model source,
                                            const std::vector<io::sentencepiece_piece>& appended) {
  unigram_table table(std::move(source));
  for (const io::sentencepiece_piece& piece : appended) table.add_piece(piece.piece, piece.score);
  return table;
}

}  // namespace clp_transfer::extend
