// A SentencePiece BPE model (tokenizer.model, model_type bpe) as extend's bpe_model, and the
// pieces an extension appends to it.
//
// SentencePiece's BPE encoder starts from the characters of the normalised text ("▁" for each
// space, one before the text when add_dummy_prefix) and repeatedly joins the adjacent pair whose
// concatenation is a piece of the highest score, the leftmost on ties; a character no piece
// spells becomes the unknown piece, or its UTF-8 bytes' <0xNN> pieces with byte fallback. It has
// no merge list: every split of a piece into two pieces is a merge, ranked by the piece's score.
// As a bpe_model that is Hugging Face's conversion (transformers' SentencePieceExtractor): the
// pieces in descending score (ties in id order), each piece's splits into two pieces in
// (left id, right id) order, the whole text one pre-token.
//
// An extension appends its new pieces after the model's own, so every old piece keeps its id,
// with scores below every old piece's, descending in the order of the merges that make them: a
// new piece is joined only after every old one, and after the new pieces it is made from.
// What extend does not reproduce is refused naming the file: another model type (Unigram is
// unigram_model.hpp's), a normaliser
// other than identity (NFKC's precompiled map, rules), "▁" as a suffix, spaces not escaped,
// user-defined and unused pieces (SentencePiece matches the former before BPE and splits the
// latter again).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/characters.hpp"
#include "extend/extension.hpp"
#include "extend/refusal.hpp"
#include "io/tokenizer/sentencepiece.hpp"

