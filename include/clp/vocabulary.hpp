// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Vocabulary intersection: which target tokens also exist in the source vocabulary (eq. 2
/// copies their embeddings) and which must be synthesised (eq. 3), with the paper's Table 1
/// statistics. Tokens match by string, as in the paper, or by the bytes they stand for, so
/// that two model families that spell bytes differently (see <clp/token_bytes.hpp>) meet.

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/vocabulary/vocabulary_entries.hpp>
#include <clp/element_type.hpp>
#include <clp/token_bytes.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace clp {

/// How intersect_vocabularies decides that a target token is a source token.
enum class token_match {
  /// By string, as the paper does: "Ġhouse" and "▁house" differ.
  exact,
  /// By the bytes each token stands for in its own tokenizer's spelling
  /// (intersect_options::source_spelling, target_spelling; see clp::token_bytes): byte-level
  /// "Ġhouse", SentencePiece "▁house" and WordPiece "house" are all " house".
  bytes,
};

/// A target row that must take a source row, whatever the tokens' strings.
struct forced_pair {
  Index target_id = 0;
  Index source_id = 0;
};

struct intersect_options {
  /// Rows of the source embedding; every source id must be below it. -1: not checked.
  Index source_rows = -1;
  /// Rows of the helper (and output) embedding; every target id must be below it, and
  /// missing_ids covers [0, target_rows). -1: one past the largest target id.
  Index target_rows = -1;
  /// Optional: tokens are compared after this mapping (for example lower-casing). With
  /// token_match::exact it maps the token strings; with token_match::bytes it maps the bytes
  /// the tokens stand for. Empty: no mapping (the paper's exact string match).
  std::function<std::string(std::string_view)> normalize;
  /// By string (the paper, the default) or by the bytes the tokens stand for.
  token_match match = token_match::exact;
  /// How each vocabulary spells bytes; read only by token_match::bytes.
  token_spelling source_spelling = token_spelling::plain;
  token_spelling target_spelling = token_spelling::plain;
  /// false: an overlap without a shared token is an error (a transfer from it copies nothing).
  /// true: it is a result, for counting (every target row is then missing).
  bool allow_empty_overlap = false;
  /// Pairs decided before any matching: target row target_id takes source row source_id
  /// (special tokens matched by their role, say). A forced pair replaces the target token's
  /// match or adds one (also for a row no target token names); it counts as forced_matches.
  /// Each target id at most once; ids must fit source_rows and target_rows where those are
  /// given.
  std::vector<forced_pair> forced_pairs{};
};

}  // namespace clp

// The matching's steps, which read the options above.
#include <clp/detail/vocabulary/matching.hpp>

namespace clp {

/// Intersects two vocabularies: which target tokens take the row of which source token.
///
/// The source row of a target token t:
/// - token_match::exact without a normaliser (the paper): the source token spelled like t.
/// - with a key (token_match::bytes: the bytes a token stands for in its vocabulary's
///   spelling; a normaliser: its mapping, of the bytes under token_match::bytes):
///   1. the source token spelled like t, if it has t's key (an exact string match wins over
///      every other token with the same key);
///   2. else the lowest-id source token with t's key;
///   3. else the source token spelled like t, if any: a string both hold keeps its match even
///      when no source token has its key, so matching by bytes never matches fewer target
///      tokens than matching by string.
///   A string both vocabularies hold but that stands for different bytes in each takes, by
///   rule 2, the source token with its bytes: Llama 3's byte-level "¡" is the byte 0xA1 and
///   takes Llama 2's "<0xA1>", not Llama 2's "¡" (the character U+00A1, bytes C2 A1). This is
///   what makes a vocabulary respelled in another family's spelling match itself, id for id.
/// Every target token takes at most one source row; several target tokens may share one.
///
/// @param[in] source   source vocabulary (the large model's): a range of strings indexed by
///                     id, or a range of (string, id) pairs such as std::map or
///                     std::unordered_map<std::string, int>
/// @param[in] target   target vocabulary (the helper model's), same accepted shapes
/// @param[in] options  embedding row counts to check ids against, the match (exact or by
///                     bytes, with each vocabulary's spelling), an optional normaliser, and
///                     whether an empty overlap is a result
/// @return the overlapping (target id, source id) pairs sorted by target id, whether each was
///         an exact string match, the counts of exact and byte matches, the missing target ids
///         and the vocabulary sizes
/// @throws clp::invalid_argument for an empty vocabulary, a negative id, an id past its
///         matrix, two tokens sharing an id, a token listed twice (facts: argument "source" or
///         "target", row the id where it is one), a bad forced pair (argument
///         "forced_pairs"), or an empty overlap (unless options.allow_empty_overlap)
template <class SourceVocabulary, class TargetVocabulary>
vocabulary_overlap intersect_vocabularies(const SourceVocabulary& source, const TargetVocabulary& target,
                                          const intersect_options& options = {}) {
  const detail::checked_vocabulary source_checked = detail::checked_entries(source, "source", options.source_rows);
  // The target's own index only served its checks: freed here, before the matching.
  const auto target_entries = detail::checked_entries(target, "target", options.target_rows).entries;
  return detail::intersect_entries(source_checked, target_entries, options);
}

}  // namespace clp
