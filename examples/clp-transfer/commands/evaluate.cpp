// `clp-transfer evaluate --source S --helper H`: which weighting to use for this pair, without
// training. Each weighting synthesises held-out overlapping tokens from the rest (clp::evaluate_each,
// every weighting in one similarity pass per split) over a few splits, and is scored by the mean
// cosine of its rows with their true source rows; the real missing rows' diagnostics (negative
// cosine sums, inflated rows) come from one pass over the missing rows shared by every weighting
// (clp::synthesize_each) and are shown beside. It recommends the program's default weighting
// unless another that inflates no row leads it by more than the splits' spread
// (weighting_scores/recommendation.hpp). Under --undertrained synthesise, shared tokens whose source
// rows look under-trained are left out of the overlap (transfer/undertrained.hpp): out of the
// splits and every fit, and among the missing rows, as a transfer would synthesise them.
#include <clp/evaluate.hpp>
#include <clp/overlap_cache.hpp>
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
#include "library_names.hpp"
#include "progress.hpp"
#include "similarity_choice.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/read_models.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/undertrained_choice.hpp"
#include "transfer/undertrained_report.hpp"
#include "weighting_scores/candidates.hpp"
#include "weighting_scores/recommendation.hpp"

namespace clp_transfer {

namespace {

/// The options as given; `pair` and `execution` hold what the read and the library calls take.
struct scoring_options {
  model_pair pair;                // --source, --helper, their embeddings, --match
  execution_arguments execution;  // --threads, --tile-mb
  bool quiet = false;
  std::string match = "bytes";
  CLI::Option* match_option = nullptr;
  double held_out = 0.1;
  int splits = 3;
  std::string weightings;  // --weightings; not given: default_candidates()
  CLI::Option* weightings_option = nullptr;
  std::string similarity = "auto";
  std::string undertrained = undertrained_name(default_undertrained);
  bool json = false;
};

/// The models as evaluated, and the screen that chose their overlap.
struct evaluated_models {
  loaded_models models;  ///< matching.overlap: without the flagged rows' pairs under synthesise
  undertrained_screen screen;
  Index shared = 0;  ///< the matched overlap's pairs, before the screen
};

/// The source's first column as a 1-column view of the same memory: the weights of a cosine
/// weighting, and so its diagnostics, do not depend on the source's width.
matrix_view<const void> first_column(const matrix_view<const void>& v) {
  return {v.data(), v.type(), v.rows(), 1, v.outer_stride(), v.order()};
}

/// The most memory evaluate may give omp's Gram matrix of the overlap:
/// enough for a Llama-2 -> Qwen3 overlap (29,239 rows: 3.4 GB).
constexpr std::size_t diagnosis_gram_bytes = std::size_t(4) << 30;

/// A weighting as evaluate runs it: omp with the overlap's Gram matrix up to diagnosis_gram_bytes
/// (Batch-OMP, |overlap| per row and step) where its own budget would run the pursuit by products
/// (one product the size of the cosines' per step): the splits and the many missing rows share
/// one Gram matrix, which costs far less than k products, and both give the same picks and
/// coefficients up to float rounding (<clp/weights.hpp>). Others as they are.
clp::weighting diagnosed_policy(const clp::weighting& policy, Index n_overlap) {
  clp::weighting diagnosed = policy;
  if (auto* omp = std::get_if<clp::omp_weights>(&diagnosed)) {
    const std::size_t gram = std::size_t(n_overlap) * std::size_t(n_overlap) * sizeof(float);
    if (gram <= diagnosis_gram_bytes) omp->max_gram_bytes = std::max(omp->max_gram_bytes, gram);
  }
  return diagnosed;
}

/// The real missing rows' diagnostics, in one pass over them (clp::synthesize_each: each block's
/// cosines formed once for every job), reports only (no row is stored). Weightings whose weights
/// are convex (clamped, top-k, softmax, sparsemax) cannot inflate a row, and the negative cosine
/// sums are the cosines', the same for every weighting: one top-k job on a 1-column source gives
/// those. paper, paper-guarded and omp, whose inflation is a property of their weights, run on
/// the 1-column source too; the map, whose inflated rows are judged by their norms, on the whole
/// source. `product`: the transfer's similarity product, which forms the pass's cosines when
/// every job reads only neighbour lists (top-k, and the map's row norms from top-k).
/// Returns the name of the product that formed the cosines.
std::string diagnose(std::vector<weighting_score>& scores, const loaded_models& models,
                     const clp::synthesis_options& options) {
  const matrix_view<const void> source = models.source.embedding.view(), helper = models.helper.embedding.view();
  const matrix_view<const void> narrow = first_column(source);
  std::vector<clp::synthesis_job> jobs{{clp::top_k_weights{}, narrow}};  // the convex weightings and the sums
  std::vector<std::size_t> job_of(scores.size(), 0);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const std::string& name = scores[i].weighting->name;
    if (name != "paper" && name != "paper-guarded" && name != "omp" && name != "least-squares") continue;
    job_of[i] = jobs.size();
    jobs.emplace_back(diagnosed_policy(scores[i].weighting->policy, models.matching.overlap.size()),
                      name == "least-squares" ? source : narrow);
  }
  const std::vector<clp::synthesis_report> reports =
      clp::synthesize_each(helper, models.matching.overlap, jobs, options);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    weighting_score& o = scores[i];
    const clp::synthesis_report& report = reports[job_of[i]];
    o.negative_sum_rows = reports.front().negative_sum_rows;
    o.inflated_rows = job_of[i] > 0 ? report.inflated_rows : 0;
    o.degenerate_rows = report.degenerate_rows();
    if (o.weighting->name == "least-squares" && report.median_source_row_norm > 0)
      o.max_row_norm_ratio = report.max_output_row_norm / report.median_source_row_norm;
  }
  return reports.front().similarity_product;
}

