// What a transfer did, as JSON (--report) and on stderr.
#pragma once

#include <clp/synthesize.hpp>
#include <clp/vocabulary.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "io/language_model_config.hpp"
#include "io/output_folder.hpp"
#include "io/system/interruption.hpp"
#include "library_names.hpp"
#include "token_matching.hpp"
#include "transfer/output_check.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/undertrained_report.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp_transfer {

/// Wall seconds of each phase: `screen` is the under-trained screen (0 when none ran), `check`
/// the output check; `total` is the whole run, up to the summary.
struct phase_seconds {
  double read = 0, screen = 0, synthesize = 0, write = 0, check = 0, total = 0;
};

/// Everything the report and the summary print, gathered from the phases.
struct transfer_outcome {
  const loaded_models& models;                          ///< the folders read, their matching and tensor plan
  const synthesis_choice& synthesis;                    ///< the method and weighting that made the rows
  const undertrained_screen& undertrained;              ///< the shared rows flagged, and what became of them
  const synthesised_embeddings& synthesised;            ///< the output matrices' shapes and the synthesis report
  const transferred_config& config;                     ///< what became of config.json's token ids
  const std::filesystem::path& output;                  ///< the output folder
  const std::vector<verify::finding>& output_findings;  ///< verify's checks on the output (check_output)
  phase_seconds seconds;

  const vocabulary_overlap& overlap() const { return models.matching.overlap; }
  const clp::synthesis_report& report() const { return synthesised.report; }
  Index output_rows() const { return synthesised.embedding.rows(); }
  Index missing() const { return overlap().target_rows() - overlap().size(); }
  /// The largest synthesised row is out of proportion with the source's rows.
  bool out_of_proportion() const {
    return report().median_source_row_norm > 0 && report().max_output_row_norm > 4 * report().median_source_row_norm;
  }
};

/// Which of the synthesis report's diagnostics mean something for the weighting that ran: the
/// summary and the JSON report show these and leave the others out (the baselines, which weigh
/// nothing, show none).
struct weighting_diagnostics {
  /// Rows whose largest cosine is not positive: every weighting that reads cosines, which all
  /// do but least-squares with the map's own row norms.
  bool no_positive_cosine = false;
  /// Rows whose cosine sum is negative: the weightings that divide by that sum, paper (the
  /// row's weights flip sign) and paper-guarded (the row falls back to the mean).
  bool negative_sums = false;
  /// Inflated rows: weights whose absolute values add up to more than 2 (paper, paper-guarded,
  /// omp), or a row norm over 4x the median source row's (least-squares). The convex weightings
  /// cannot inflate a row.
  bool inflated = false;
  /// The effective number of neighbours: every weighting but least-squares, whose every row
  /// weighs the whole overlap.
  bool effective_neighbours = false;
  /// The similarity product that formed the neighbour lists (forms_neighbour_lists).
  bool similarity_product = false;
};

/// The diagnostics of `weighting`.
inline weighting_diagnostics diagnostics_of(const weighting_choice& weighting) {
  const std::string& name = weighting.name;
  const bool map = name == "least-squares", paper = name == "paper" || name == "paper-guarded";
  weighting_diagnostics shown;
  shown.no_positive_cosine = !(map && weighting.row_norms == "map");
  shown.negative_sums = paper;
  shown.inflated = paper || name == "omp" || map;
  shown.effective_neighbours = !map;
  shown.similarity_product = forms_neighbour_lists(weighting);
  return shown;
}

/// The weighting as the user chose it, with only the options it reads, each as given
/// (--temperature 0.1 is written 0.1); null for the baselines, which weigh nothing.
inline nlohmann::ordered_json weighting_json(const synthesis_choice& synthesis) {
  if (synthesis.method != transfer_method::clp) return nullptr;
  const weighting_choice& weighting = synthesis.weighting;
  nlohmann::ordered_json json{{"name", weighting.name}};
  if (reads_k(weighting)) json["k"] = weighting.k;
  if (weighting.name == "softmax") json["temperature"] = std::stod(shortest_text(weighting.temperature));
  if (weighting.name == "least-squares") {
    json["row_norms"] = weighting.row_norms;
    if (weighting.lambda) json["lambda"] = *weighting.lambda;
  }
  return json;
}

