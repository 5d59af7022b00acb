// What an extension costs and gains, on probe texts: drift, the share of words of a text in the
// source's language whose ids change; and fertility, the tokens per word of a text under a model.
// A text is split into words at whitespace; each word is encoded as it stands in running text,
// with the space before it (which both supported spellings mark: 'Ġ', '▁'), through the
// tokenizer's pre-tokenizer and model. A table is a bpe_table or a unigram_table: anything with
// model().rules and encode(pre_token).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/characters.hpp"
#include "extend/pre_tokenizer.hpp"

namespace clp_transfer::extend {

/// The words of `text`: its runs of characters between whitespace (\s), in order.
/// @param[in] text  UTF-8 text
inline std::vector<std::string_view> probe_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t start = std::string_view::npos;
  for (const text_character& c : decode_characters(text)) {
    const bool space = is_whitespace(c.code_point);
    if (!space && start == std::string_view::npos) start = c.offset;
    if (space && start != std::string_view::npos) {
      words.push_back(text.substr(start, c.offset - start));
      start = std::string_view::npos;
    }
  }
  if (start != std::string_view::npos) words.push_back(text.substr(start));
  return words;
}

/// The pre-tokens of `word` as it stands in running text, after a space.
/// @param[in] rules  the tokenizer's text rules
/// @param[in] word   one word, without whitespace
inline std::vector<std::string> word_pieces(const text_rules& rules, std::string_view word) {
  return pre_tokens(" " + std::string(word), rules, false);
}

/// The ids of `word` as it stands in running text, pre-token by pre-token.
template <class Table>
std::vector<std::vector<token_id>> encode_word_pieces(const Table& table, std::string_view word) {
  std::vector<std::vector<token_id>> pieces;
  for (const std::string& piece : word_pieces(table.model().rules, word)) pieces.push_back(table.encode(piece));
  return pieces;
}

/// The ids of `word` as it stands in running text, after a space.
/// @param[in] table  the model
/// @param[in] word   one word, without whitespace
template <class Table>
std::vector<token_id> encode_word(const Table& table, std::string_view word) {
  std::vector<token_id> ids;
  for (const std::vector<token_id>& part : encode_word_pieces(table, word))
    ids.insert(ids.end(), part.begin(), part.end());
  return ids;
}

/// The ids of a whole text, as the tokenizer encodes it (without special tokens): its pre-tokens,
/// each encoded by the model. The text must hold no added token, which a tokenizer splits out
/// before its pre-tokenizer.
/// @param[in] table  the model
/// @param[in] text   UTF-8 text
template <class Table>
std::vector<token_id> encode_text(const Table& table, std::string_view text) {
  std::vector<token_id> ids;
  for (const std::string& piece : pre_tokens(text, table.model().rules, true)) {
    const std::vector<token_id> part = table.encode(piece);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

/// Drift of a text between two models.
struct drift_measure {
  std::size_t words = 0;    ///< words of the text
  std::size_t changed = 0;  ///< words whose ids differ
  double share() const { return words ? static_cast<double>(changed) / static_cast<double>(words) : 0.0; }
  /// The first few changed words, for a report.
  std::vector<std::string> examples;
};

/// How many words of `text` `after` encodes to other ids than `before` does.
/// @param[in] before  the source model
/// @param[in] after   the extended one (its text rules are the source's)
/// @param[in] text    a probe text in the source's language
/// @param[in] examples_kept  how many changed words to keep as examples
template <class Before, class After>
drift_measure drift(const Before& before, const After& after, std::string_view text, std::size_t examples_kept = 10) {
  drift_measure measure;
  for (const std::string_view word : probe_words(text)) {
    ++measure.words;
    if (encode_word(before, word) == encode_word(after, word)) continue;
    ++measure.changed;
    if (measure.examples.size() < examples_kept) measure.examples.emplace_back(word);
  }
  return measure;
}

/// Tokens per word of a text under a model.
struct fertility_measure {
  std::size_t words = 0, tokens = 0;
  double tokens_per_word() const { return words ? static_cast<double>(tokens) / static_cast<double>(words) : 0.0; }
};

/// The tokens `table` encodes the words of `text` into.
/// @param[in] table  a model
/// @param[in] text   a probe text
template <class Table>
fertility_measure fertility(const Table& table, std::string_view text) {
  fertility_measure measure;
  for (const std::string_view word : probe_words(text)) {
    ++measure.words;
    measure.tokens += encode_word(table, word).size();
  }
  return measure;
}

}  // namespace clp_transfer::extend
