// `clp-transfer evaluate --source S --helper H`: which weighting to use for this pair, without
// training. Each weighting synthesises held-out overlapping tokens from the rest (clp::evaluate)
// over a few splits, and is scored by the mean cosine of its rows with their true source rows;
// the real missing rows' diagnostics (negative cosine sums, inflated rows) are shown beside.
// It recommends the program's default weighting unless another that inflates no row leads it
// by more than the splits' spread (recommend() says how that is measured).
#include <clp/evaluate.hpp>
#include <clp/synthesize.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/command.hpp"
#include "errors.hpp"
#include "transfer/arguments.hpp"
#include "transfer/read_models.hpp"
#include "library_names.hpp"

namespace clp_transfer {

namespace {

struct evaluate_options {
  transfer_arguments args;  // the models, their tensors, --match, --threads, --tile-mb
  std::string match = "bytes";
  CLI::Option* match_option = nullptr;
  double held_out = 0.1;
  int splits = 3;
  bool json = false;
};

/// One weighting as the command tries it.
struct candidate {
  std::string label;  ///< "top-k k=10"
  std::string name;   ///< --weighting's value
  std::optional<Index> k;
  clp::weighting policy;
};

std::vector<candidate> candidates() {
  std::vector<candidate> list;
  const auto add = [&](const std::string& name, std::optional<Index> k) {
    list.push_back({k && name != "omp" ? name + " k=" + std::to_string(*k) : name, name, k, clp::make_weighting(name, k)});
  };
  for (const char* name : {"paper", "paper-guarded", "clamped", "sparsemax", "omp", "least-squares"})
    add(name, std::nullopt);
  for (const char* name : {"top-k", "softmax"})
    for (const Index k : {5, 10, 30}) add(name, k);
  return list;
}

/// What a weighting came to: its held-out scores over the splits, and its real missing rows.
struct outcome {
  const candidate* weighting = nullptr;
  std::vector<double> split_cosines;   ///< mean cosine per split
  double mean_cosine = 0, spread = 0;  ///< mean and (max - min) / 2 over the splits
  double relative_error = 0, norm_ratio = 0;
  Index negative_sum_rows = 0, inflated_rows = 0, degenerate_rows = 0;
  double max_row_norm_ratio = 0;  ///< largest synthesised row norm / median source row norm (map only)
  double relative_lambda = -1;    ///< least-squares: of the last split
};

/// The source's first column as a 1-column view of the same memory: the weights of a cosine
/// weighting, and so its diagnostics, do not depend on the source's width.
matrix_view<const void> first_column(const matrix_view<const void>& v) {
  return {v.data(), v.type(), v.rows(), 1, v.outer_stride(), v.order()};
}

/// The real missing rows' diagnostics. Weightings whose weights are convex (clamped, top-k,
/// softmax, sparsemax) cannot inflate a row, and the negative cosine sums are the cosines', the
/// same for every weighting: one synthesis of a 1-column source gives those. paper,
/// paper-guarded and omp run on the 1-column source too; the map, whose inflated rows are
/// judged by their norms, on the whole source.
void diagnose(std::vector<outcome>& outcomes, const loaded_models& models, const clp::execution_options& execution) {
  const vocabulary_overlap& overlap = models.matching.overlap;
  const matrix_view<const void> source = models.source.embedding.view(), helper = models.helper.embedding.view();
  const Index rows = models.helper.embedding.rows();
  clp::synthesis_options options;
  static_cast<clp::execution_options&>(options) = execution;
  std::vector<float> narrow(static_cast<std::size_t>(rows));
  const auto run = [&](const clp::weighting& policy, bool whole) {
    if (!whole)
      return clp::synthesize_rows(first_column(source), helper, overlap, matrix_view<float>(narrow.data(), rows, 1),
                                  policy, options);
    std::vector<float> wide(std::size_t(rows * source.cols()));
    return clp::synthesize_rows(source, helper, overlap, matrix_view<float>(wide.data(), rows, source.cols()), policy,
                                options);
  };
  const clp::synthesis_report convex = run(clp::top_k_weights{}, false);
  for (outcome& o : outcomes) {
    const std::string& name = o.weighting->name;
    const bool own = name == "paper" || name == "paper-guarded" || name == "omp" || name == "least-squares";
    const clp::synthesis_report report = own ? run(o.weighting->policy, name == "least-squares") : convex;
    o.negative_sum_rows = convex.negative_sum_rows;
    o.inflated_rows = own ? report.inflated_rows : 0;
    o.degenerate_rows = report.degenerate_rows();
    if (name == "least-squares" && report.median_source_row_norm > 0)
      o.max_row_norm_ratio = report.max_output_row_norm / report.median_source_row_norm;
  }
}

/// Every candidate over the splits.
std::vector<outcome> score(const std::vector<candidate>& list, const loaded_models& models,
                           const evaluate_options& options) {
  std::vector<outcome> outcomes;
  for (const candidate& c : list) {
    outcome o;
    o.weighting = &c;
    for (int split = 0; split < options.splits; ++split) {
      clp::evaluation_options e;
      static_cast<clp::execution_options&>(e) = options.args.execution.options();
      e.held_out_share = options.held_out;
      e.seed = std::uint64_t(split);
      const clp::evaluation result = clp::evaluate(models.source.embedding.view(), models.helper.embedding.view(),
                                                   models.matching.overlap, c.policy, e);
      const clp::held_out_scores& s = result.scores.front();
      o.split_cosines.push_back(s.mean_cosine);
      o.relative_error += s.mean_relative_error / options.splits;
      o.norm_ratio += s.median_norm_ratio / options.splits;
      if (!result.report.maps.empty()) o.relative_lambda = result.report.maps.front().relative_lambda;
    }
    const auto [low, high] = std::minmax_element(o.split_cosines.begin(), o.split_cosines.end());
    for (double x : o.split_cosines) o.mean_cosine += x / double(o.split_cosines.size());
    o.spread = (*high - *low) / 2;
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

/// What evaluate recommends, and why.
struct recommendation {
  const outcome* chosen = nullptr;  ///< nullptr: every weighting inflates some row
  bool is_default = false;
  const outcome* leader = nullptr;  ///< the best score among those that inflate no row
  double lead = 0, spread = 0;      ///< leader against the default, paired by split
  std::string reason;               ///< in words, for the table and the JSON
};

/// The default (the program's default weighting) unless another weighting that inflates no real
/// missing row leads it by more than the splits' spread: with d_s the leader's held-out cosine
/// minus the default's on split s, the lead is mean(d) and the spread (max(d) - min(d)) / 2, so
/// the leader replaces the default only when it leads on every split by a margin the splits
/// agree on. A default that inflates rows is never kept.
recommendation recommend(const std::vector<outcome>& sorted) {
  recommendation r;
  const outcome* by_default = nullptr;
  for (const outcome& o : sorted) {
    if (!r.leader && o.inflated_rows == 0) r.leader = &o;
    if (o.weighting->name == default_weighting && !o.weighting->k) by_default = &o;
  }
  if (!r.leader) {
    r.reason = "every weighting inflates some row";
    return r;
  }
  if (!by_default || by_default->inflated_rows > 0 || r.leader == by_default) {
    r.chosen = r.leader;
    r.is_default = r.leader == by_default;
    r.reason = r.is_default ? "the default, and the best held-out cosine among those that inflate no row"
                            : "the best held-out cosine among those that inflate no row; the default inflates rows";
    return r;
  }
  std::vector<double> d;
  for (std::size_t s = 0; s < r.leader->split_cosines.size(); ++s)
    d.push_back(r.leader->split_cosines[s] - by_default->split_cosines[s]);
  const auto [low, high] = std::minmax_element(d.begin(), d.end());
  for (double x : d) r.lead += x / double(d.size());
  r.spread = (*high - *low) / 2;
  char words[200];
  if (r.lead > r.spread) {
    r.chosen = r.leader;
    std::snprintf(words, sizeof words, "leads the default by %.3f, more than the splits' spread %.3f", r.lead,
                  r.spread);
  } else {
    r.chosen = by_default;
    r.is_default = true;
    std::snprintf(words, sizeof words, "the default; %s leads by %.3f, within the splits' spread %.3f; default kept",
                  r.leader->weighting->label.c_str(), r.lead, r.spread);
  }
  r.reason = words;
  return r;
}

/// The recommended weighting as options: "--weighting top-k --k 30".
std::string as_options(const candidate& c) {
  return "--weighting " + c.name + (c.k ? " --k " + std::to_string(*c.k) : std::string());
}

void print_text(const std::vector<outcome>& sorted, const recommendation& best, const evaluate_options& options,
                const loaded_models& models, double seconds) {
  const vocabulary_overlap& overlap = models.matching.overlap;
  std::printf("held out %.0f%% of %td overlapping tokens (%d splits); %td missing rows\n", 100 * options.held_out,
              overlap.size(), options.splits, Index(overlap.missing_ids.size()));
  std::printf("%-20s %14s %10s %10s %14s %9s\n", "weighting", "cosine", "rel. L2", "norm ratio", "negative sums",
              "inflated");
  for (const outcome& o : sorted)
    std::printf("%-20s %7.3f ±%.3f %10.3f %10.3f %14td %9td\n", o.weighting->label.c_str(), o.mean_cosine, o.spread,
                o.relative_error, o.norm_ratio, o.negative_sum_rows, o.inflated_rows);
  if (best.chosen)
    std::printf("recommended: %s (%s)\n", as_options(*best.chosen->weighting).c_str(), best.reason.c_str());
  else
    std::printf("recommended: none (%s)\n", best.reason.c_str());
  std::printf(
      "cosine: mean over the splits ± half their range; negative sums and inflated: of the real missing rows; "
      "%.2f s\n",
      seconds);
}

void print_json(const std::vector<outcome>& sorted, const recommendation& best, const evaluate_options& options,
                const loaded_models& models, double seconds) {
  nlohmann::ordered_json out, rows = nlohmann::ordered_json::array();
  out["source"] = options.args.source.string();
  out["helper"] = options.args.helper.string();
  out["overlap"] = models.matching.overlap.size();
  out["missing"] = models.matching.overlap.missing_ids.size();
  out["held_out_share"] = options.held_out;
  out["splits"] = options.splits;
  for (const outcome& o : sorted) {
    nlohmann::ordered_json row{{"weighting", o.weighting->name},
                               {"k", o.weighting->k ? nlohmann::ordered_json(*o.weighting->k) : nullptr},
                               {"mean_cosine", o.mean_cosine},
                               {"spread", o.spread},
                               {"split_cosines", o.split_cosines},
                               {"mean_relative_error", o.relative_error},
                               {"median_norm_ratio", o.norm_ratio},
                               {"missing_negative_sum_rows", o.negative_sum_rows},
                               {"missing_inflated_rows", o.inflated_rows},
                               {"missing_degenerate_rows", o.degenerate_rows}};
    if (o.relative_lambda >= 0) row["relative_lambda"] = o.relative_lambda;
    if (o.max_row_norm_ratio > 0) row["max_row_norm_over_median_source"] = o.max_row_norm_ratio;
    rows.push_back(row);
  }
  out["weightings"] = rows;
  out["recommended"] =
      best.chosen
          ? nlohmann::ordered_json{{"weighting", best.chosen->weighting->name},
                                   {"k", best.chosen->weighting->k ? nlohmann::ordered_json(*best.chosen->weighting->k)
                                                                   : nullptr},
                                   {"default", best.is_default},
                                   {"lead_over_default", best.lead},
                                   {"splits_spread", best.spread},
                                   {"reason", best.reason}}
          : nlohmann::ordered_json(nullptr);
  out["seconds"] = seconds;
  std::printf("%s\n", out.dump(2).c_str());
}

void run_evaluate(evaluate_options& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!(options.held_out > 0 && options.held_out < 1))
    throw clp::invalid_argument(option_facts("--held-out"), "must be between 0 and 1 (exclusive)");
  if (options.splits < 1) throw clp::invalid_argument(option_facts("--splits"), "must be at least 1");
  options.args.execution.check();
  options.args.matching = parse_match(options.match, options.match_option->count() > 0);
  const loaded_models models = read_models(options.args);
  if (models.matching.overlap.size() < 2)
    throw clp::invalid_argument(clp::error_facts{}.with_file(options.args.source.string()),
                                "and " + options.args.helper.string() + " share " +
                                    std::to_string(models.matching.overlap.size()) +
                                    " token(s): at least 2 are needed to hold one out and synthesise it from the rest");
  const std::vector<candidate> list = candidates();
  error_origins origins;
  origins.add("source", models.source.embedding.origin()).add("helper", models.helper.embedding.origin());
  std::vector<outcome> outcomes = origins.run([&] { return score(list, models, options); });
  origins.run([&] { diagnose(outcomes, models, options.args.execution.options()); });
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [](const outcome& a, const outcome& b) { return a.mean_cosine > b.mean_cosine; });
  const recommendation best = recommend(outcomes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.json)
    print_json(outcomes, best, options, models, seconds);
  else
    print_text(outcomes, best, options, models, seconds);
}

}  // namespace

command evaluate_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("evaluate", "Score each weighting by held-out reconstruction of overlapping tokens");
  const auto options = std::make_shared<evaluate_options>();
  transfer_arguments& args = options->args;
  command->add_option("--source", args.source, "Large source model folder")->required();
  command->add_option("--helper", args.helper, "Small helper model folder speaking the target vocabulary")->required();
  command->add_option("--embedding-tensor", args.embedding_tensor, "Source input embedding name (default: found)");
  command->add_option("--helper-embedding-tensor", args.helper_embedding_tensor,
                      "Helper input embedding name (default: found)");
  options->match_option = add_match_option(*command, options->match);
  add_execution_options(*command, args.execution, "Working memory of each synthesis, MiB");
  command->add_option("--held-out", options->held_out, "Share of the overlap held out per split")
      ->capture_default_str();
  command->add_option("--splits", options->splits, "Splits (seeds 0, 1, ...)")->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON");
  return {command, [options] { run_evaluate(*options); }};
}

}  // namespace clp_transfer
