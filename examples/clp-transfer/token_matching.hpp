// Which helper tokens take which source rows, as the program decides it: by the bytes the tokens
// stand for (or by string, --match exact), each side's spelling read from its tokenizer's own
// declarations (tokenizer_spelling.hpp); then, for `transfer`, special tokens by role
// (special_tokens.hpp). Shared by `clp-transfer transfer` and `clp-transfer overlap`.
#pragma once

#include <clp/token_bytes.hpp>
#include <clp/vocabulary.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hf_model.hpp"
#include "special_tokens.hpp"
#include "tokenizer_spelling.hpp"
#include "usage_error.hpp"

namespace clp::program {

/// --match: how the tokens of the two vocabularies are matched.
struct match_arguments {
  /// bytes (the default: the bytes each token stands for in its own tokenizer's spelling) or
  /// exact (the paper: the same string).
  clp::token_match match = clp::token_match::bytes;
  /// Whether --match was given. A spelling that cannot be told makes the default fall back to
  /// exact matching with a warning, but an explicit `--match bytes` an error.
  bool given = false;
};

/// --match as given; throws naming --match for any other value.
/// @param[in] name   the option's value
/// @param[in] given  whether the option was on the command line
inline match_arguments parse_match(const std::string& name, bool given) {
  if (name == "bytes") return {clp::token_match::bytes, given};
  if (name == "exact") return {clp::token_match::exact, given};
  throw usage_error("--match must be bytes or exact, not '" + name + "'");
}

/// "bytes" or "exact".
inline const char* match_name(clp::token_match match) { return match == clp::token_match::bytes ? "bytes" : "exact"; }

/// A tokenizer as matching needs it.
struct tokenizer_reading {
  std::filesystem::path file;  ///< the file the vocabulary came from, for messages
  io::token_vocabulary vocabulary;
  tokenizer_spelling spelling;
};

namespace detail {

/// Stops a SAX parse at the top-level "model" key's value, noting whether it is an object.
class model_object_finder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool found = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    found = model_next_;
    ++depth_;
    return !found;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return value();
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    model_next_ = depth_ == 1 && key == "model";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override { return false; }

 private:
  bool value() {
    model_next_ = false;
    return true;
  }
  bool close() {
    --depth_;
    return value();
  }
  std::size_t depth_ = 0;
  bool model_next_ = false;
};

/// Whether `file` (not named tokenizer.json, vocab.json or encoder.json) is a tokenizer.json:
/// an object whose "model" is an object. vocab.json files map tokens to integers (and may
/// well hold the token "model"). The file is scanned up to that "model", not parsed whole.
inline bool is_tokenizer_json(const std::filesystem::path& file) {
  if (file.filename() == "tokenizer.json") return true;
  if (file.filename() == "vocab.json" || file.filename() == "encoder.json") return false;
  std::ifstream in(file, std::ios::binary);
  model_object_finder finder;
  nlohmann::json::sax_parse(in, &finder);
  return finder.found;
}

/// The vocabulary and spelling of a tokenizer.json, read in one pass.
inline tokenizer_reading read_tokenizer_json_file(const std::filesystem::path& file) {
  io::tokenizer_json_contents contents = io::read_tokenizer_json_contents(file);
  return {file, std::move(contents.vocabulary), spelling_from_declarations(contents.declarations)};
}

/// The vocabulary and spelling of a vocab.json or encoder.json (any file of token -> id).
inline tokenizer_reading read_vocab_file(const std::filesystem::path& file) {
  return {file, io::read_vocab_json(file), spelling_of_vocab_file(file)};
}

}  // namespace detail

/// The vocabulary and spelling of the tokenizer at `path`: a model folder (its tokenizer.json,
/// else its vocab.json), a tokenizer.json, or a vocab.json / encoder.json (any file of
/// token -> id). Each file is read once. Throws naming the file when it cannot be read.
/// @param[in] path  model folder or tokenizer file
inline tokenizer_reading read_tokenizer(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    if (std::filesystem::exists(path / "tokenizer.json"))
      return detail::read_tokenizer_json_file(path / "tokenizer.json");
    if (std::filesystem::exists(path / "vocab.json")) return detail::read_vocab_file(path / "vocab.json");
    io::detail::fail(path, "no tokenizer.json or vocab.json to read the vocabulary from");
  }
  if (!std::filesystem::exists(path)) io::detail::fail(path, "no such file or folder");
  return detail::is_tokenizer_json(path) ? detail::read_tokenizer_json_file(path) : detail::read_vocab_file(path);
}

/// Which helper tokens take which source rows, and what decided it.
struct token_matching {
  vocabulary_overlap overlap;
  clp::token_match asked = clp::token_match::bytes;  ///< --match
  clp::token_match used = clp::token_match::bytes;   ///< exact when a spelling is unknown
  std::filesystem::path source_file, helper_file;
  tokenizer_spelling source_spelling, helper_spelling;
  /// Special tokens mapped by role (transfer only). A role's pair replaces the helper token's
  /// exact or byte match, or adds one for a token that had none.
  std::vector<role_match> roles;
  /// Pairs of `overlap` that the roles added or changed (exact_match false). Then
  /// overlap.exact_matches + overlap.byte_matches + role_matches == overlap.size().
  Index role_matches = 0;
  /// One line each, for "clp-transfer: warning: ...".
  std::vector<std::string> warnings;
};

