// BERT's basic tokenizer: how a WordPiece tokenizer turns text into the words its model encodes.
// The normaliser (Hugging Face's BertNormalizer, transformers' BasicTokenizer) and then the
// pre-tokenizer (BertPreTokenizer):
//   - clean text: NUL, U+FFFD and the other characters (general category C, but tab, newline and
//     carriage return) are removed, whitespace becomes a space;
//   - CJK ideographs (the ranges BERT names) become words of their own;
//   - lowercase: each character's own lowercase (no context: a final sigma stays 'σ'), then,
//     when accents are stripped, the canonical decomposition less its nonspacing marks (Mn);
//     with accents stripped alone, the decomposition only. Lowercasing comes first, as in
//     transformers and the JavaScript tokenizers (Hugging Face's Rust strips first; the two
//     differ on no character of the tests' texts);
//   - words are the runs between whitespace, and each punctuation character (ASCII's symbols
//     and Unicode's P*) is a word of its own.
// Not reproduced: canonical reordering of marks that are not Mn (a few Mc characters with a
// combining class), which only a text holding two such marks in a row would notice.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extend/bert_characters.hpp"
#include "extend/characters.hpp"

namespace clp_transfer::extend {

/// BERT's normaliser settings (BertNormalizer's, or a vocab.txt's tokenizer_config.json).
struct bert_normalizer {
  bool clean_text = true;
  bool chinese_characters = true;  ///< handle_chinese_chars / tokenize_chinese_chars
  bool lowercase = false;
  bool strip_accents = false;  ///< resolved: BertNormalizer's null means "as lowercase"
};

namespace detail {

template <std::size_t N>
bool in_ranges(const std::array<code_point_range, N>& ranges, char32_t c) {
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), std::uint32_t(c),
                                   [](std::uint32_t x, const code_point_range& r) { return x < r.first; });
  return it != ranges.begin() && std::uint32_t(c) <= std::prev(it)->last;
}

template <std::size_t N>
const code_point_mapping* mapping_of(const std::array<code_point_mapping, N>& table, char32_t c) {
  const auto it = std::lower_bound(table.begin(), table.end(), std::uint32_t(c),
                                   [](const code_point_mapping& m, std::uint32_t x) { return m.from < x; });
  return it != table.end() && it->from == std::uint32_t(c) ? &*it : nullptr;
}

template <std::size_t N>
void append_mapped(const std::array<code_point_mapping, N>& table, char32_t c, std::u32string& out) {
  const code_point_mapping* m = mapping_of(table, c);
  if (!m) {
    out += c;
    return;
  }
  for (const std::uint32_t x : m->to)
    if (x) out += char32_t(x);
}

/// c less its accents: nothing for a nonspacing mark, a Hangul syllable's jamo, or its
/// decomposition less marks.
inline void append_stripped(char32_t c, std::u32string& out) {
  if (in_ranges(nonspacing_mark_ranges, c)) return;
  if (c >= 0xAC00 && c <= 0xD7A3) {  // Unicode's Hangul syllable decomposition
    const std::uint32_t s = std::uint32_t(c) - 0xAC00;
    out += char32_t(0x1100 + s / (21 * 28));
    out += char32_t(0x1161 + (s % (21 * 28)) / 28);
    if (s % 28) out += char32_t(0x11A7 + s % 28);
    return;
  }
  append_mapped(stripped_decompositions, c, out);
}

}  // namespace detail

/// Whether BERT splits `c` off as a word of its own: ASCII's symbols or Unicode's punctuation.
inline bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  return detail::in_ranges(detail::punctuation_ranges, c);
}

/// Whether `c` is one of the CJK ideographs BERT makes words of their own.
constexpr bool is_bert_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/// The words BERT's basic tokenizer makes of `text` (see the file's comment), in order. Bytes
/// that are not UTF-8 are read as U+FFFD, which clean text removes (and which stays a letter
/// without it).
/// @param[in] text  any bytes
/// @param[in] n     the normaliser's settings
inline std::vector<std::string> bert_words(std::string_view text, const bert_normalizer& n) {
  std::u32string normal;
  normal.reserve(text.size());
  for (const text_character& tc : decode_characters(text)) {
    const char32_t c = tc.code_point == not_a_character ? char32_t(0xFFFD) : tc.code_point;
    if (n.clean_text) {
      const bool kept_space = c == U'\t' || c == U'\n' || c == U'\r';
      if (c == 0 || c == 0xFFFD || (!kept_space && detail::in_ranges(detail::other_ranges, c))) continue;
    }
    std::u32string one(1, is_whitespace(c) && n.clean_text ? U' ' : c);
    if (n.lowercase) {
      std::u32string lower;
      for (const char32_t x : one) detail::append_mapped(detail::lowercase_mappings, x, lower);
      one = std::move(lower);
    }
    if (n.strip_accents) {
      std::u32string stripped;
      for (const char32_t x : one) detail::append_stripped(x, stripped);
      one = std::move(stripped);
    }
    normal += one;
  }
  std::vector<std::string> words;
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (const char32_t c : normal) {
    if (is_whitespace(c)) {
      end_word();
    } else if (is_bert_punctuation(c) || (n.chinese_characters && is_bert_chinese(c))) {
      end_word();
      words.push_back(utf8_of(c));
    } else {
      word += utf8_of(c);
    }
  }
  end_word();
  return words;
}

}  // namespace clp_transfer::extend
