// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The bytes a token stands for, given how its tokenizer spells bytes as text. Model families
/// write the same bytes differently: byte-level BPE (GPT-2, Llama 3, Qwen) writes every byte
/// as one character of a 256-character alphabet (a space is `Ġ`); SentencePiece (Llama 2,
/// Gemma) writes a space as `▁` and a byte it has no piece for as `<0xNN>`; WordPiece (BERT)
/// marks the continuation of a word with `##`. Two tokens that stand for the same bytes are the
/// same token to a model, whatever their spelling: intersect_vocabularies matches them when
/// asked to (intersect_options::match = token_match::bytes).

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/vocabulary/spellings.hpp>
#include <clp/error.hpp>

#include <string>
#include <string_view>

namespace clp {

/// How a tokenizer writes bytes as token strings.
enum class token_spelling {
  /// The token is its own bytes (its UTF-8 string).
  plain,
  /// GPT-2's byte-level alphabet: each byte is one character. The printable Latin-1 bytes
  /// (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) are the character with that code point; the 68 others
  /// (0x00-0x20, 0x7F-0xA0, 0xAD), in increasing order, are U+0100, U+0101, ... U+0143. So
  /// `Ġ` (U+0120, the 33rd) is 0x20, a space, and `Ċ` (U+010A) is 0x0A, a newline.
  byte_level,
  /// SentencePiece: `▁` (U+2581) is a space; a piece `<0xNN>` (two hex digits) is the one byte
  /// 0xNN (byte fallback); every other character is itself.
  sentencepiece,
  /// WordPiece: `##x` continues a word and stands for "x"; a piece without `##` starts a
  /// word and stands for " x", with a leading space (see token_bytes).
  wordpiece,
};

/// The name of a spelling: "plain", "byte_level", "sentencepiece" or "wordpiece".
constexpr std::string_view token_spelling_name(token_spelling spelling) {
  switch (spelling) {
    case token_spelling::plain:
      return "plain";
    case token_spelling::byte_level:
      return "byte_level";
    case token_spelling::sentencepiece:
      return "sentencepiece";
    case token_spelling::wordpiece:
      return "wordpiece";
  }
  return "unknown";
}

/// The spelling named `name` (the names of token_spelling_name).
/// @throws clp::invalid_argument (argument "name") for any other name, listing the accepted ones
inline token_spelling token_spelling_from_name(std::string_view name) {
  for (token_spelling s :
       {token_spelling::plain, token_spelling::byte_level, token_spelling::sentencepiece, token_spelling::wordpiece})
    if (token_spelling_name(s) == name) return s;
  throw invalid_argument(
      error_facts::in("clp::token_spelling_from_name").with_argument("name"),
      "'" + std::string(name) + "' is no spelling (expected plain, byte_level, sentencepiece or wordpiece)");
}

/// Appends the bytes `token` stands for to `out`. No allocation beyond `out`'s own growth (none
/// once its capacity suffices): call it with one buffer for a whole vocabulary.
///
/// - plain: the token's own bytes.
/// - byte_level: one byte per character of GPT-2's alphabet (see token_spelling::byte_level).
/// - sentencepiece: `<0xNN>` is the byte 0xNN; otherwise `▁` becomes a space.
/// - wordpiece: `##x` is "x"; a word-initial piece "x" is " x". A word-initial piece is the
///   start of a word, and a word in running text follows a space: WordPiece's decoder joins
///   word-initial pieces with one. The other families say the same thing in their own
///   spelling, `▁house` and `Ġhouse` are " house", so " x" is what lets "house" meet them,
///   while "##house" meets the unmarked `house` they use inside a word. (At the very start of
///   a text the space is not there; SentencePiece adds one there too.) Special tokens such as
///   "[CLS]" follow the same rule; a program maps special tokens by their role, not their bytes.
///
/// A piece its spelling cannot read is the plain string, never an error: a `<0xZZ>` or `<0x4>`
/// in SentencePiece, a lone `##` in WordPiece, a character outside the byte alphabet (a raw
/// space, `▁`, `<｜...｜>` special tokens) or malformed UTF-8 in byte_level. An empty token is
/// empty in every spelling.
///
/// @param[in]     token     the token string, UTF-8, as its vocabulary writes it
/// @param[in]     spelling  its tokenizer's spelling
/// @param[in,out] out       the bytes are appended here
inline void append_token_bytes(std::string_view token, token_spelling spelling, std::string& out) {
  switch (spelling) {
    case token_spelling::byte_level:
      if (!detail::append_byte_level(token, out)) out.append(token);
      return;
    case token_spelling::sentencepiece:
      detail::append_sentencepiece(token, out);
      return;
    case token_spelling::wordpiece:
      detail::append_wordpiece(token, out);
      return;
    case token_spelling::plain:
      break;
  }
  out.append(token);
}

/// The bytes `token` stands for (see append_token_bytes, which reuses one buffer).
/// @param[in] token     the token string, UTF-8, as its vocabulary writes it
/// @param[in] spelling  its tokenizer's spelling
/// @return the bytes, in a std::string (not necessarily valid UTF-8: a byte-level token may be
///         part of a character)
inline std::string token_bytes(std::string_view token, token_spelling spelling) {
  std::string bytes;
  bytes.reserve(token.size() + 1);
  append_token_bytes(token, spelling, bytes);
  return bytes;
}

}  // namespace clp