namespace detail {

/// The spelling of one side for matching by bytes, or nullopt (with `why`) when it cannot be
/// used: unknown, or a WordPiece continuation prefix other than the "##" clp::token_bytes reads.
inline std::optional<clp::token_spelling> usable_spelling(const tokenizer_spelling& spelling, std::string& why) {
  if (!spelling.kind) {
    const std::string prefix = "unknown: ";
    why = spelling.evidence.compare(0, prefix.size(), prefix) == 0 ? spelling.evidence.substr(prefix.size())
                                                                   : spelling.evidence;
    return std::nullopt;
  }
  if (*spelling.kind == clp::token_spelling::wordpiece && spelling.continuing_prefix != "##") {
    why = "WordPiece continuation prefix " + io::detail::quoted_name(spelling.continuing_prefix) +
          ", where matching by bytes reads \"##\"";
    return std::nullopt;
  }
  return spelling.kind;
}

}  // namespace detail

/// Intersects two tokenizers' vocabularies as --match asks: by bytes when both spellings are
/// known (a warning and exact matching otherwise; with an explicit --match bytes, an error
/// naming the file instead), or exactly.
/// @param[in] source       the source tokenizer (the large model's)
/// @param[in] helper       the helper tokenizer (the output's)
/// @param[in] asked        --match
/// @param[in] options      the row counts and allow_empty_overlap (match and spellings are set here)
inline token_matching match_tokens(const tokenizer_reading& source, const tokenizer_reading& helper,
                                   const match_arguments& asked, clp::intersect_options options) {
  token_matching result;
  result.asked = result.used = asked.match;
  result.source_file = source.file;
  result.helper_file = helper.file;
  result.source_spelling = source.spelling;
  result.helper_spelling = helper.spelling;
  options.match = clp::token_match::exact;
  if (asked.match == clp::token_match::bytes) {
    std::string source_why, helper_why;
    const auto source_kind = detail::usable_spelling(source.spelling, source_why);
    const auto helper_kind = detail::usable_spelling(helper.spelling, helper_why);
    for (const auto& [kind, file, why] :
         {std::tuple(source_kind, &source.file, &source_why), std::tuple(helper_kind, &helper.file, &helper_why)}) {
      if (kind) continue;
      if (asked.given)
        io::detail::fail(
            *file, "spelling unknown (" + *why + "); --match bytes needs it (--match exact matches token strings)");
      result.warnings.push_back(file->string() + ": spelling unknown (" + *why + "); matching exactly");
    }
    if (source_kind && helper_kind) {
      options.match = clp::token_match::bytes;
      options.source_spelling = *source_kind;
      options.target_spelling = *helper_kind;
    } else {
      result.used = clp::token_match::exact;
    }
  }
  result.overlap = clp::intersect_vocabularies(source.vocabulary.ids, helper.vocabulary.ids, options);
  return result;
}

/// Makes each role match a pair of the overlap: target row helper_id takes source row
/// source_id, replacing the helper token's exact or byte match, or, for a helper token that
/// had none, inserted in target-id order and taken out of missing_ids. The library then
/// copies those rows as it copies every other pair. Returns how many pairs were added or
/// changed (a role pair the matching had already found changes nothing).
/// @param[in,out] overlap  the overlap, sorted by target id
/// @param[in]     roles    match_special_tokens' result
/// @param[in]     source_rows, target_rows  the rows of the source and the helper embedding
/// @param[in]     source_file, helper_file  the tokenizers, for messages
inline Index apply_role_matches(vocabulary_overlap& overlap, const std::vector<role_match>& roles, Index source_rows,
                                Index target_rows, const std::filesystem::path& source_file,
                                const std::filesystem::path& helper_file) {
  Index changed = 0;
  for (const role_match& role : roles) {
    const auto outside = [&](const std::filesystem::path& file, const std::string& token, std::int64_t id, Index rows) {
      if (id < 0 || id >= rows)
        io::detail::fail(file, std::string(role_name(role.role)) + " token " + io::detail::quoted_name(token) +
                                   " has id " + std::to_string(id) + ", past the " + std::to_string(rows) +
                                   " rows of its embedding");
    };
    outside(source_file, role.source_token, role.source_id, source_rows);
    outside(helper_file, role.helper_token, role.helper_id, target_rows);
    const Index target = static_cast<Index>(role.helper_id), source = static_cast<Index>(role.source_id);
    const auto at = std::lower_bound(overlap.target_ids.begin(), overlap.target_ids.end(), target);
    const auto i = static_cast<std::size_t>(at - overlap.target_ids.begin());
    if (at != overlap.target_ids.end() && *at == target) {
      if (overlap.source_ids[i] == source) continue;
      (overlap.matched_by[i] == clp::match_reason::exact ? overlap.exact_matches : overlap.byte_matches) -= 1;
      overlap.source_ids[i] = source;
      overlap.matched_by[i] = clp::match_reason::forced;
    } else {
      overlap.target_ids.insert(at, target);
      overlap.source_ids.insert(overlap.source_ids.begin() + static_cast<std::ptrdiff_t>(i), source);
      overlap.matched_by.insert(overlap.matched_by.begin() + static_cast<std::ptrdiff_t>(i), clp::match_reason::forced);
      const auto missing = std::lower_bound(overlap.missing_ids.begin(), overlap.missing_ids.end(), target);
      if (missing != overlap.missing_ids.end() && *missing == target) overlap.missing_ids.erase(missing);
    }
    ++changed;
  }
  return changed;
}

