// Which helper tokens take which source rows, as the program decides it: special tokens by role
// (special_tokens.hpp) as pairs decided before matching, the library's forced pairs; every other
// token by the bytes it stands for (or by string, --match exact), each side's spelling read from
// its tokenizer's own declarations (io/tokenizer/spelling.hpp). Shared by `clp-transfer transfer`,
// which matches roles too, and `clp-transfer overlap`, which does not.
#pragma once

#include <clp/token_bytes.hpp>
#include <clp/vocabulary.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "errors.hpp"
#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/tokenizer/reading.hpp"
#include "io/tokenizer/spelling.hpp"
#include "library_names.hpp"
#include "special_tokens.hpp"

namespace clp_transfer {

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
  throw clp::invalid_argument(option_facts("--match"), "must be bytes or exact, not '" + name + "'");
}

/// "bytes" or "exact".
inline const char* match_name(clp::token_match match) { return match == clp::token_match::bytes ? "bytes" : "exact"; }

/// Which helper tokens take which source rows, and what decided it.
struct token_matching {
  vocabulary_overlap overlap;
  clp::token_match asked = clp::token_match::bytes;  ///< --match
  clp::token_match used = clp::token_match::bytes;   ///< exact when a spelling is unknown
  std::filesystem::path source_file, helper_file;
  tokenizer_spelling source_spelling, helper_spelling;
  /// Special tokens matched by role (transfer only). Those whose two tokens differ are the
  /// overlap's forced pairs (overlap.forced_matches counts them); a role whose helper and source
  /// token are the same string is left to the matching, which pairs them exactly.
  std::vector<role_match> roles;
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
    why = "WordPiece continuation prefix " + io::quoted_name(spelling.continuing_prefix) +
          ", where matching by bytes reads \"##\"";
    return std::nullopt;
  }
  return spelling.kind;
}

}  // namespace detail

