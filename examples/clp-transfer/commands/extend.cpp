// `clp-transfer extend`: its options as the command line gives them, their registration, and
// their interpretation into the values the run reads (the request, the synthesis choice, the
// output target); the run itself is extend/run.hpp. The options that make the new rows are
// transfer's, with the same names, defaults and rules.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <extend/default_probe.hpp>  // generated at build time from extend/probes/en.txt

#include "commands/command.hpp"
#include "errors.hpp"
#include "extend/run.hpp"
#include "extend/token_request.hpp"
#include "library_names.hpp"
#include "transfer/output_target.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/undertrained_choice.hpp"

namespace clp_transfer {

namespace {

/// --undertrained's help in extend's words: the source's own rows are never rewritten.
constexpr const char* extend_undertrained_help =
    "synthesise | keep | report: source rows that look under-trained (tiny norms, or gathered in one direction) "
    "are left out of every new row's support (the engine's fit and weights, the means of pieces), or used "
    "unscreened, or listed but used; every source row is kept as it is";

/// The options as given, before they are interpreted.
struct extend_options {
  extend_request request;
  synthesis_choice synthesis;
  output_target target;
  bool quiet = false, no_helper = false;
  std::size_t add = 0;
  std::string method = "clp", weighting = default_weighting, match = "bytes", similarity = "auto", row_norms = "top-k";
  std::string undertrained = undertrained_name(default_undertrained);
  Index k = 10;
  float temperature = 0.1f;
  double lambda = -1;
  CLI::Option* add_option = nullptr;
  /// The options that make rows from the helper, in the order a refusal names them.
  std::vector<CLI::Option*> helper_options;
  CLI::Option* k_option = nullptr;
  CLI::Option* lambda_option = nullptr;
  CLI::Option* match_option = nullptr;
  CLI::Option* weighting_option = nullptr;
  CLI::Option* temperature_option = nullptr;
  CLI::Option* row_norms_option = nullptr;
  CLI::Option* seed_option = nullptr;
  CLI::Option* method_option = nullptr;
  CLI::Option* undertrained_option = nullptr;

