// A WordPiece model (BERT's vocab.txt, or a tokenizer.json whose model is WordPiece) for extend:
// its encoder, and the extension that appends word-start and "##" continuation pieces.
//
// The encoder is BERT's greedy longest-match-first over one word of the basic tokenizer
// (bert_text.hpp): from the word's start, the longest prefix that is a piece; from each later
// position, the longest "##" + rest prefix that is a piece; a word longer than
// max_input_chars_per_word characters, or with a position no piece matches, is the unknown piece
// alone. A pre-token handed to encode that starts "##" is read as the rest of a word after a
// boundary (BERT's pre-tokenizer never makes one: '#' is punctuation): that is how a
// continuation piece's own text is encoded (the mean of its pieces, new_rows.hpp).
//
// WordPiece has no merges and no scores: a piece is reachable when greedy matching arrives at a
// position from which it is the longest match. A helper token that starts a word (" haus": 'Ġ'
// or '▁' in the helper, or a WordPiece helper's piece without "##") becomes the word-start piece
// "haus", which greedy matching emits for the word that is exactly its text (the longest prefix
// of a word is the word). One that does not ("ung") becomes the continuation piece "##ung",
// which is emitted wherever a word's greedy split has a boundary right before its text and its
// text ends the word; extend requires one such word made of a one-character word-start piece of
// the source and the text ("a" + "ung": greedy takes "a" when no longer word-start piece is a
// prefix of "aung", then "##ung", the whole rest), finds the first in id order, and leaves the
// piece out when there is none. A piece whose text the basic tokenizer would change (lowercase,
// accents) or split (whitespace, punctuation, a CJK character), or longer than
// max_input_chars_per_word, can never be emitted and is left out with the reason. New pieces
// change the encoding of old words only where they make a longer greedy match (drift.hpp
// measures it on the probe); leaving an unreachable piece out never makes another unreachable,
// since it only takes a match away.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bert_text.hpp"
#include "extend/bpe_model.hpp"
#include "extend/characters.hpp"
#include "extend/extension.hpp"
#include "extend/pre_tokenizer.hpp"
#include "extend/read_bpe_model.hpp"

namespace clp_transfer::extend {

/// The prefix of a piece that continues a word.
inline const std::string continuation_prefix = "##";

/// A WordPiece model as extend encodes with it.
struct wordpiece_model {
  /// id -> piece ("" for an unused id), the unknown piece, the text rules (spelling wordpiece),
  /// and the ids the tokenizer uses outside its vocabulary; no merges.
  bpe_model vocabulary;
  std::size_t max_input_chars_per_word = 100;
};

/// A wordpiece_model with its index and encoder; pieces are added at the end only.
class wordpiece_table {
 public:
  explicit wordpiece_table(wordpiece_model model) : model_(std::move(model)) {
    for (std::size_t id = 0; id < model_.vocabulary.tokens.size(); ++id)
      if (!model_.vocabulary.tokens[id].empty()) ids_.emplace(model_.vocabulary.tokens[id], static_cast<token_id>(id));
  }

  /// The vocabulary: pieces, unknown piece and text rules (what drift.hpp reads).
  const bpe_model& model() const { return model_.vocabulary; }
  std::size_t max_input_chars_per_word() const { return model_.max_input_chars_per_word; }
  const std::string& token(token_id id) const { return model_.vocabulary.tokens[std::size_t(id)]; }
  std::optional<token_id> id(std::string_view piece) const {
    const auto it = ids_.find(std::string(piece));
    return it == ids_.end() ? std::nullopt : std::optional<token_id>(it->second);
  }
  token_id size() const { return static_cast<token_id>(model_.vocabulary.tokens.size()); }

  /// Adds `piece` (not in the vocabulary, not empty) with id `id` (past every id in use).
  void add_piece(std::string piece, token_id id) {
    auto& tokens = model_.vocabulary.tokens;
    if (tokens.size() <= std::size_t(id)) tokens.resize(std::size_t(id) + 1);
    ids_.emplace(piece, id);
    tokens[std::size_t(id)] = std::move(piece);
  }

  /// The ids greedy longest-match gives the word `pre_token` (see the file's comment).
  std::vector<token_id> encode(std::string_view pre_token) const {
    const bool continues = pre_token.size() > continuation_prefix.size() &&
                           pre_token.compare(0, continuation_prefix.size(), continuation_prefix) == 0;
    const std::string_view word = continues ? pre_token.substr(continuation_prefix.size()) : pre_token;
    const std::vector<text_character> characters = decode_characters(word);
    const std::size_t n = characters.size();
    const auto unknown = [&] {
      return model_.vocabulary.unknown ? std::vector<token_id>{*model_.vocabulary.unknown} : std::vector<token_id>{};
    };
    if (n == 0) return {};
    if (n > model_.max_input_chars_per_word) return unknown();
    const auto offset = [&](std::size_t c) { return c < n ? characters[c].offset : word.size(); };
    std::vector<token_id> out;
    std::string key;
    for (std::size_t start = 0; start < n;) {
      std::size_t end = n;
      std::optional<token_id> found;
      for (; end > start; --end) {
        key.assign(start > 0 || continues ? continuation_prefix : std::string());
        key.append(word.substr(offset(start), offset(end) - offset(start)));
        if ((found = id(key))) break;
      }
      if (!found) return unknown();
      out.push_back(*found);
      start = end;
    }
    return out;
  }