/// The diagnostics of a clp synthesis that apply to its weighting (diagnostics_of), into `json`.
inline void add_diagnostics(nlohmann::ordered_json& json, const clp::synthesis_report& report,
                            const weighting_choice& weighting) {
  const weighting_diagnostics shown = diagnostics_of(weighting);
  json["degenerate_rows"] = report.degenerate_rows();
  json["zero_norm_rows"] = report.zero_norm_rows;
  json["fallback_rows"] = report.fallback_rows;
  if (shown.no_positive_cosine) json["no_positive_cosine_rows"] = report.no_positive_rows;
  if (shown.inflated) json["inflated_rows"] = report.inflated_rows;
  // Rows whose helper cosines add up to a negative sum: as published, their weights flip sign.
  if (shown.negative_sums) json["negative_sum_rows"] = report.negative_sum_rows;
  if (shown.similarity_product)
    json["similarity_product"] = {{"ran", report.similarity_product},
                                  {"rescored_rows", report.rescored_rows},
                                  {"rescored_candidates", report.rescored_candidates}};
  if (shown.effective_neighbours)
    json["effective_neighbours"] = {{"min", report.effective_neighbours_min},
                                    {"median", report.effective_neighbours_median},
                                    {"max", report.effective_neighbours_max}};
  json["max_output_row_norm"] = report.max_output_row_norm;
  json["median_output_row_norm"] = report.median_output_row_norm;
  json["median_source_row_norm"] = report.median_source_row_norm;
}

/// least-squares: each map's fit (the embedding's first, then each transferred tensor's) and
/// the embedding's held-out check.
inline nlohmann::ordered_json least_squares_json(const clp::synthesis_report& report,
                                                 const std::optional<clp::held_out_scores>& held_out) {
  nlohmann::ordered_json json, maps = nlohmann::ordered_json::array();
  for (const clp::least_squares_fit& fit : report.maps)
    maps.push_back({{"lambda", fit.lambda},
                    {"relative_lambda", fit.relative_lambda},
                    {"lambda_chosen_by_gcv", fit.automatic},
                    {"gram_rank", fit.rank},
                    {"degrees_of_freedom", fit.degrees_of_freedom},
                    {"r_squared_on_overlap", fit.r_squared}});
  json["maps"] = maps;
  if (held_out)
    json["held_out"] = {{"share", 0.1},
                        {"rows", held_out->cosine.size()},
                        {"mean_cosine", held_out->mean_cosine},
                        {"median_cosine", held_out->median_cosine},
                        {"mean_relative_error", held_out->mean_relative_error},
                        {"median_norm_ratio", held_out->median_norm_ratio}};
  return json;
}

