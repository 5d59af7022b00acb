// `clp-transfer extend`: its options as the command line gives them, their registration, and
// their interpretation into the values the run reads (the request, the synthesis choice, the
// output target); the run itself is extend/run.hpp. The options that make the new rows are
// transfer's, with the same names, defaults and rules.
#include <memory>
#include <string>
#include <vector>

#include <extend/default_probe.hpp>  // generated at build time from extend/probes/en.txt

#include "commands/command.hpp"
#include "commands/option_checks.hpp"
#include "commands/synthesis_options.hpp"
#include "errors.hpp"
#include "extend/run.hpp"
#include "extend/token_request.hpp"
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
  double drift_budget = 0;
  CLI::Option* add_option = nullptr;
  CLI::Option* drift_budget_option = nullptr;
  CLI::Option* helper_embedding_option = nullptr;
  synthesis_command_line command_line;  ///< --method, --weighting and the rest, as transfer takes them

  /// Interprets the names into the request and the synthesis choice, as `transfer` does. Without
  /// a helper, or with --method mean-of-pieces, an option that only the helper's rows read is
  /// refused, naming it.
  void interpret() {
    if (add_option->count()) request.add = add;
    if (drift_budget_option->count()) request.drift_budget = drift_budget;
    synthesis.undertrained = parse_undertrained(command_line.undertrained);
    request.mean_of_pieces = request.has_helper() && command_line.method == "mean-of-pieces";
    if (!request.has_helper() || request.mean_of_pieces) {
      const std::string why = request.mean_of_pieces ? "does not apply to --method mean-of-pieces"
                                                     : "does not apply without --helper (each new row is the mean of "
                                                       "its pieces)";
      std::vector<CLI::Option*> helper_options = command_line.helper_options();
      helper_options.insert(helper_options.begin(), helper_embedding_option);
      for (CLI::Option* option : helper_options)
        if (option->count() && !(request.mean_of_pieces && option == command_line.method_option))
          throw clp::invalid_argument(option_facts(option->get_name()), why);
      return;
    }
    command_line.interpret(synthesis, request.pair.matching);
    if (synthesis.method == transfer_method::random)
      throw clp::invalid_argument(
          option_facts("--method"),
          "must be clp, overlap-random or mean-of-pieces: extend keeps every row of the source");
  }
};

void add_model_options(CLI::App& command, extend_options& options) {
  model_pair& pair = options.request.pair;
  command.add_option("--source", pair.source, "Model folder to extend (config.json, weights, and a BPE or WordPiece tokenizer.json, a SentencePiece BPE or Unigram tokenizer.model, or a WordPiece vocab.txt)")
      ->required();
  CLI::Option* helper =
      command.add_option("--helper", pair.helper, "Model folder whose tokens the source lacks are added");
  command
      .add_flag("--no-helper", options.no_helper, "No helper: each new row is the mean of its pieces (needs --tokens)")
      ->excludes(helper);
  command.add_option("--output", options.target.folder, "Output model folder (must not exist unless --force)")
      ->required();
  command.add_option("--report", options.target.report, "Also write a JSON report here");
  options.add_option = command.add_option("--add", options.add, "Add only the first N tokens, in the helper's order")
                           ->check(not_negative("at least 1"));  // unsigned: "-3" would wrap to all of them
  command.add_option("--tokens", options.request.tokens_file, "Add the tokens of this file, one a line")
      ->excludes(options.add_option);
  command.add_option("--probe", options.request.probe,
                     "Text in the source's language whose changed words give the drift (default: built-in English)");
  options.drift_budget_option = command.add_option(
      "--drift-budget", options.drift_budget,
      "Share of the probe's words (0 to 1) whose ids may change; tokens past it are left out (default: no budget)");
  command.add_option("--probe-new", options.request.probe_new,
                     "Text in the new language whose tokens per word are reported");
  add_execution_options(command, options.synthesis.execution, "Working memory of the synthesis, MiB");
  command.add_option("--embedding-tensor", pair.source_embedding, "Source input embedding name (default: found)");
  options.helper_embedding_option = command.add_option("--helper-embedding-tensor", pair.helper_embedding,
                                                       "Helper input embedding name (default: found)");
  command.add_option("--lm-head-tensor", pair.source_head, "Source untied output head name (default: found)");
  command
      .add_option("--transfer-tensor", pair.transfer_tensors,
                  "Also extend this source tensor (one row or value per token) as the embedding; repeatable")
      ->allow_extra_args(false);
}

void add_output_flags(CLI::App& command, extend_options& options) {
  command.add_flag("--force", options.target.force, "Replace an existing output model folder (only after success)");
  command.add_flag("--fsync", options.target.fsync, "Flush the output to disk before moving it into place");
  command.add_flag("--quiet", options.quiet, "Print errors only");
}

}  // namespace

command extend_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("extend", "Write SOURCE with its tokenizer extended by HELPER's tokens it lacks to OUTPUT");
  const auto options = std::make_shared<extend_options>();
  add_model_options(*command, *options);
  options->command_line.add_to(*command, options->synthesis.seed,
                               "clp | overlap-random | mean-of-pieces: how the helper's tokens' rows are made",
                               extend_undertrained_help);
  add_output_flags(*command, *options);
  return {command, [options] {
            options->interpret();
            run_extend(options->request, options->synthesis, options->target, extend::embedded::default_english_probe(),
                       options->quiet);
          }};
}

}  // namespace clp_transfer