/// Every candidate over the splits, in one clp::evaluate_each: per split the held-out rows'
/// cosines formed once for every weighting, and what the splits share (omp's Gram matrix, the
/// map's moments) prepared once.
std::vector<weighting_score> score(const std::vector<weighting_candidate>& list, const loaded_models& models,
                                   const scoring_options& options, const std::shared_ptr<clp::overlap_cache>& cache,
                                   progress_reporter& progress) {
  std::vector<weighting_score> scores(list.size());
  std::vector<clp::weighting> policies;
  for (std::size_t c = 0; c < list.size(); ++c) {
    scores[c].weighting = &list[c];
    policies.push_back(diagnosed_policy(list[c].policy, models.matching.overlap.size()));
  }
  clp::evaluation_options e;
  e.cache = cache;
  static_cast<clp::execution_options&>(e) = options.execution.options();
  e.held_out_share = options.held_out;
  e.seed = 0;
  e.splits = options.splits;
  e.progress = [&](Index done, Index total) { progress.update(double(done), double(total)); };
  progress.begin("held out (" + std::to_string(options.splits) + " splits)");
  const std::vector<std::vector<clp::evaluation>> results = clp::evaluate_each(
      models.source.embedding.view(), models.helper.embedding.view(), models.matching.overlap, policies, e);
  progress.end();
  for (std::size_t c = 0; c < list.size(); ++c) {
    weighting_score& o = scores[c];
    for (const clp::evaluation& split : results[c]) {
      const clp::held_out_scores& s = split.scores.front();
      o.split_cosines.push_back(s.mean_cosine);
      o.relative_error += s.mean_relative_error / options.splits;
      o.norm_ratio += s.median_norm_ratio / options.splits;
      if (!split.report.maps.empty()) o.relative_lambda = split.report.maps.front().relative_lambda;
    }
    const auto [low, high] = std::minmax_element(o.split_cosines.begin(), o.split_cosines.end());
    for (double x : o.split_cosines) o.mean_cosine += x / double(o.split_cosines.size());
    o.spread = (*high - *low) / 2;
  }
  return scores;
}