 private:
  wordpiece_model model_;
  std::unordered_map<std::string, token_id> ids_;
};

namespace detail {

/// The source's one-character word-start pieces whose character can begin a word another
/// character continues (not punctuation, not a CJK ideograph), in id order: the words that
/// reach a continuation piece start with one of them.
inline std::vector<token_id> one_character_starts(const wordpiece_table& table) {
  std::vector<token_id> out;
  const text_rules& rules = table.model().rules;
  for (token_id id = 0; id < table.size(); ++id) {
    const std::string& piece = table.token(id);
    const std::vector<text_character> c = decode_characters(piece);
    if (c.size() != 1 || c[0].code_point == not_a_character || is_whitespace(c[0].code_point) ||
        is_bert_punctuation(c[0].code_point) || (rules.bert.chinese_characters && is_bert_chinese(c[0].code_point)))
      continue;
    if (bert_words(piece, rules.bert) == std::vector<std::string>{piece}) out.push_back(id);
  }
  return out;
}

}  // namespace detail

/// A word in which greedy longest-match emits the continuation piece `id` (text `text`): the
/// first of `starts` (one_character_starts) whose character before `text` the basic tokenizer
/// keeps as one word and the encoder splits into that character and `id`; none when there is no
/// such word.
inline std::optional<std::string> continuation_word(const wordpiece_table& table, std::string_view text, token_id id,
                                                    const std::vector<token_id>& starts) {
  for (const token_id start : starts) {
    std::string word = table.token(start) + std::string(text);
    if (table.encode(word) != std::vector<token_id>{start, id}) continue;
    if (bert_words(word, table.model().rules.bert) == std::vector<std::string>{word}) return word;
  }
  return std::nullopt;
}

/// Extends `source` by `new_tokens` (their bytes: a leading space marks a word's start, in the
/// order their ids are given out, from first_unused_id); see the file's comment. The
/// extension's table holds the pieces, no merges.
inline bpe_extension extend_wordpiece(const wordpiece_model& source, const std::vector<std::string>& new_tokens) {
  wordpiece_table scratch(source);
  const std::vector<token_id> starts = detail::one_character_starts(scratch);
  const bert_normalizer& bert = source.vocabulary.rules.bert;
  std::vector<std::string> present;
  std::vector<left_out_token> left_out;
  struct candidate {
    std::string bytes, piece, text;
    token_id id;
  };
  std::vector<candidate> candidates;
  token_id next = first_unused_id(source.vocabulary);
  for (const std::string& bytes : new_tokens) {
    const bool starts_word = !bytes.empty() && bytes.front() == ' ';
    const std::string text = starts_word ? bytes.substr(1) : bytes;
    if (text.empty()) {
      left_out.push_back({bytes, bytes.empty() ? "is empty" : "is a space, which BERT's pre-tokenizer removes"});
      continue;
    }
    if (!is_utf8(text)) {
      left_out.push_back({bytes, "is not whole UTF-8 characters, which a WordPiece vocabulary cannot spell"});
      continue;
    }
    const std::vector<std::string> words = bert_words(text, bert);
    if (words.size() != 1) {
      left_out.push_back({bytes,
                          "spans a boundary of BERT's pre-tokenizer (whitespace, punctuation or a CJK "
                          "character), so no word is its text"});
      continue;
    }
    if (words.front() != text) {
      left_out.push_back({bytes, "is not what BERT's normaliser leaves of it (" + quoted_token(words.front()) +
                                     "; lowercase or accents stripped), so no word is its text"});
      continue;
    }
    if (!starts_word) {
      const char32_t first = decode_characters(text).front().code_point;
      if (is_bert_punctuation(first) || (bert.chinese_characters && is_bert_chinese(first))) {
        left_out.push_back({bytes,
                            "is punctuation or a CJK character, which BERT's pre-tokenizer makes a word of "
                            "its own: it never continues a word"});
        continue;
      }
    }
    if (decode_characters(text).size() > source.max_input_chars_per_word) {
      left_out.push_back({bytes, "is longer than max_input_chars_per_word (" +
                                     std::to_string(source.max_input_chars_per_word) +
                                     " characters): such a word is the unknown piece"});
      continue;
    }
    std::string piece = starts_word ? text : continuation_prefix + text;
    if (scratch.id(piece)) {
      present.push_back(bytes);
      continue;
    }
    scratch.add_piece(piece, next);
    candidates.push_back({bytes, std::move(piece), text, next++});
  }
  // Reachability in the model with every candidate: a piece left out only takes a match away,
  // so what is reachable here stays reachable without the others.
  bpe_model grown = source.vocabulary;
  bpe_table table(std::move(grown));
  std::vector<written_token> written;
  token_id id = first_unused_id(source.vocabulary);
  for (const candidate& c : candidates) {
    const bool starts_word = c.piece.size() == c.text.size();
    const bool reached = starts_word ? scratch.encode(c.text) == std::vector<token_id>{c.id}
                                     : continuation_word(scratch, c.text, c.id, starts).has_value();
    if (!reached) {
      left_out.push_back({c.bytes, starts_word ? "is not what greedy longest-match makes of its own text"
                                               : "is not emitted after any one-character word start: a longer "
                                                 "word-start piece always takes its first characters"});
      continue;
    }
    table.add_token(c.piece, id);
    written.push_back({id++, c.bytes, true, false});
  }
  return {std::move(table), 0, false, std::move(written), std::move(present), std::move(left_out)};
}

/// The encoder of `source` extended by `extension`'s pieces (extend_wordpiece's, perhaps given
/// their ids again by in_helper_order).
inline wordpiece_table extended_wordpiece_table(wordpiece_model source, const bpe_extension& extension) {
  wordpiece_table table(std::move(source));
  for (const written_token& token : extension.written) table.add_piece(extension.table.token(token.id), token.id);
  return table;
}

}  // namespace clp_transfer::extend
