// The extension of a BPE model by new tokens, each reachable by construction. For each new token
// in the order given: its bytes are written in the source's spelling; the extended model as it
// stands encodes that text into pieces Q1..Qm; merges Q1+Q2, (Q1Q2)+Q3, ... are appended, each
// after every merge before it, and a prefix Q1..Qk that is not a token yet becomes one (an
// intermediate token). Then the encoder must give the token for its text, and each intermediate
// for its own; otherwise the token's additions are undone and it is left out with the reason.
//
// Appended merges rank after every merge the source and the earlier new tokens use, so encoding
// a text that was one token stays one token: every token written stays reachable. Text in the
// source's language may still encode differently where a new merge joins two of its pieces
// (drift.hpp measures it). Every id, string and merge of the source is kept.
#pragma once

#include <clp/token_bytes.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/characters.hpp"
#include "extend/drift.hpp"
#include "extend/pre_tokenizer.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

/// A token the extension wrote.
struct written_token {
  token_id id;
  std::string bytes;  ///< what it stands for
  /// Asked for; false for an intermediate, made so that an asked-for token can be reached.
  bool requested = false;
  /// A single character a metaspace source's alphabet lacked, now a symbol of its own.
  bool new_character = false;
};

/// An asked-for token the extension did not write, and why.
struct left_out_token {
  std::string bytes;
  std::string reason;
};

/// The extended model and what the extension did.
struct bpe_extension {
  bpe_table table;                ///< the extended model: the source's tokens and merges, then the new ones
  std::size_t source_merges = 0;  ///< merges of the source; the rest are new
  /// The table's merges are the whole list to write, the source's among them in their order, not
  /// the source's followed by the new ones (SentencePiece's order: with_sentencepiece_merges).
  bool merges_rewritten = false;
  std::vector<written_token> written;        ///< new tokens, in id order
  std::vector<std::string> already_present;  ///< asked for, but the source spells them already
  std::vector<left_out_token> left_out;

  std::size_t requested_count() const {
    return count([](const written_token& t) { return t.requested; });
  }
  std::size_t intermediate_count() const {
    return count([](const written_token& t) { return !t.requested; });
  }
  std::size_t new_character_count() const {
    return count([](const written_token& t) { return t.new_character; });
  }

 private:
  template <class Predicate>
  std::size_t count(Predicate predicate) const {
    std::size_t n = 0;
    for (const written_token& token : written) n += predicate(token) ? 1 : 0;
    return n;
  }
};

struct extension_options {
  /// Metaspace sources: a non-ASCII character the alphabet lacks becomes a symbol of its own (a
  /// new token, flagged new_character), so that tokens holding it can be made; texts holding
  /// it then encode it as that symbol rather than as byte-fallback pieces or the unknown token.
  /// ASCII characters are never added: the source's own language writes them.
  bool add_characters = true;
  /// --drift-budget: the words of a probe text in the source's language (drift.hpp's
  /// probe_words), and how many of them may encode to other ids than the source gives them. A
  /// token whose merges (or new characters) would take the changed words past that number is
  /// left out, with the reason; the tokens are tried in the order given, so the earlier ones
  /// spend the budget first. Empty: no budget.
  std::vector<std::string> drift_probe;
  std::size_t max_changed_words = 0;
};

namespace detail {

/// "a | b | c": pieces for a message, each quoted.
inline std::string joined_pieces(const bpe_table& table, const std::vector<token_id>& ids) {
  std::string text;
  for (const token_id id : ids) text += (text.empty() ? "" : " | ") + quoted_token(table.token(id));
  return text;
}

/// The probe words an extension may change, kept as the extended model encodes them, so that a
/// new token's effect is found by re-encoding only the words it can reach: appended merges rank
/// after every merge already there, so a word's pieces change only where a new merge's pair
/// stands side by side in them, a piece is a new token's whole text (ignore_merges), or the word
/// holds a new character. Each such word is encoded again in full.
class drift_guard {
 public:
  drift_guard(const bpe_table& table, std::vector<std::string> words, std::size_t max_changed)
      : words_(std::move(words)), max_changed_(max_changed) {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      pieces_.push_back(encode_word_pieces(table, words_[w]));
      source_ids_.push_back(flat(pieces_.back()));
      index(w);
      for (std::string& piece : word_pieces(table.model().rules, words_[w]))
        whole_pieces_[std::move(piece)].push_back(std::uint32_t(w));
    }
    changed_.assign(words_.size(), false);
  }

