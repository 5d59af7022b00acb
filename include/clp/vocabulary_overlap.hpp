// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The vocabulary overlap: which target rows take which source row (eq. 2 copies them) and
/// which must be synthesised (eq. 3), with the paper's Table 1 statistics. What
/// intersect_vocabularies (<clp/vocabulary.hpp>) returns and what every kernel that writes a
/// new vocabulary's rows reads; its own header, so that those kernels need nothing of how the
/// overlap was found.

#include <clp/element_type.hpp>

#include <cstdint>
#include <vector>

namespace clp {

/// Why a target token takes the row of a source token.
enum class match_reason : std::uint8_t {
  exact,   ///< the two tokens are the same string
  bytes,   ///< the strings differ but stand for the same bytes (or have the same normalised key)
  forced,  ///< the caller said so: intersect_options::forced_pairs (special tokens by role, say)
};

/// The result of intersect_vocabularies; may also be built by hand (see unnamed_ids).
struct vocabulary_overlap {
  /// Overlapping tokens as parallel arrays, sorted by target id: target token
  /// target_ids[i] takes the row of source token source_ids[i]. Each target id appears once.
  std::vector<Index> target_ids;
  std::vector<Index> source_ids;
  /// Parallel to target_ids: why the pair was made.
  std::vector<match_reason> matched_by;
  /// Every target row in [0, target_rows) that is not in target_ids, ascending. This includes
  /// rows no token names (padding rows of an embedding matrix larger than its vocabulary).
  std::vector<Index> missing_ids;
  /// The missing rows no target token names, ascending (a subset of missing_ids): padding of
  /// an embedding matrix to a multiple of 64 or 128 rows, and holes in the target ids.
  /// Synthesis writes them like any missing row but counts them as padding_rows, apart from
  /// the weighting's diagnostics. Empty for an overlap built by hand: every missing row is
  /// then a token's.
  std::vector<Index> unnamed_ids;
  /// Tokens in each vocabulary (the paper's |Vs| and |Vt|).
  Index source_vocab_size = 0;
  Index target_vocab_size = 0;
  /// Pairs whose two tokens are the same string (match_reason::exact).
  Index exact_matches = 0;
  /// Pairs whose strings differ but whose bytes (or normalised keys) are the same.
  Index byte_matches = 0;
  /// Pairs the caller forced (intersect_options::forced_pairs), whatever the strings.
  /// exact_matches + byte_matches + forced_matches == size().
  Index forced_matches = 0;
  /// Target tokens whose string is also a source token: the overlap an exact match gives
  /// (the paper's |Vs ∩ Vt|), whichever match was asked for. With token_match::bytes it can
  /// exceed exact_matches: a string both vocabularies hold but that stands for different
  /// bytes in each (Llama 3's "¡" is the byte 0xA1, Llama 2's the character U+00A1) takes the
  /// row of the source token with its bytes when there is one.
  Index shared_strings = 0;

  /// |Vs ∩ Vt|.
  Index size() const { return static_cast<Index>(target_ids.size()); }
  /// Rows of the target embedding: overlapping plus missing.
  Index target_rows() const { return size() + static_cast<Index>(missing_ids.size()); }
  /// |Vs ∩ Vt| / |Vs|: the normalisation of the paper's Table 1.
  double share_of_source() const { return source_vocab_size ? double(size()) / double(source_vocab_size) : 0.0; }
  /// |Vs ∩ Vt| / |Vt|.
  double share_of_target() const { return target_vocab_size ? double(size()) / double(target_vocab_size) : 0.0; }
};

}  // namespace clp