/// Writes the JSON report beside its final name `report_file` (commit_output moves it there once
/// the output is in place); returns where, or an empty path for an empty `report_file`.
inline std::filesystem::path write_partial_report(const transfer_outcome& outcome,
                                                  const std::filesystem::path& report_file) {
  if (report_file.empty()) return {};
  const vocabulary_overlap& overlap = outcome.overlap();
  const clp::synthesis_report& report = outcome.report();
  nlohmann::ordered_json json;
  json["source"] = outcome.models.source.checkpoint.folder.string();
  json["helper"] = outcome.models.helper.checkpoint.folder.string();
  json["output"] = outcome.output.string();
  json["method"] = method_name(outcome.synthesis.method);
  json["weighting"] = weighting_json(outcome.synthesis);
  if (outcome.synthesis.method != transfer_method::clp) json["seed"] = outcome.synthesis.seed;
  if (!report.maps.empty()) json["least_squares"] = least_squares_json(report, outcome.synthesised.held_out);
  json["source_vocab_size"] = overlap.source_vocab_size;
  json["target_vocab_size"] = overlap.target_vocab_size;
  json["target_rows"] = outcome.output_rows();
  json["overlap"] = overlap.size();
  json["overlap_share_of_source"] = overlap.share_of_source();
  json["overlap_share_of_target"] = overlap.share_of_target();
  json["missing"] = outcome.missing();
  json["matching"] = matching_json(outcome.models.matching);
  json["undertrained"] = undertrained_json(outcome.undertrained);
  json["padding_rows"] = report.padding_rows;  // of the missing rows; not in the counts below
  if (outcome.synthesis.method == transfer_method::clp) add_diagnostics(json, report, outcome.synthesis.weighting);
  const loaded_model& source = outcome.models.source;
  json["vocabulary_tensors"] = vocabulary_tensors_json(source.plan, outcome.output_rows());
  json["config_token_ids"] = config_token_ids_json(outcome.config);
  json["warnings"] = layout_warnings(source.plan, outcome.config, source.checkpoint.config_file());
  json["output_check"] = verify::findings_json(outcome.output, outcome.output_findings);
  const phase_seconds& s = outcome.seconds;
  json["seconds"] = {{"read", s.read},   {"screen", s.screen}, {"synthesize", s.synthesize},
                     {"write", s.write}, {"check", s.check},   {"total", s.total}};
  if (outcome.synthesis.method == transfer_method::clp) {
    // synthesize's steps: the library's (clp::synthesis_seconds), then the map's held-out check.
    const clp::synthesis_seconds& steps = report.seconds;
    json["seconds"]["steps"] = {{"moments", steps.moments},
                                {"fit", steps.fit},
                                {"prepare", steps.prepare},
                                {"blocks", steps.blocks},
                                {"similarities", steps.similarities},
                                {"rows", steps.rows},
                                {"held_out_check", outcome.synthesised.held_out_seconds}};
  }
  const std::filesystem::path partial = report_file.string() + ".partial";
  io::remove_on_interruption(partial);  // until commit_output moves it into place
  // A token's text need not be UTF-8 (a vocabulary may hold any bytes): such bytes become U+FFFD.
  io::write_file_atomically(partial, json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return partial;
}

/// The summary's line on the similarity product: which ran, and what was rescored.
inline void print_similarity_product(const clp::synthesis_report& report) {
  if (report.rescored_rows == 0) {
    std::fprintf(stderr, "  similarity product %s\n", report.similarity_product.c_str());
    return;
  }
  std::fprintf(stderr, "  similarity product %s; %td candidates rescored in float32 over %td rows (%.1f a row)\n",
               report.similarity_product.c_str(), report.rescored_candidates, report.rescored_rows,
               double(report.rescored_candidates) / double(report.rescored_rows));
}

/// The summary's lines on the diagnostics `shown` of a clp synthesis.
inline void print_diagnostics(const clp::synthesis_report& report, const weighting_diagnostics& shown) {
  std::fprintf(stderr, "  fallback rows      %td (zero-norm helper rows %td, no usable weights %td)\n",
               report.degenerate_rows(), report.zero_norm_rows, report.fallback_rows);
  std::string checks;
  const auto add = [&checks](const std::string& part) { checks += (checks.empty() ? "" : "; ") + part; };
  if (shown.no_positive_cosine) add("no positive cosine " + std::to_string(report.no_positive_rows));
  if (shown.negative_sums) add("negative cosine sum " + std::to_string(report.negative_sum_rows));
  if (shown.inflated) add("inflated " + std::to_string(report.inflated_rows));
  if (!checks.empty()) std::fprintf(stderr, "  rows               %s\n", checks.c_str());
  if (shown.effective_neighbours)
    std::fprintf(stderr, "  neighbours         effective 1/sum(w^2): min %.1f, median %.1f, max %.1f\n",
                 report.effective_neighbours_min, report.effective_neighbours_median, report.effective_neighbours_max);
  std::fprintf(stderr, "  row norms          largest synthesised %.3g, median source %.3g\n",
               report.max_output_row_norm, report.median_source_row_norm);
}

/// The summary on stderr; `report_file`, when not empty, is where the JSON report went.
inline void print_summary(const transfer_outcome& outcome, const std::filesystem::path& report_file) {
  const vocabulary_overlap& overlap = outcome.overlap();
  const clp::synthesis_report& report = outcome.report();
  const embedding_matrix& source = outcome.models.source.embedding;
  const embedding_matrix& target = outcome.synthesised.embedding;  // shape only: its pages are written out
  const transfer_method method = outcome.synthesis.method;
  const bool clp = method == transfer_method::clp;
  const std::string how = clp ? "synthesised (weighting " + outcome.synthesis.weighting.name + ")"
                              : "drawn at random (method " + std::string(method_name(method)) + ")";
  std::fprintf(stderr,
               "clp-transfer: wrote %s\n"
               "  source vocabulary  %td tokens (%s: %td x %td %s)\n"
               "  target vocabulary  %td tokens (output %s: %td x %td %s)\n"
               "  overlap            %td tokens = %.1f%% of source, %.1f%% of target\n"
               "  missing            %td rows, %s\n",
               outcome.output.c_str(), overlap.source_vocab_size, outcome.models.source.embedding_name.c_str(),
               source.rows(), source.cols(), source.dtype_name().c_str(), overlap.target_vocab_size,
               outcome.models.source.embedding_name.c_str(), target.rows(), source.cols(), source.dtype_name().c_str(),
               overlap.size(), 100 * overlap.share_of_source(), 100 * overlap.share_of_target(), outcome.missing(),
               how.c_str());
  print_matching_summary(outcome.models.matching);
  const std::string undertrained =
      undertrained_summary(outcome.undertrained, overlap.size(),
                           report_file.empty() ? "--report to list them" : "listed in " + report_file.string());
  if (!undertrained.empty()) std::fprintf(stderr, "  under-trained      %s\n", undertrained.c_str());
  if (report.padding_rows > 0)
    std::fprintf(stderr, "  padding rows       %td of them (no token names them; not counted below)\n",
                 report.padding_rows);
  if (clp) print_diagnostics(report, diagnostics_of(outcome.synthesis.weighting));
  if (clp && !report.maps.empty()) {
    const clp::least_squares_fit& fit = report.maps.front();
    std::fprintf(stderr, "  least-squares map  lambda %.3g x the mean Gram eigenvalue (%s), R^2 on the overlap %.3f",
                 fit.relative_lambda, fit.automatic ? "chosen by GCV" : "--lambda", fit.r_squared);
    if (const auto& held_out = outcome.synthesised.held_out)
      std::fprintf(stderr, ", held-out cosine %.3f (%zu rows)", held_out->mean_cosine, held_out->cosine.size());
    std::fprintf(stderr, "\n");
  }
  for (const vocabulary_tensor& t : outcome.models.source.plan.tensors)
    if (t.role == vocabulary_role::tied_copy || t.role == vocabulary_role::transferred)
      std::fprintf(stderr, "  %-18s %s %s %s: %s\n", vocabulary_role_name(t.role), t.name.c_str(),
                   detail::shape_text(t.output_shape(target.rows())).c_str(), t.dtype.c_str(), t.reason.c_str());
  if (clp && diagnostics_of(outcome.synthesis.weighting).similarity_product) print_similarity_product(report);
  const phase_seconds& s = outcome.seconds;
  std::fprintf(stderr,
               "  seconds            read %.2f, screen %.2f, synthesize %.2f, write %.2f, check %.2f, total %.2f\n",
               s.read, s.screen, s.synthesize, s.write, s.check, s.total);
  print_output_check(outcome.output_findings);
  // The warnings after the summary's last line, not among its lines.
  if (clp && outcome.out_of_proportion())
    std::fprintf(stderr,
                 "clp-transfer: warning: the largest synthesised row norm (%.3g) is more than 4x the median source "
                 "row norm (%.3g); try --weighting clamped, top-k or sparsemax\n",
                 report.max_output_row_norm, report.median_source_row_norm);
  for (const std::string& warning :
       layout_warnings(outcome.models.source.plan, outcome.config, outcome.models.source.checkpoint.config_file()))
    std::fprintf(stderr, "clp-transfer: warning: %s\n", warning.c_str());
}

}  // namespace clp_transfer