  std::size_t changed() const { return changed_count_; }
  std::size_t budget() const { return max_changed_; }

  /// How many words would have changed in all with `table` (the model with a candidate's
  /// additions), given the merges from rank `first_merge` on and the tokens `written` (texts,
  /// new characters among them) it added; `accept` keeps the candidate's encodings.
  std::size_t try_candidate(const bpe_table& table, std::size_t first_merge, const std::vector<std::string>& written) {
    pending_.clear();
    std::vector<std::uint32_t> reached;
    const auto& merges = table.model().merges;
    for (std::size_t rank = first_merge; rank < merges.size(); ++rank)
      if (const auto it = pairs_.find(key(merges[rank].first, merges[rank].second)); it != pairs_.end())
        reached.insert(reached.end(), it->second.begin(), it->second.end());
    for (const std::string& text : written) {
      if (const auto it = whole_pieces_.find(text); it != whole_pieces_.end())
        reached.insert(reached.end(), it->second.begin(), it->second.end());
      if (decode_characters(text).size() == 1)  // a new character: every word that holds it
        for (std::size_t w = 0; w < words_.size(); ++w)
          if (words_[w].find(text) != std::string::npos) reached.push_back(std::uint32_t(w));
    }
    std::sort(reached.begin(), reached.end());
    reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
    std::size_t total = changed_count_;
    for (const std::uint32_t w : reached) {
      std::vector<std::vector<token_id>> pieces = encode_word_pieces(table, words_[w]);
      const bool now = flat(pieces) != source_ids_[w];
      total = total - (changed_[w] ? 1 : 0) + (now ? 1 : 0);
      pending_.push_back({w, std::move(pieces), now});
    }
    return total;
  }
  /// Keeps the encodings of the last try_candidate.
  void accept() {
    for (pending_word& p : pending_) {
      changed_count_ = changed_count_ - (changed_[p.word] ? 1 : 0) + (p.changed ? 1 : 0);
      changed_[p.word] = p.changed;
      pieces_[p.word] = std::move(p.pieces);
      index(p.word);  // the old pairs stay listed: they only cost a re-encoding
    }
    pending_.clear();
  }

 private:
  struct pending_word {
    std::uint32_t word;
    std::vector<std::vector<token_id>> pieces;
    bool changed;
  };
  static std::uint64_t key(token_id left, token_id right) {
    return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
  }
  static std::vector<token_id> flat(const std::vector<std::vector<token_id>>& pieces) {
    std::vector<token_id> ids;
    for (const auto& piece : pieces) ids.insert(ids.end(), piece.begin(), piece.end());
    return ids;
  }
  void index(std::size_t w) {
    for (const std::vector<token_id>& piece : pieces_[w])
      for (std::size_t i = 0; i + 1 < piece.size(); ++i)
        pairs_[key(piece[i], piece[i + 1])].push_back(std::uint32_t(w));
  }

  std::vector<std::string> words_;
  std::size_t max_changed_;
  std::vector<std::vector<std::vector<token_id>>> pieces_;
  std::vector<std::vector<token_id>> source_ids_;
  std::vector<bool> changed_;
  std::size_t changed_count_ = 0;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> pairs_;
  std::unordered_map<std::string, std::vector<std::uint32_t>> whole_pieces_;  // pre-token text -> words
  std::vector<pending_word> pending_;
};

/// Adds new tokens to a bpe_table one at a time (see the file's comment).
class extender {
 public:
  extender(bpe_model source, token_id first_free, extension_options options)
      : table_(std::move(source)), next_id_(first_free), options_(std::move(options)) {
    if (!options_.drift_probe.empty())
      guard_.emplace(table_, std::move(options_.drift_probe), options_.max_changed_words);
  }

  /// Writes the token that stands for `bytes`, or records why not.
  void add(const std::string& bytes);
  /// The result; checks that every written token is reachable.
  bpe_extension finish(std::size_t source_merges) &&;