  /// Interprets the names into the request and the synthesis choice, as `transfer` does. Without
  /// a helper, an option that only the helper's rows read is refused, naming it.
  void interpret() {
    if (add_option->count()) request.add = add;
    synthesis.undertrained = parse_undertrained(undertrained);
    request.mean_of_pieces = request.has_helper() && method == "mean-of-pieces";
    if (!request.has_helper() || request.mean_of_pieces) {
      const std::string why = request.mean_of_pieces ? "does not apply to --method mean-of-pieces"
                                                     : "does not apply without --helper (each new row is the mean of "
                                                       "its pieces)";
      for (CLI::Option* option : helper_options)
        if (option->count() && !(request.mean_of_pieces && option == method_option))
          throw clp::invalid_argument(option_facts(option->get_name()), why);
      return;
    }
    synthesis.method = parse_method(method);
    if (synthesis.method == transfer_method::random)
      throw clp::invalid_argument(
          option_facts("--method"),
          "must be clp, overlap-random or mean-of-pieces: extend keeps every row of the source");
    synthesis.weighting =
        parse_weighting(weighting, k_option->count() ? std::optional<Index>(k) : std::nullopt, temperature,
                        lambda_option->count() ? std::optional<double>(lambda) : std::nullopt, row_norms);
    request.pair.matching = parse_match(match, match_option->count() > 0);
    synthesis.similarity = parse_similarity_choice(similarity);
    given_options given;
    given.weighting = weighting_option->count() > 0;
    given.k = k_option->count() > 0;
    given.temperature = temperature_option->count() > 0;
    given.lambda = lambda_option->count() > 0;
    given.row_norms = row_norms_option->count() > 0;
    given.seed = seed_option->count() > 0;
    given.similarity = synthesis.similarity != similarity_choice::automatic;
    given.undertrained = undertrained_option->count() > 0;
    refuse_unread_options(synthesis.method, synthesis.weighting, given);
  }
};

void add_model_options(CLI::App& command, extend_options& options) {
  model_pair& pair = options.request.pair;
  command.add_option("--source", pair.source, "Model folder to extend (config.json, weights, tokenizer.json)")
      ->required();
  CLI::Option* helper =
      command.add_option("--helper", pair.helper, "Model folder whose tokens the source lacks are added");
  command
      .add_flag("--no-helper", options.no_helper, "No helper: each new row is the mean of its pieces (needs --tokens)")
      ->excludes(helper);
  command.add_option("--output", options.target.folder, "Output model folder (must not exist unless --force)")
      ->required();
  command.add_option("--report", options.target.report, "Also write a JSON report here");
  options.add_option = command.add_option("--add", options.add, "Add only the first N tokens, in the helper's order");
  command.add_option("--tokens", options.request.tokens_file, "Add the tokens of this file, one a line")
      ->excludes(options.add_option);
  command.add_option("--probe", options.request.probe,
                     "Text in the source's language whose changed words give the drift (default: built-in English)");
  command.add_option("--probe-new", options.request.probe_new,
                     "Text in the new language whose tokens per word are reported");
  add_execution_options(command, options.synthesis.execution, "Working memory of the synthesis, MiB");
  command.add_option("--embedding-tensor", pair.source_embedding, "Source input embedding name (default: found)");
  options.helper_options.push_back(command.add_option("--helper-embedding-tensor", pair.helper_embedding,
                                                      "Helper input embedding name (default: found)"));
  command.add_option("--lm-head-tensor", pair.source_head, "Source untied output head name (default: found)");
  command
      .add_option("--transfer-tensor", pair.transfer_tensors,
                  "Also extend this source tensor (one row or value per token) as the embedding; repeatable")
      ->allow_extra_args(false);
}

void add_method_options(CLI::App& command, extend_options& options) {
  options.match_option = add_match_option(command, options.match);
  options.method_option =
      command
          .add_option("--method", options.method,
                      "clp | overlap-random | mean-of-pieces: how the helper's tokens' rows are made")
          ->capture_default_str();
  options.weighting_option =
      command
          .add_option("--weighting", options.weighting,
                      "paper | paper-guarded | clamped | top-k | softmax | sparsemax | omp | least-squares")
          ->capture_default_str();
  options.k_option = command.add_option(
      "--k", options.k,
      "Neighbours for top-k, softmax and least-squares' top-k row norms (default 10) and omp (default 8)");
  options.temperature_option =
      command.add_option("--temperature", options.temperature, "Softmax temperature")->capture_default_str();
  options.lambda_option = command.add_option(
      "--lambda", options.lambda, "least-squares: ridge lambda relative to the overlap's mean Gram eigenvalue");
  options.row_norms_option =
      command.add_option("--row-norms", options.row_norms, "least-squares: top-k | map")->capture_default_str();
  options.seed_option =
      command.add_option("--seed", options.synthesis.seed, "Seed of --method overlap-random")->capture_default_str();
  CLI::Option* similarity =
      command.add_option("--similarity-product", options.similarity, "auto | float32 | bf16 (as transfer's)")
          ->capture_default_str();
  // Not a helper option: without a helper the screen keeps flagged rows out of the means of pieces.
  options.undertrained_option =
      command.add_option("--undertrained", options.undertrained, extend_undertrained_help)->capture_default_str();
  for (CLI::Option* option :
       {options.match_option, options.method_option, options.weighting_option, options.k_option,
        options.temperature_option, options.lambda_option, options.row_norms_option, options.seed_option, similarity})
    options.helper_options.push_back(option);
}

void add_output_flags(CLI::App& command, extend_options& options) {
  command.add_flag("--force", options.target.force, "Replace an existing output (only after success)");
  command.add_flag("--fsync", options.target.fsync, "Flush the output to disk before moving it into place");
  command.add_flag("--quiet", options.quiet, "Print errors only");
}

}  // namespace

command extend_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("extend", "Write SOURCE with its tokenizer extended by HELPER's tokens it lacks to OUTPUT");
  const auto options = std::make_shared<extend_options>();
  add_model_options(*command, *options);
  add_method_options(*command, *options);
  add_output_flags(*command, *options);
  return {command, [options] {
            options->interpret();
            run_extend(options->request, options->synthesis, options->target, extend::embedded::default_english_probe(),
                       options->quiet);
          }};
}

}  // namespace clp_transfer
