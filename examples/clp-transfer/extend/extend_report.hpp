// What an extension did, as JSON (--report) and as a summary on stderr: the tokens asked for,
// added, made as intermediates and left out (with the reasons), the rows filled and grown, where
// the new rows came from, the drift on the English probe and the tokens per word on --probe-new.
#pragma once

#include <clp/synthesize.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/characters.hpp"
#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/new_rows.hpp"
#include "extend/refusal.hpp"
#include "extend/token_request.hpp"
#include "io/output_folder.hpp"
#include "io/system/interruption.hpp"
#include "library_names.hpp"
#include "token_matching.hpp"
#include "transfer/read_models.hpp"
#include "transfer/report.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/undertrained_report.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp_transfer {

struct extend_seconds {
  double read = 0, tokenizer = 0, synthesize = 0, write = 0, total = 0;
};

/// Tokens per word of --probe-new under the source, the extended and (when it can be encoded) the
/// helper's tokenizer.
struct fertility_figures {
  std::size_t words = 0;
  double source = 0, extended = 0;
  std::optional<double> helper;
};

/// Everything the report and the summary print, gathered from the phases.
struct extend_outcome {
  const extend_request& request;
  const loaded_model& source;
  const token_matching* matching;  ///< null without a helper
  const chosen_tokens& chosen;
  const extend::bpe_extension& extension;
  const new_rows_plan& rows;
  const synthesis_choice& synthesis;
  const undertrained_screen& undertrained;                       ///< the source rows flagged, which support no new row
  const std::optional<clp::synthesis_report>& synthesis_report;  ///< nullopt: no row from the helper
  const std::optional<clp::held_out_scores>& held_out;
  extend::drift_measure drift;
  std::optional<fertility_figures> fertility;
  std::vector<std::filesystem::path> files_left_out;  ///< SentencePiece models beside tokenizer.json
  std::vector<verify::finding> output_findings;       ///< verify's checks on the output (check_output)
  extend_seconds seconds;

  double added_share() const {
    return chosen.bytes.empty() ? 0.0 : double(extension.requested_count()) / double(chosen.bytes.size());
  }
  /// How the rows of helper tokens were made, in the summary's words.
  std::string helper_rows_made() const {
    if (synthesis.method != transfer_method::clp)
      return std::string("drawn (method ") + method_name(synthesis.method) + ")";
    return "synthesised (weighting " + synthesis.weighting.name + ")";
  }
};

/// Bytes as a JSON string: themselves when UTF-8, else quoted with \xNN escapes (quoted_token).
inline std::string report_text(const std::string& bytes) {
  return extend::is_utf8(bytes) ? bytes : extend::quoted_token(bytes);
}

/// The start of a left-out reason that names its kind: up to its first ':' or '(' outside a
/// quoted token ("needs the symbol \":\", which ..." keeps its symbol; "spans a pre-tokenizer
/// boundary (...): ..." loses the pieces that differ from token to token).
inline std::string reason_kind(const std::string& reason) {
  bool quoted = false;
  std::size_t end = 0;
  for (; end < reason.size(); ++end) {
    const char c = reason[end];
    if (quoted && c == '\\') {
      ++end;  // an escaped character inside the quotes
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == ':' || c == '(')) {
      break;
    }
  }
  std::string kind = reason.substr(0, std::min(end, reason.size()));
  while (!kind.empty() && kind.back() == ' ') kind.pop_back();
  return kind;
}

/// Left-out tokens counted by the kind of their reason (reason_kind).
inline std::map<std::string, std::size_t> left_out_reasons(const extend::bpe_extension& extension) {
  std::map<std::string, std::size_t> reasons;
  for (const extend::left_out_token& token : extension.left_out) ++reasons[reason_kind(token.reason)];
  return reasons;
}