/// Intersects two tokenizers' vocabularies as --match asks: by bytes when both spellings are
/// known (a warning and exact matching otherwise; with an explicit --match bytes, an error
/// naming the file instead), or exactly. Each tokenizer's notes become warnings.
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
  for (const tokenizer_reading* side : {&source, &helper})
    result.warnings.insert(result.warnings.end(), side->notes.begin(), side->notes.end());
  options.match = clp::token_match::exact;
  if (asked.match == clp::token_match::bytes) {
    std::string source_why, helper_why;
    const auto source_kind = detail::usable_spelling(source.spelling, source_why);
    const auto helper_kind = detail::usable_spelling(helper.spelling, helper_why);
    for (const auto& [kind, file, why] :
         {std::tuple(source_kind, &source.file, &source_why), std::tuple(helper_kind, &helper.file, &helper_why)}) {
      if (kind) continue;
      if (asked.given)
        throw clp::invalid_argument(
            io::about(*file),
            "spelling unknown (" + *why + "); --match bytes needs it (--match exact matches token strings)");
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
  // The library names the vocabularies 'source' and 'target'; an error about both is about the
  // two files.
  const error_origins origins = error_origins()
                                    .add("source", io::about(source.file))
                                    .add("target", io::about(helper.file))
                                    .otherwise(source.file.string() + " and " + helper.file.string());
  result.overlap =
      origins.run([&] { return clp::intersect_vocabularies(source.vocabulary.ids, helper.vocabulary.ids, options); });
  return result;
}

/// The library's forced pairs for the special tokens matched by role: the helper token's row
/// takes the source token's row. A role whose two tokens are the same string is left out: the
/// matching pairs them exactly. Throws io::malformed_file naming the tokenizer file when a
/// role's token has an id past its embedding's rows (the library's refusal would name only ids).
/// @param[in] roles        match_special_tokens' result
/// @param[in] source_rows, helper_rows  rows of the source and the helper embedding
/// @param[in] source_file, helper_file  the tokenizer files, for messages
inline std::vector<clp::forced_pair> role_pairs(const std::vector<role_match>& roles, Index source_rows,
                                                Index helper_rows, const std::filesystem::path& source_file,
                                                const std::filesystem::path& helper_file) {
  std::vector<clp::forced_pair> pairs;
  for (const role_match& role : roles) {
    const auto require_row = [&](const std::filesystem::path& file, const std::string& token, std::int64_t id,
                                 Index rows) {
      if (id < 0 || id >= rows)
        io::malformed(file, std::string(role_name(role.role)) + " token " + io::quoted_name(token) + " has id " +
                                std::to_string(id) + ", past the " + std::to_string(rows) + " rows of its embedding");
    };
    require_row(source_file, role.source_token, role.source_id, source_rows);
    require_row(helper_file, role.helper_token, role.helper_id, helper_rows);
    if (role.helper_token != role.source_token)
      pairs.push_back({static_cast<Index>(role.helper_id), static_cast<Index>(role.source_id)});
  }
  return pairs;
}

/// The matching of `transfer`: the special tokens of both models by role (their files' notes
/// become warnings), then every other token as --match asks.
/// @param[in] source, helper  the two models, as read
/// @param[in] asked           --match
/// @param[in] source_rows, helper_rows  rows of their embeddings (from the tensor headers)
inline token_matching match_models(const hf_checkpoint& source, const hf_checkpoint& helper,
                                   const match_arguments& asked, Index source_rows, Index helper_rows) {
  const special_tokens source_roles = read_special_tokens(source.json, source.tokenizer.vocabulary);
  const special_tokens helper_roles = read_special_tokens(helper.json, helper.tokenizer.vocabulary);
  const std::vector<role_match> roles = match_special_tokens(source_roles, helper_roles);
  clp::intersect_options options;
  options.source_rows = source_rows;
  options.target_rows = helper_rows;
  options.forced_pairs = role_pairs(roles, source_rows, helper_rows, source.tokenizer.file, helper.tokenizer.file);
  token_matching matching = match_tokens(source.tokenizer, helper.tokenizer, asked, std::move(options));
  // Special tokens alone are no overlap to transfer from: refused as the library refuses
  // vocabularies that share nothing.
  const vocabulary_overlap& overlap = matching.overlap;
  if (overlap.exact_matches + overlap.byte_matches == 0) {
    clp::error_facts facts;
    facts.context = source.tokenizer.file.string() + " and " + helper.tokenizer.file.string();
    throw clp::invalid_argument(std::move(facts),
                                std::string("the vocabularies share no token") +
                                    (matching.used == clp::token_match::bytes ? ", by string or by bytes" : "") + " (" +
                                    std::to_string(overlap.source_vocab_size) + " source, " +
                                    std::to_string(overlap.target_vocab_size) +
                                    " target tokens); only special tokens match, by role");
  }
  matching.roles = roles;
  for (const special_tokens* roles : {&source_roles, &helper_roles})
    matching.warnings.insert(matching.warnings.end(), roles->notes.begin(), roles->notes.end());
  return matching;
}

/// How the pairs of an overlap were matched, as the summary, the report and `overlap` count
/// them: exact + bytes + roles == overlap.size().
struct match_counts {
  Index exact = 0, bytes = 0, roles = 0;
  Index shared_strings = 0;  ///< strings both vocabularies hold, whatever they were matched with
};

inline match_counts counts_of(const vocabulary_overlap& overlap) {
  return {overlap.exact_matches, overlap.byte_matches, overlap.forced_matches, overlap.shared_strings};
}

/// The counts into a JSON object (the report's "matching", `overlap --json`).
inline void add_counts(nlohmann::ordered_json& json, const match_counts& counts) {
  json["exact_matches"] = counts.exact;
  json["byte_matches"] = counts.bytes;
  json["role_matches"] = counts.roles;
  json["shared_strings"] = counts.shared_strings;
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
  add_counts(json, counts_of(matching.overlap));
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
/// A count that cannot be anything but zero is left out: by bytes when the match was exact, by
/// role when no role paired two different tokens.
inline void print_matching_summary(const token_matching& matching) {
  const match_counts counts = counts_of(matching.overlap);
  std::string kinds = std::to_string(counts.exact) + " exactly";
  if (matching.used == clp::token_match::bytes) kinds += ", " + std::to_string(counts.bytes) + " by bytes";
  if (counts.roles > 0) kinds += ", " + std::to_string(counts.roles) + " by role";
  std::fprintf(stderr, "  matched            %s (--match %s", kinds.c_str(), match_name(matching.asked));
  if (matching.used != matching.asked) std::fprintf(stderr, ", matched exactly: a spelling is unknown");
  std::fprintf(stderr, "; source %s, helper %s)\n", spelling_description(matching.source_spelling).c_str(),
               spelling_description(matching.helper_spelling).c_str());
  for (const role_match& role : matching.roles)
    std::fprintf(stderr, "  special token      %s\n", role_description(role).c_str());
}

}  // namespace clp_transfer