 private:
  struct mark {
    std::size_t tokens, merges, written;
    token_id next_id;
  };
  mark here() const { return {table_.model().tokens.size(), table_.model().merges.size(), written_.size(), next_id_}; }
  void undo(const mark& m) {
    table_.truncate(m.tokens, m.merges);
    for (std::size_t i = m.written; i < written_.size(); ++i) index_.erase(written_[i].id);
    written_.resize(m.written);
    next_id_ = m.next_id;
  }
  token_id write(const std::string& text, bool requested, bool new_character) {
    const token_id id = next_id_++;
    table_.add_token(text, id);
    index_[id] = written_.size();
    written_.push_back({id, bytes_of(text), requested, new_character});
    return id;
  }
  std::string bytes_of(const std::string& text) const {
    return clp::token_bytes(text, table_.model().rules.spelling == symbol_spelling::byte_level
                                      ? clp::token_spelling::byte_level
                                      : clp::token_spelling::sentencepiece);
  }
  void leave_out(const std::string& bytes, std::string reason) { left_out_.push_back({bytes, std::move(reason)}); }
  /// The token's text in the source's spelling, or nullopt (recorded as left out or present).
  std::optional<std::string> spelled(const std::string& bytes);
  /// Makes every character of `text` a symbol; false (recorded) when one cannot be.
  bool ensure_alphabet(const std::string& bytes, const std::string& text);
  /// Appends the merges that join `pieces` left to right into `text`.
  void chain(const std::string& text, const std::vector<token_id>& pieces);
  /// Undoes the token's additions since `start`, recorded as left out, where they would take the
  /// probe's changed words past the drift budget (extension_options::drift_probe).
  void within_drift_budget(const std::string& bytes, const mark& start);
  /// Why `text`, or a token written since `start`, is not what the encoder makes of its own
  /// text; nullopt when each is.
  std::optional<std::string> unreached(const std::string& text, const mark& start) const;

  bpe_table table_;
  token_id next_id_;
  extension_options options_;
  std::vector<written_token> written_;
  std::unordered_map<token_id, std::size_t> index_;  // id -> its entry in written_
  std::vector<std::string> present_;
  std::vector<left_out_token> left_out_;
  std::optional<drift_guard> guard_;
};

inline std::optional<std::string> extender::spelled(const std::string& bytes) {
  const bpe_model& model = table_.model();
  if (bytes.empty()) {
    leave_out(bytes, "is empty");
    return std::nullopt;
  }
  if (model.rules.spelling == symbol_spelling::metaspace) {
    if (!is_utf8(bytes)) {
      static constexpr char hex[] = "0123456789ABCDEF";
      const auto b = static_cast<unsigned char>(bytes[0]);
      if (bytes.size() == 1 && model.byte_fallback && table_.id(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">")) {
        present_.push_back(bytes);
      } else {
        leave_out(bytes,
                  "is not whole UTF-8 characters, which a '\xE2\x96\x81' tokenizer writes only as "
                  "single-byte <0xNN> pieces");
      }
      return std::nullopt;
    }
    if (bytes.find(space_mark) != std::string::npos) {
      leave_out(bytes, "holds '\xE2\x96\x81', which the source reads as a space");
      return std::nullopt;
    }
    if (model.byte_fallback && bytes.size() == 6 &&
        clp::token_bytes(bytes, clp::token_spelling::sentencepiece).size() == 1) {
      leave_out(bytes, "is spelled like a byte-fallback piece, which the source reads as one byte");
      return std::nullopt;
    }
  }
  const std::vector<std::string> pieces = pre_tokens(bytes, model.rules, false);
  if (pieces.size() != 1) {
    std::string shown;
    for (const std::string& piece : pieces) shown += (shown.empty() ? "" : " | ") + quoted_token(piece);
    leave_out(bytes, "spans a pre-tokenizer boundary (" + model.rules.description + "): " + shown);
    return std::nullopt;
  }
  return pieces.front();
}

inline bool extender::ensure_alphabet(const std::string& bytes, const std::string& text) {
  const bool metaspace = table_.model().rules.spelling == symbol_spelling::metaspace;
  for (const text_character& c : decode_characters(text)) {
    const std::string character = text.substr(c.offset, c.size);
    if (table_.id(character)) continue;
    if (metaspace && options_.add_characters && c.code_point >= 0x80 && c.code_point != not_a_character) {
      write(character, character == text, true);
      continue;
    }
    std::string reason = "needs the symbol " + quoted_token(character) + ", which the source's alphabet lacks";
    if (metaspace && c.code_point < 0x80)
      reason +=
          " (the source writes it as byte-fallback pieces, and a symbol for it would change how every text "
          "holding it is encoded)";
    leave_out(bytes, std::move(reason));
    return false;
  }
  return true;
}