/// Reads both models' special tokens (their notes become warnings) and makes every helper
/// token with a role that the source also has take the source row of that role.
/// @param[in,out] matching     match_tokens' result, for two model folders
/// @param[in]     source, helper  the tokenizers matching was made from
/// @param[in]     source_rows  rows of the source embedding (the helper's are the overlap's)
inline void map_special_tokens(token_matching& matching, const tokenizer_reading& source,
                               const tokenizer_reading& helper, Index source_rows) {
  const special_tokens source_roles = read_special_tokens(source.file, source.vocabulary);
  const special_tokens helper_roles = read_special_tokens(helper.file, helper.vocabulary);
  for (const std::string& note : source_roles.notes) matching.warnings.push_back("source " + note);
  for (const std::string& note : helper_roles.notes) matching.warnings.push_back("helper " + note);
  matching.roles = match_special_tokens(source_roles, helper_roles);
  matching.role_matches = apply_role_matches(matching.overlap, matching.roles, source_rows,
                                             matching.overlap.target_rows(), source.file, helper.file);
}

/// "sentencepiece (byte fallback)", "byte_level", or "unknown".
inline std::string spelling_description(const tokenizer_spelling& spelling) {
  if (!spelling.kind) return "unknown";
  return std::string(clp::token_spelling_name(*spelling.kind)) + (spelling.byte_fallback ? " (byte fallback)" : "");
}

/// "eos: helper <|endoftext|> (0) <- source </s> (2)".
inline std::string role_description(const role_match& role) {
  return std::string(role_name(role.role)) + ": helper " + role.helper_token + " (" + std::to_string(role.helper_id) +
         ") <- source " + role.source_token + " (" + std::to_string(role.source_id) + ")";
}

/// The matching in a --report: what was asked and used, the counts, each side's spelling and
/// its evidence, the special tokens by role, the warnings.
inline nlohmann::ordered_json matching_json(const token_matching& matching) {
  const auto spelling = [](const std::filesystem::path& file, const tokenizer_spelling& s) {
    nlohmann::ordered_json json;
    json["file"] = file.string();
    json["spelling"] = s.kind ? nlohmann::ordered_json(std::string(clp::token_spelling_name(*s.kind))) : nullptr;
    json["byte_fallback"] = s.byte_fallback;
    json["evidence"] = s.evidence;
    return json;
  };
  nlohmann::ordered_json json;
  json["asked"] = match_name(matching.asked);
  json["used"] = match_name(matching.used);
  json["exact_matches"] = matching.overlap.exact_matches;
  json["byte_matches"] = matching.overlap.byte_matches;
  json["role_matches"] = matching.role_matches;
  json["shared_strings"] = matching.overlap.shared_strings;
  json["source"] = spelling(matching.source_file, matching.source_spelling);
  json["helper"] = spelling(matching.helper_file, matching.helper_spelling);
  json["special_tokens"] = nlohmann::ordered_json::array();
  for (const role_match& role : matching.roles)
    json["special_tokens"].push_back({{"role", role_name(role.role)},
                                      {"helper_token", role.helper_token},
                                      {"helper_id", role.helper_id},
                                      {"source_token", role.source_token},
                                      {"source_id", role.source_id}});
  json["warnings"] = matching.warnings;
  return json;
}

/// The warnings on stderr, one line each.
inline void print_matching_warnings(const token_matching& matching) {
  for (const std::string& warning : matching.warnings)
    std::fprintf(stderr, "clp-transfer: warning: %s\n", warning.c_str());
}

/// The summary's lines on the matching: the counts by kind, then the special tokens by role.
inline void print_matching_summary(const token_matching& matching) {
  const vocabulary_overlap& overlap = matching.overlap;
  std::fprintf(stderr, "  matched            %td exactly, %td by bytes, %td by role (--match %s", overlap.exact_matches,
               overlap.byte_matches, matching.role_matches, match_name(matching.asked));
  if (matching.used != matching.asked) std::fprintf(stderr, ", matched exactly: a spelling is unknown");
  std::fprintf(stderr, "; source %s, helper %s)\n", spelling_description(matching.source_spelling).c_str(),
               spelling_description(matching.helper_spelling).c_str());
  for (const role_match& role : matching.roles)
    std::fprintf(stderr, "  special token      %s\n", role_description(role).c_str());
}

}  // namespace clp::program