namespace clp_transfer::extend {

/// Why extend cannot reproduce the SentencePiece model `model` (see the file's comment; a
/// Unigram model: unigram_model.hpp), or nothing when it can.
inline std::optional<std::string> sentencepiece_refusal(const io::sentencepiece_model& model) {
  if (model.model_type != "bpe" && model.model_type != "unigram")
    return "of type " + model.model_type + " cannot be extended: extend appends pieces to BPE and Unigram models";
  if (model.precompiled_charsmap || model.normalization_rules ||
      !(model.normalizer_name.empty() || model.normalizer_name == "identity"))
    return "normalises text (" + (model.normalizer_name.empty() ? std::string("custom rules") : model.normalizer_name) +
           "): extend reproduces only the identity normaliser";
  if (!model.escape_whitespaces) return std::string("does not escape spaces as '\xE2\x96\x81', which extend requires");
  if (model.treat_whitespace_as_suffix)
    return std::string("puts '\xE2\x96\x81' at the end of pieces, which extend does not support");
  if (std::none_of(model.pieces.begin(), model.pieces.end(),
                   [](const io::sentencepiece_piece& p) { return p.type == io::piece_type::unknown; }))
    return std::string("has no unknown piece, which SentencePiece needs to load a model");
  for (std::size_t id = 0; id < model.pieces.size(); ++id) {
    const io::piece_type type = model.pieces[id].type;
    if (type == io::piece_type::user_defined || type == io::piece_type::unused)
      return std::string("has ") + io::piece_type_name(type) + " piece " + quoted_token(model.pieces[id].piece) +
             " (id " + std::to_string(id) + "), which extend does not support yet";
  }
  return std::nullopt;
}

/// The same, for a model that must also be a BPE one.
inline std::optional<std::string> sentencepiece_bpe_refusal(const io::sentencepiece_model& model) {
  if (model.model_type != "bpe") return "of type " + model.model_type + ", not BPE";
  return sentencepiece_refusal(model);
}

/// Refuses a SentencePiece model (BPE or Unigram) whose encoding extend does not reproduce,
/// naming `origin`.
inline void check_sentencepiece(const io::sentencepiece_model& model, const std::string& origin) {
  if (const auto why = sentencepiece_refusal(model)) unsupported(origin, "SentencePiece model " + *why);
}

/// How a SentencePiece model `spec` turns text into what its model encodes: "▁" for a space,
/// one before the text with the dummy prefix, the whole text one piece; `kind` ("BPE",
/// "Unigram") for the description.
inline text_rules sentencepiece_text_rules(const io::sentencepiece_model& spec, const std::string& kind) {
  text_rules rules;
  rules.spelling = symbol_spelling::metaspace;
  rules.prepend = spec.add_dummy_prefix ? space_mark_prepend::always : space_mark_prepend::never;
  rules.split_at_space_marks = false;
  rules.description = "SentencePiece " + kind + ", '\xE2\x96\x81' for spaces, whole text";
  return rules;
}

/// The bpe_model SentencePiece's BPE encoder behaves as, for `pieces` (id = position) under
/// `spec`'s normaliser and trainer options (see the file's comment).
inline bpe_model sentencepiece_bpe_model(const std::vector<io::sentencepiece_piece>& pieces,
                                         const io::sentencepiece_model& spec) {
  bpe_model model;
  model.tokens.reserve(pieces.size());
  std::unordered_map<std::string, token_id> normal;  // the pieces BPE joins and splits
  for (std::size_t id = 0; id < pieces.size(); ++id) {
    model.tokens.push_back(pieces[id].piece);
    if (pieces[id].type == io::piece_type::normal) normal.emplace(pieces[id].piece, static_cast<token_id>(id));
    if (pieces[id].type == io::piece_type::unknown) model.unknown = static_cast<token_id>(id);
  }
  std::vector<token_id> by_score;
  for (const auto& [piece, id] : normal) by_score.push_back(id);
  std::sort(by_score.begin(), by_score.end(), [&](token_id a, token_id b) {
    const float sa = pieces[std::size_t(a)].score, sb = pieces[std::size_t(b)].score;
    return sa != sb ? sa > sb : a < b;
  });
  // A split can join two pieces only where both halves have the length of some normal piece:
  // checked first, so that a piece no split of which joins two pieces costs its length, not its
  // length squared.
  std::vector<bool> has_length;
  for (const auto& [piece, id] : normal) {
    if (piece.size() >= has_length.size()) has_length.resize(piece.size() + 1, false);
    has_length[piece.size()] = true;
  }
  std::vector<std::pair<token_id, token_id>> splits;
  for (const token_id id : by_score) {
    const std::string& piece = pieces[std::size_t(id)].piece;
    splits.clear();
    for (const text_character& c : decode_characters(piece)) {
      if (c.offset == 0 || !has_length[c.offset] || !has_length[piece.size() - c.offset]) continue;
      const auto left = normal.find(piece.substr(0, c.offset));
      const auto right = normal.find(piece.substr(c.offset));
      if (left != normal.end() && right != normal.end()) splits.emplace_back(left->second, right->second);
    }
    std::sort(splits.begin(), splits.end());
    model.merges.insert(model.merges.end(), splits.begin(), splits.end());
  }
  model.byte_fallback = spec.byte_fallback;
  model.rules = sentencepiece_text_rules(spec, "BPE");
  return model;
}

/// The pieces `extension` appends to `source`'s, in id order (its new ids follow the source's
/// pieces): normal pieces whose scores are below every source piece's and descend in the order
/// the extension's merges first make them; a new character, which no merge makes, scores below
/// them all. Called on the extension as extend_bpe made it (one new merge a new piece), before
/// with_sentencepiece_merges.
/// @throws clp::invalid_argument naming `origin` when the scores cannot be told apart in float32
inline std::vector<io::sentencepiece_piece> appended_pieces(const io::sentencepiece_model& source,
                                                            const bpe_extension& extension, const std::string& origin) {
  double lowest = 0;
  for (const io::sentencepiece_piece& piece : source.pieces) lowest = std::min(lowest, double(piece.score));
  const bpe_table& table = extension.table;
  const std::vector<std::pair<token_id, token_id>>& merges = table.model().merges;
  std::unordered_map<token_id, std::size_t> place;  // new piece -> its place among the pieces merges make
  for (std::size_t rank = extension.source_merges; rank < merges.size(); ++rank)
    if (const auto made = table.merge(merges[rank].first, merges[rank].second))
      place.emplace(made->second, place.size());
  const std::size_t made_count = place.size();
  std::vector<io::sentencepiece_piece> out;
  out.reserve(extension.written.size());
  for (const written_token& token : extension.written) {
    const auto found = place.find(token.id);
    const double offset = double(found != place.end() ? found->second : made_count);
    const auto score = static_cast<float>(lowest - 1 - offset);
    if (double(score) != lowest - 1 - offset)
      unsupported(origin, "SentencePiece model scores reach " + std::to_string(lowest) +
                              ": the new pieces' scores below them cannot be told apart in float32");
    out.push_back({table.token(token.id), score, io::piece_type::normal});
  }
  return out;
}

/// The pieces of `source` followed by `appended`: the extended model's, for its encoder.
inline std::vector<io::sentencepiece_piece> joined_pieces(const io::sentencepiece_model& source,
                                                          const std::vector<io::sentencepiece_piece>& appended) {
  std::vector<io::sentencepiece_piece> pieces = source.pieces;
  pieces.insert(pieces.end(), appended.begin(), appended.end());
  return pieces;
}

/// `extension` with the merges SentencePiece's encoder uses for the extended model (`extended`:
/// the source's pieces, then appended_pieces'): sentencepiece_bpe_model's list for them, in
/// which each new piece joins from every split of it into two normal pieces at its score, and an
/// old piece joins from a split that holds a new piece at its own score. Where the source's
/// merges are that list for the source's pieces (a tokenizer.json converted from the model, or
/// the model itself), the table then encodes as the extended model does, and a tokenizer.json
/// written from it encodes as the extended model beside it. The writers write the whole list
/// (merges_rewritten): the source's merges in it keep their order.
inline bpe_extension with_sentencepiece_merges(bpe_extension extension,
                                               const std::vector<io::sentencepiece_piece>& extended,
                                               const io::sentencepiece_model& spec) {
  bpe_model model = extension.table.model();
  model.merges = sentencepiece_bpe_model(extended, spec).merges;
  extension.table = bpe_table(std::move(model));
  extension.merges_rewritten = true;
  return extension;
}

/// Whether `model` (read from a tokenizer.json) has the merges sentencepiece_bpe_model gives
/// `derived`'s pieces, in the same order: the tokenizer.json was converted from that model.
inline bool same_merges(const bpe_model& model, const bpe_model& derived) {
  if (model.merges.size() != derived.merges.size()) return false;
  for (std::size_t r = 0; r < model.merges.size(); ++r) {
    const auto [a, b] = model.merges[r];
    const auto [c, d] = derived.merges[r];
    if (model.tokens[std::size_t(a)] != derived.tokens[std::size_t(c)] ||
        model.tokens[std::size_t(b)] != derived.tokens[std::size_t(d)])
      return false;
  }
  return true;
}

}  // namespace clp_transfer::extend