void print_text(const std::vector<weighting_score>& sorted, const recommendation& best, const scoring_options& options,
                const evaluated_models& evaluated, const std::string& product, double seconds) {
  const vocabulary_overlap& overlap = evaluated.models.matching.overlap;
  std::printf("held out %.0f%% of %td overlapping tokens (%d splits); %td missing rows\n", 100 * options.held_out,
              overlap.size(), options.splits, Index(overlap.missing_ids.size()));
  if (!evaluated.screen.flagged.empty())  // the shared tokens' count above is the screened one
    std::printf("under-trained: %s\n",
                undertrained_summary(evaluated.screen, evaluated.shared, "--json to list them").c_str());
  std::printf("%-20s %14s %10s %10s %14s %9s\n", "weighting", "cosine", "rel. L2", "norm ratio", "negative sums",
              "inflated");
  for (const weighting_score& o : sorted)
    std::printf("%-20s %7.3f ±%.3f %10.3f %10.3f %14td %9td\n", o.weighting->label.c_str(), o.mean_cosine, o.spread,
                o.relative_error, o.norm_ratio, o.negative_sum_rows, o.inflated_rows);
  if (best.chosen)
    std::printf("recommended: %s (%s)\n", as_options(*best.chosen->weighting).c_str(), best.reason.c_str());
  else
    std::printf("recommended: none (%s)\n", best.reason.c_str());
  std::printf(
      "cosine: mean over the splits ± half their range; negative sums and inflated: of the real missing rows "
      "(cosines: %s); %.2f s\n",
      product.c_str(), seconds);
}

void print_json(const std::vector<weighting_score>& sorted, const recommendation& best, const scoring_options& options,
                const evaluated_models& evaluated, const std::string& product, double seconds) {
  const loaded_models& models = evaluated.models;
  nlohmann::ordered_json out, rows = nlohmann::ordered_json::array();
  out["source"] = options.pair.source.string();
  out["helper"] = options.pair.helper.string();
  out["overlap"] = models.matching.overlap.size();
  out["missing"] = models.matching.overlap.missing_ids.size();
  out["held_out_share"] = options.held_out;
  out["splits"] = options.splits;
  out["undertrained"] = undertrained_json(evaluated.screen);
  for (const weighting_score& o : sorted) {
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
  out["missing_rows_similarity_product"] = product;
  out["seconds"] = seconds;
  // A token's text need not be UTF-8 (a vocabulary may hold any bytes): such bytes become U+FFFD.
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

/// --similarity-product for the pass over the real missing rows: the transfer's choice, which
/// serves only where no scored weighting has a job of its own that reads the whole cosine row
/// (paper, paper-guarded, omp); bf16 named where one does is refused, as an option that does
/// not apply.
std::shared_ptr<const clp::similarity_product> missing_rows_product(const std::string& name,
                                                                    const std::vector<weighting_candidate>& list) {
  const similarity_choice choice = parse_similarity_choice(name);
  for (const weighting_candidate& c : list)
    if (choice == similarity_choice::bf16 && (c.name == "paper" || c.name == "paper-guarded" || c.name == "omp"))
      throw clp::invalid_argument(option_facts("--similarity-product"),
                                  "bf16 does not apply when " + c.name +
                                      " is scored (it reads every cosine of a row, not a neighbour list): leave "
                                      "it out with --weightings");
  return make_similarity_product(choice);
}

/// The models read and screened (--undertrained), refused when they share fewer than 2 tokens
/// whose source rows are kept.
evaluated_models read_evaluated_models(scoring_options& options, undertrained_mode mode) {
  options.pair.matching = parse_match(options.match, options.match_option->count() > 0);
  evaluated_models evaluated{read_models(options.pair), {}, 0};
  loaded_models& models = evaluated.models;
  evaluated.shared = models.matching.overlap.size();
  evaluated.screen = screen_undertrained(models.source, models.matching.overlap, mode, options.execution.threads);
  models.matching.overlap = screened_overlap(models.matching.overlap, evaluated.screen);
  const Index kept = models.matching.overlap.size();
  if (kept < 2)
    throw clp::invalid_argument(clp::error_facts{}.with_file(options.pair.source.string()),
                                "and " + options.pair.helper.string() + " share " + std::to_string(kept) + " token(s)" +
                                    (kept < evaluated.shared ? " not flagged as under-trained" : "") +
                                    ": at least 2 are needed to hold one out and synthesise it from the rest");
  return evaluated;
}

void score_weightings(scoring_options& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!(options.held_out > 0 && options.held_out < 1))
    throw clp::invalid_argument(option_facts("--held-out"), "must be between 0 and 1 (exclusive)");
  if (options.splits < 1) throw clp::invalid_argument(option_facts("--splits"), "must be at least 1");
  options.execution.check();
  const undertrained_mode undertrained = parse_undertrained(options.undertrained);
  const std::vector<weighting_candidate> list =
      options.weightings_option->count() > 0 ? parse_candidates(options.weightings) : default_candidates();
  clp::synthesis_options missing_rows;
  static_cast<clp::execution_options&>(missing_rows) = options.execution.options();
  missing_rows.product = missing_rows_product(options.similarity, list);
  progress_reporter progress(options.quiet);
  progress.begin("read");
  const evaluated_models evaluated = read_evaluated_models(options, undertrained);  // with the screen
  const loaded_models& models = evaluated.models;
  progress.end();
  error_origins origins;
  origins.add("source", models.source.embedding.origin()).add("helper", models.helper.embedding.origin());
  origins.otherwise(models.source.embedding.origin().file + " and " + models.helper.embedding.origin().file);
  // The splits' Gram matrix and map moments over the whole overlap serve the missing rows' pass too.
  const auto cache = std::make_shared<clp::overlap_cache>();
  missing_rows.cache = cache;
  std::vector<weighting_score> scores = origins.run([&] { return score(list, models, options, cache, progress); });
  progress.begin("missing rows");
  missing_rows.progress = [&](Index done, Index total) { progress.update(double(done), double(total)); };
  const std::string product = origins.run([&] { return diagnose(scores, models, missing_rows); });
  progress.end();
  std::stable_sort(scores.begin(), scores.end(),
                   [](const weighting_score& a, const weighting_score& b) { return a.mean_cosine > b.mean_cosine; });
  const recommendation best = recommend(scores);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.json)
    print_json(scores, best, options, evaluated, product, seconds);
  else
    print_text(scores, best, options, evaluated, product, seconds);
}

}  // namespace

