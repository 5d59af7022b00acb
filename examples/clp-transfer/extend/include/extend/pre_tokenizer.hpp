// How a BPE tokenizer turns text into the pre-tokens its model encodes, in the spelling of its
// symbols, for the tokenizer.json layouts extend supports:
//   - byte-level: a ByteLevel pre-tokenizer with GPT-2's regular expression (GPT-2, the shipped
//     models), or a Split with Llama 3's or Qwen2's expression before a ByteLevel without one;
//     each byte of a pre-token is one symbol of GPT-2's 256-character alphabet;
//   - metaspace: spaces written '▁' by a normalizer (Llama 2: Prepend '▁', Replace ' '->'▁')
//     or a Metaspace pre-tokenizer; every character is a symbol.
//   - wordpiece: BERT's basic tokenizer (bert_text.hpp): normalised text split into words at
//     whitespace and punctuation; a WordPiece model encodes each word (wordpiece_model.hpp).
// Anything else (another expression, Digits, Punctuation, BERT's pre-tokenizer, a normalizer
// that changes text otherwise) is refused naming what, since extend could not tell which texts
// reach a new token. An NFC normalizer is accepted and not applied: texts are taken to be NFC.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "extend/bert_text.hpp"
#include "extend/characters.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

/// How a tokenizer writes the bytes of its symbols.
enum class symbol_spelling {
  byte_level,  ///< one character of GPT-2's alphabet per byte ('Ġ' is a space)
  metaspace,   ///< the text's own characters, a space written '▁' (U+2581)
  wordpiece,   ///< the text's own characters; a piece that continues a word starts "##"
};

/// The regular expression a byte-level tokenizer splits text with.
enum class split_rule {
  none,    ///< the whole text is one pre-token
  gpt2,    ///< 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  llama3,  ///< (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  qwen2,   ///< Llama 3's with \p{N} for \p{N}{1,3}: one digit a pre-token
};

/// Where a metaspace tokenizer puts a '▁' before a text's first character.
enum class space_mark_prepend {
  never,
  always,         ///< a Prepend normalizer: before every non-empty text
  unless_marked,  ///< a Metaspace pre-tokenizer: unless the text starts with '▁' already
};

/// How a tokenizer turns text into pre-tokens (see the file's comment).
struct text_rules {
  symbol_spelling spelling = symbol_spelling::byte_level;
  split_rule split = split_rule::none;
  /// byte_level: ByteLevel's add_prefix_space, a space before a text that does not start with one.
  bool add_prefix_space = false;
  /// metaspace: the '▁' before a text's start.
  space_mark_prepend prepend = space_mark_prepend::never;
  /// metaspace: a Metaspace pre-tokenizer with split, which starts a pre-token at every '▁'.
  bool split_at_space_marks = false;
  /// wordpiece: BERT's normaliser.
  bert_normalizer bert;
  /// What decided, for a report: "pre_tokenizer ByteLevel (GPT-2 expression)".
  std::string description;
};

inline const std::string space_mark = "\xE2\x96\x81";  // U+2581 '▁'

namespace detail {

/// The length of a contraction ('s 't 're 've 'm 'll 'd) at `i`, or 0.
/// @param[in] c            the text's characters
/// @param[in] ignore_case  (?i:...): 'S and 'LL count too
inline std::size_t contraction_at(const std::vector<text_character>& c, std::size_t i, bool ignore_case) {
  if (c[i].code_point != U'\'') return 0;
  const auto letter = [&](std::size_t k) -> char32_t {
    if (k >= c.size()) return 0;
    const char32_t x = c[k].code_point;
    return ignore_case && x >= U'A' && x <= U'Z' ? x + 32 : x;
  };
  const char32_t a = letter(i + 1), b = letter(i + 2);
  if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
  if ((a == U'r' || a == U'v') && b == U'e') return 3;
  if (a == U'l' && b == U'l') return 3;
  return 0;
}

/// The end of the run of characters from `i` for which `in_class` holds.
template <class Predicate>
std::size_t run_end(const std::vector<text_character>& c, std::size_t i, Predicate in_class) {
  while (i < c.size() && in_class(c[i].code_point)) ++i;
  return i;
}

/// \s+(?!\S) then \s+, from `i` (a whitespace character): the run, less its last character
/// when a non-space follows and the run is longer than one.
inline std::size_t whitespace_match(const std::vector<text_character>& c, std::size_t i) {
  const std::size_t end = run_end(c, i, is_whitespace);
  return end < c.size() && end - i >= 2 ? end - 1 : end;
}

/// GPT-2's expression at `i`: the end of the pre-token that starts there.
inline std::size_t gpt2_match(const std::vector<text_character>& c, std::size_t i) {
  if (const std::size_t n = contraction_at(c, i, false)) return i + n;
  const std::size_t j = c[i].code_point == U' ' && i + 1 < c.size() ? i + 1 : i;
  if (is_letter(c[j].code_point)) return run_end(c, j, is_letter);
  if (is_number(c[j].code_point)) return run_end(c, j, is_number);
  if (is_other(c[j].code_point)) return run_end(c, j, is_other);
  return whitespace_match(c, i);
}

inline bool is_line_break(char32_t x) { return x == U'\r' || x == U'\n'; }

/// Llama 3's (and, with `max_digits` 1, Qwen2's) expression at `i`.
inline std::size_t llama3_match(const std::vector<text_character>& c, std::size_t i, std::size_t max_digits) {
  if (const std::size_t n = contraction_at(c, i, true)) return i + n;
  const char32_t first = c[i].code_point;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!is_line_break(first) && !is_letter(first) && !is_number(first) && i + 1 < c.size() &&
      is_letter(c[i + 1].code_point))
    return run_end(c, i + 1, is_letter);
  if (is_letter(first)) return run_end(c, i, is_letter);
  if (is_number(first)) return std::min(run_end(c, i, is_number), i + max_digits);
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  const std::size_t j = first == U' ' && i + 1 < c.size() ? i + 1 : i;
  if (is_other(c[j].code_point)) return run_end(c, run_end(c, j, is_other), is_line_break);
  // \s*[\r\n]+: up to the last line break of the whitespace run.
  const std::size_t end = run_end(c, i, is_whitespace);
  for (std::size_t k = end; k > i; --k)
    if (is_line_break(c[k - 1].code_point)) return k;
  return whitespace_match(c, i);
}

}  // namespace detail