/// "1 row", "2 rows".
inline std::string counted(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

namespace detail {

/// The tokens part of the report: counts, the left-out list, every new token and its rows.
inline void tokens_json(const extend_outcome& o, nlohmann::ordered_json& json) {
  json["asked"] = o.chosen.bytes.size();
  if (o.matching) json["helper_missing"] = o.chosen.helper_missing;
  json["added"] = o.extension.requested_count();
  json["added_share_of_asked"] = o.added_share();
  json["intermediates"] = o.extension.intermediate_count();
  json["new_characters"] = o.extension.new_character_count();
  json["already_present"] = o.extension.already_present.size();
  json["left_out_count"] = o.extension.left_out.size();
  nlohmann::ordered_json left_out = nlohmann::ordered_json::array();
  for (const extend::left_out_token& token : o.extension.left_out)
    left_out.push_back({{"token", report_text(token.bytes)}, {"reason", report_text(token.reason)}});
  json["left_out"] = std::move(left_out);
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < o.rows.rows.size(); ++i) {
    const extend::written_token& token = o.extension.written[i];
    tokens.push_back({{"id", token.id},
                      {"token", report_text(o.extension.table.token(token.id))},
                      {"text", report_text(token.bytes)},
                      {"intermediate", !token.requested},
                      {"rows", row_origin_name(o.rows.rows[i].origin)}});
  }
  json["tokens"] = std::move(tokens);
}

/// The rows part: shapes, origins, and the engine's report.
inline void rows_json(const extend_outcome& o, nlohmann::ordered_json& json) {
  json["source_rows"] = o.rows.source_rows;
  json["output_rows"] = o.rows.output_rows;
  json["padding_rows_filled"] = o.rows.padding_rows_filled();
  json["rows_grown"] = o.rows.rows_grown();
  nlohmann::ordered_json rows;
  rows["helper"] = o.rows.count(row_origin::helper);
  rows["source_copy"] = o.rows.count(row_origin::source_copy);
  rows["mean_of_pieces"] = o.rows.count(row_origin::mean_of_pieces);
  if (o.matching) {
    const weighting_choice& weighting = o.synthesis.weighting;
    rows["method"] = o.request.mean_of_pieces ? "mean-of-pieces" : method_name(o.synthesis.method);
    rows["weighting"] = {{"name", weighting.name}, {"k", weighting.k}, {"temperature", weighting.temperature}};
    if (weighting.name == "least-squares") rows["weighting"]["row_norms"] = weighting.row_norms;
  }
  if (const auto& report = o.synthesis_report) {
    rows["fallback_rows"] = report->degenerate_rows();
    rows["no_positive_cosine_rows"] = report->no_positive_rows;
    rows["max_output_row_norm"] = report->max_output_row_norm;
    rows["median_source_row_norm"] = report->median_source_row_norm;
    if (!report->maps.empty()) rows["least_squares"] = least_squares_json(*report, o.held_out);
  }
  json["new_rows"] = std::move(rows);
}

}  // namespace detail

/// The screen as transfer's report lists it, in extend's terms: a flagged row is never
/// synthesised (every source row is kept), it is left out of the new rows' support.
inline nlohmann::ordered_json extend_undertrained_json(const undertrained_screen& screen) {
  nlohmann::ordered_json json = undertrained_json(screen);
  if (!screen.screened()) return json;
  json["synthesised"] = 0;
  json["left_out_of_new_rows"] = screen.synthesised() ? screen.flagged.size() : 0;
  return json;
}

/// The screen's summary line, when it ran (else empty); `where` says where the list is.
inline std::string extend_undertrained_summary(const undertrained_screen& screen, const std::string& where) {
  if (!screen.screened()) return {};
  if (screen.flagged.empty())
    return std::string("no source row flagged (--undertrained ") + undertrained_name(*screen.mode) + ")";
  const detail::indicator_counts counts = detail::count_indicators(screen);
  std::string by = "norm " + std::to_string(counts.norm) + ", cosine " + std::to_string(counts.cosine);
  if (screen.head) by += ", head cosine " + std::to_string(counts.head_cosine);
  return counted(screen.flagged.size(), "source row", "source rows") + " flagged (" + by + "), " +
         (screen.synthesised() ? "left out of the new rows' support" : "used (--undertrained report)") +
         ", kept as they are; " + where;
}

/// Writes the JSON report beside its final name `report_file` (commit_output moves it there);
/// returns where, or an empty path for an empty `report_file`.
inline std::filesystem::path write_partial_extend_report(const extend_outcome& o,
                                                         const std::filesystem::path& report_file,
                                                         const std::filesystem::path& output) {
  if (report_file.empty()) return {};
  nlohmann::ordered_json json;
  json["source"] = o.request.pair.source.string();
  json["helper"] = o.matching ? nlohmann::ordered_json(o.request.pair.helper.string()) : nullptr;
  json["output"] = output.string();
  json["tokens_from"] =
      o.request.tokens_file.empty() ? "helper, in " + o.chosen.helper.order + " order" : o.request.tokens_file.string();
  detail::tokens_json(o, json);
  detail::rows_json(o, json);
  json["drift"] = {
      {"probe", report_text(o.request.probe.empty() ? "built-in English probe" : o.request.probe.string())},
      {"words", o.drift.words},
      {"changed", o.drift.changed},
      {"share", o.drift.share()},
      {"budget", o.request.drift_budget ? nlohmann::ordered_json(*o.request.drift_budget) : nullptr},
      {"examples", nlohmann::ordered_json::array()}};
  for (const std::string& word : o.drift.examples) json["drift"]["examples"].push_back(report_text(word));
  json["fertility"] = nullptr;
  if (const auto& f = o.fertility) {
    json["fertility"] = {
        {"probe", o.request.probe_new.string()}, {"words", f->words}, {"source", f->source}, {"extended", f->extended}};
    json["fertility"]["helper"] = f->helper ? nlohmann::ordered_json(*f->helper) : nullptr;
  }
  json["undertrained"] = extend_undertrained_json(o.undertrained);
  if (o.matching) json["matching"] = matching_json(*o.matching);
  json["vocabulary_tensors"] = vocabulary_tensors_json(o.source.plan, o.rows.output_rows);
  json["files_left_out"] = nlohmann::ordered_json::array();
  for (const std::filesystem::path& file : o.files_left_out) json["files_left_out"].push_back(file.string());
  json["output_check"] = verify::findings_json(output, o.output_findings);
  const extend_seconds& s = o.seconds;
  json["seconds"] = {{"read", s.read},
                     {"tokenizer", s.tokenizer},
                     {"synthesize", s.synthesize},
                     {"write", s.write},
                     {"total", s.total}};
  const std::filesystem::path partial = report_file.string() + ".partial";
  io::remove_on_interruption(partial);  // until commit_output moves it into place
  io::write_file_atomically(partial, json.dump(2) + "\n");
  return partial;
}