inline void extender::chain(const std::string& text, const std::vector<token_id>& pieces) {
  token_id current = pieces.front();
  std::string prefix = table_.token(current);
  for (std::size_t k = 1; k < pieces.size(); ++k) {
    prefix += table_.token(pieces[k]);
    if (const auto existing = table_.merge(current, pieces[k])) {
      current = existing->second;  // a merge the source has, which the encoder did not reach here
      continue;
    }
    if (!table_.id(prefix)) write(prefix, prefix == text, false);
    current = table_.add_merge(current, pieces[k]);
  }
}

inline std::optional<std::string> extender::unreached(const std::string& text, const mark& start) const {
  const auto target = table_.id(text);
  const std::vector<token_id> got = table_.merged(text);
  if (!target || got.size() != 1 || got.front() != *target)
    return "the merges built from its pieces do not make it: the extended model gives " + joined_pieces(table_, got);
  for (std::size_t i = start.written; i < written_.size(); ++i) {
    const std::string& own = table_.token(written_[i].id);
    const std::vector<token_id> parts = table_.merged(own);
    if (parts.size() != 1 || parts.front() != written_[i].id)
      return "its intermediate " + quoted_token(own) + " would not be reachable: the extended model gives " +
             joined_pieces(table_, parts);
  }
  return std::nullopt;
}

inline void extender::add(const std::string& bytes) {
  const std::optional<std::string> text = spelled(bytes);
  if (!text) return;
  if (const auto existing = table_.id(*text)) {
    const auto it = index_.find(*existing);
    if (it != index_.end())
      written_[it->second].requested = true;  // made earlier as an intermediate
    else
      present_.push_back(bytes);
    return;
  }
  const mark start = here();
  if (!ensure_alphabet(bytes, *text)) {
    undo(start);
    return;
  }
  if (table_.id(*text)) return;  // a single character, now a symbol
  const std::vector<token_id> pieces = table_.merged(*text);
  chain(*text, pieces);
  if (const auto why = unreached(*text, start)) {
    undo(start);
    leave_out(bytes, "pieces " + joined_pieces(table_, pieces) + ": " + *why);
    return;
  }
  within_drift_budget(bytes, start);
}

inline void extender::within_drift_budget(const std::string& bytes, const mark& start) {
  if (!guard_) return;
  std::vector<std::string> texts;
  for (std::size_t i = start.written; i < written_.size(); ++i) texts.push_back(table_.token(written_[i].id));
  const std::size_t changed = guard_->try_candidate(table_, start.merges, texts);
  if (changed <= guard_->budget()) {
    guard_->accept();
    return;
  }
  undo(start);
  leave_out(bytes, "would change more words of the drift probe than --drift-budget allows (" +
                       std::to_string(changed - guard_->changed()) + " more; " + std::to_string(guard_->changed()) +
                       " changed of " + std::to_string(guard_->budget()) + " allowed)");
}

inline bpe_extension extender::finish(std::size_t source_merges) && {
  for (const written_token& token : written_) {
    const std::vector<token_id> got = table_.merged(table_.token(token.id));
    if (got.size() != 1 || got.front() != token.id)
      throw std::logic_error("extend: the written token " + quoted_token(table_.token(token.id)) +
                             " is not reachable; every token is checked when it is written, so this is a bug");
  }
  return bpe_extension{std::move(table_),   source_merges,       false,
                       std::move(written_), std::move(present_), std::move(left_out_)};
}

}  // namespace detail

/// `source` extended by `new_tokens` (see the file's comment).
/// @param[in] source      the model to extend, as read_bpe_model read it
/// @param[in] new_tokens  the tokens to add, each as the bytes it stands for, in the order to add
///                        them (the helper's: see token_choice.hpp)
/// @param[in] first_free  the id of the first new token, the next ones after it; at least
///                        first_unused_id(source), so that it may sit past added tokens
/// @param[in] options     see extension_options
/// @throws clp::invalid_argument (argument "first_free") when first_free is below
///         first_unused_id(source)
inline bpe_extension extend_bpe(bpe_model source, const std::vector<std::string>& new_tokens, token_id first_free,
                                const extension_options& options = {}) {
  const token_id unused = first_unused_id(source);
  if (first_free < unused)
    throw clp::invalid_argument(clp::error_facts::in("clp_transfer::extend::extend_bpe").with_argument("first_free"),
                                "is " + std::to_string(first_free) + ", an id the source uses (the first unused is " +
                                    std::to_string(unused) + ")");
  const std::size_t source_merges = source.merges.size();
  detail::extender extender(std::move(source), first_free, options);
  for (const std::string& bytes : new_tokens) extender.add(bytes);
  return std::move(extender).finish(source_merges);
}

}  // namespace clp_transfer::extend