command evaluate_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("evaluate", "Score each weighting by held-out reconstruction of overlapping tokens");
  const auto options = std::make_shared<scoring_options>();
  model_pair& pair = options->pair;
  command->add_option("--source", pair.source, "Large source model folder")->required();
  command->add_option("--helper", pair.helper, "Small helper model folder speaking the target vocabulary")->required();
  command->add_option("--embedding-tensor", pair.source_embedding, "Source input embedding name (default: found)");
  command->add_option("--helper-embedding-tensor", pair.helper_embedding,
                      "Helper input embedding name (default: found)");
  options->match_option = add_match_option(*command, options->match);
  add_execution_options(*command, options->execution, "Working memory of each synthesis, MiB");
  command->add_option("--held-out", options->held_out, "Share of the overlap held out per split")
      ->capture_default_str();
  command->add_option("--splits", options->splits, "Splits (seeds 0, 1, ...)")->capture_default_str();
  options->weightings_option = command->add_option(
      "--weightings", options->weightings,
      "Score only these, comma-separated NAME or NAME:K (names and k as --weighting and --k take "
      "them), e.g. top-k,least-squares (default: every weighting, top-k and softmax at k 5, 10, 30)");
  command
      ->add_option("--similarity-product", options->similarity,
                   "auto | float32 | bf16: the real missing rows' cosines, as transfer forms them; bf16 serves only "
                   "when paper, paper-guarded and omp are not scored (they read whole cosine rows)")
      ->capture_default_str();
  command->add_option("--undertrained", options->undertrained, undertrained_help)->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON");
  command->add_flag("--quiet", options->quiet, "Print errors only (no progress on stderr)");
  return {command, [options] { score_weightings(*options); }};
}

}  // namespace clp_transfer