/// The summary on stderr; `report` is --report's file or empty.
inline void print_extend_summary(const extend_outcome& o, const std::filesystem::path& output,
                                 const std::filesystem::path& report) {
  const embedding_matrix& e = o.source.embedding;
  std::fprintf(stderr,
               "clp-transfer: wrote %s\n"
               "  source             %zu tokens (%s: %td x %td %s)\n"
               "  asked              %s (%s)\n"
               "  added              %zu (%.1f%% of those asked); intermediates %zu, new characters %zu, "
               "already present %zu, left out %zu\n",
               output.c_str(), o.source.checkpoint.tokenizer.vocabulary.ids.size(), o.source.embedding_name.c_str(),
               e.rows(), e.cols(), e.dtype_name().c_str(), counted(o.chosen.bytes.size(), "token", "tokens").c_str(),
               o.request.tokens_file.empty()
                   ? ("the helper's the source lacks, in " + o.chosen.helper.order + " order").c_str()
                   : o.request.tokens_file.c_str(),
               o.extension.requested_count(), 100 * o.added_share(), o.extension.intermediate_count(),
               o.extension.new_character_count(), o.extension.already_present.size(), o.extension.left_out.size());
  for (const auto& [reason, count] : left_out_reasons(o.extension))
    std::fprintf(stderr, "    left out %5zu  %s\n", count, reason.c_str());
  std::fprintf(stderr, "  rows               %td: %td padding rows filled, %td grown\n", o.rows.output_rows,
               o.rows.padding_rows_filled(), o.rows.rows_grown());
  if (o.matching && !o.request.mean_of_pieces)
    std::fprintf(stderr,
                 "  new rows           %td from the helper, %s; %td copied from the source (transfer's pairs)\n",
                 o.rows.count(row_origin::helper), o.helper_rows_made().c_str(), o.rows.count(row_origin::source_copy));
  std::fprintf(stderr, "  mean of pieces     %td new rows (%s)\n", o.rows.count(row_origin::mean_of_pieces),
               o.request.mean_of_pieces ? "--method mean-of-pieces"
               : o.matching             ? "intermediates and tokens the helper lacks"
                                        : "no helper");
  std::fprintf(stderr, "  drift              %zu of %zu words of the %s change ids (%.2f%%", o.drift.changed,
               o.drift.words, o.request.probe.empty() ? "built-in English probe" : o.request.probe.c_str(),
               100 * o.drift.share());
  if (o.request.drift_budget) std::fprintf(stderr, "; --drift-budget %g", *o.request.drift_budget);
  std::fprintf(stderr, ")\n");
  if (const auto& f = o.fertility) {
    std::fprintf(stderr, "  tokens per word    %s: source %.3f, extended %.3f", o.request.probe_new.c_str(), f->source,
                 f->extended);
    if (f->helper) std::fprintf(stderr, ", helper %.3f", *f->helper);
    std::fprintf(stderr, "\n");
  }
  const std::string undertrained = extend_undertrained_summary(
      o.undertrained, report.empty() ? "--report to list them" : "listed in " + report.string());
  if (!undertrained.empty()) std::fprintf(stderr, "  under-trained      %s\n", undertrained.c_str());
  const extend_seconds& s = o.seconds;
  std::fprintf(stderr, "  seconds            read %.2f, tokenizer %.2f, synthesize %.2f, write %.2f, total %.2f\n",
               s.read, s.tokenizer, s.synthesize, s.write, s.total);
  print_output_check(o.output_findings);
  // The warnings after the summary's last line, not among its lines.
  for (const std::filesystem::path& file : o.files_left_out)
    std::fprintf(stderr, "clp-transfer: warning: %s left out of the output: it holds the old vocabulary\n",
                 file.c_str());
  for (const vocabulary_tensor* t : o.source.plan.with_role(vocabulary_role::warned))
    std::fprintf(stderr, "clp-transfer: warning: %s\n", warning_text(*t).c_str());
}

}  // namespace clp_transfer