/// The pre-tokens of `text` under `rule`, as views into `text`, in order; they concatenate to
/// `text`. Bytes that are not UTF-8 count as letters (see class_of).
/// @param[in] text  any bytes
/// @param[in] rule  the expression
inline std::vector<std::string_view> split_text(std::string_view text, split_rule rule) {
  if (text.empty()) return {};
  if (rule == split_rule::none) return {text};
  const std::vector<text_character> c = decode_characters(text);
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < c.size();) {
    std::size_t end = rule == split_rule::gpt2 ? detail::gpt2_match(c, i)
                                               : detail::llama3_match(c, i, rule == split_rule::llama3 ? 3 : 1);
    if (end <= i) end = i + 1;  // every character is matched by some alternative: a safeguard
    const std::size_t from = c[i].offset, to = end < c.size() ? c[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
    i = end;
  }
  return pieces;
}

/// GPT-2's byte-level character for `byte`: the byte itself for the printable Latin-1 bytes
/// (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF), else U+0100 + its rank among the other 68 bytes.
inline std::string byte_level_character(unsigned char byte) {
  const auto self = [](unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
  if (self(byte)) return utf8_of(byte);
  unsigned rank = 0;
  for (unsigned b = 0; b < byte; ++b) rank += self(b) ? 0 : 1;
  return utf8_of(0x100 + rank);
}

/// `bytes` in `spelling`: byte_level maps every byte to its character; metaspace writes each
/// space '▁' and keeps everything else (the caller checks that `bytes` is UTF-8 first).
/// @param[in] bytes     what the symbols stand for
/// @param[in] spelling  the tokenizer's
inline std::string spell(std::string_view bytes, symbol_spelling spelling) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char byte : bytes) {
    if (spelling == symbol_spelling::byte_level)
      out += byte_level_character(static_cast<unsigned char>(byte));
    else if (byte == ' ')
      out += space_mark;
    else
      out += byte;
  }
  return out;
}

/// The pre-tokens the tokenizer encodes for `text`, each in its spelling, in order.
/// @param[in] text        UTF-8 text, as the tokenizer's model receives it
/// @param[in] rules       the tokenizer's
/// @param[in] text_start  whether `text` starts a text (a word inside running text does not):
///                        only there do add_prefix_space and a '▁' prepend apply
inline std::vector<std::string> pre_tokens(std::string_view text, const text_rules& rules, bool text_start) {
  std::vector<std::string> out;
  if (rules.spelling == symbol_spelling::wordpiece) return bert_words(text, rules.bert);
  if (rules.spelling == symbol_spelling::byte_level) {
    std::string prefixed;
    if (rules.add_prefix_space && text_start && !text.empty() && text.front() != ' ') {
      prefixed = " " + std::string(text);
      text = prefixed;
    }
    for (const std::string_view piece : split_text(text, rules.split)) out.push_back(spell(piece, rules.spelling));
    return out;
  }
  std::string marked = spell(text, rules.spelling);
  const bool starts_marked = marked.compare(0, space_mark.size(), space_mark) == 0;
  if (text_start && !marked.empty() &&
      (rules.prepend == space_mark_prepend::always ||
       (rules.prepend == space_mark_prepend::unless_marked && !starts_marked)))
    marked = space_mark + marked;
  if (!rules.split_at_space_marks) {
    if (!marked.empty()) out.push_back(std::move(marked));
    return out;
  }
  for (std::size_t from = 0; from < marked.size();) {
    std::size_t next = marked.find(space_mark, from + 1);
    if (next == std::string::npos) next = marked.size();
    out.push_back(marked.substr(from, next - from));
    from = next;
  }
  return out;
}

}  // namespace clp_transfer::extend
