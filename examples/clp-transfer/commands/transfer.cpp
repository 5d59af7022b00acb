// `clp-transfer transfer`: its options as the command line gives them, their registration, and
// their interpretation into the values the phases read (the model pair, the synthesis choice,
// the output target); the run itself is transfer/run.hpp.
#include <memory>

#include "commands/command.hpp"
#include "commands/synthesis_options.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/output_target.hpp"
#include "transfer/run.hpp"
#include "transfer/synthesis_choice.hpp"

namespace clp_transfer {

namespace {

/// The options as given, before they are interpreted.
struct transfer_options {
  model_pair pair;
  synthesis_choice synthesis;
  output_target target;
  bool quiet = false;
  synthesis_command_line command_line;  ///< --method, --weighting and the rest, as given
};

void add_model_options(CLI::App& command, transfer_options& options) {
  model_pair& pair = options.pair;
  command.add_option("--source", pair.source, "Large source model folder (config.json, weights, tokenizer)")
      ->required();
  command.add_option("--helper", pair.helper, "Small helper model folder speaking the target vocabulary")->required();
  command.add_option("--output", options.target.folder, "Output model folder (must not exist unless --force)")
      ->required();
  command.add_option("--report", options.target.report, "Also write a JSON report here");
  add_execution_options(command, options.synthesis.execution, "Working memory of the synthesis, MiB");
  command.add_option("--embedding-tensor", pair.source_embedding, "Source input embedding name (default: found)");
  command.add_option("--helper-embedding-tensor", pair.helper_embedding,
                     "Helper input embedding name (default: found)");
  command.add_option("--lm-head-tensor", pair.source_head, "Source untied output head name (default: found)");
  command
      .add_option("--transfer-tensor", pair.transfer_tensors,
                  "Also transfer this source tensor (one row or value per token) with the embedding's weights; "
                  "repeatable")
      ->allow_extra_args(false);
}

void add_output_flags(CLI::App& command, transfer_options& options) {
  command.add_flag("--force", options.target.force, "Replace an existing output model folder (only after success)");
  command.add_flag("--fsync", options.target.fsync,
                   "Flush the output to disk before moving it into place, so it survives a power loss (runs at the "
                   "disk's write speed; always done when --force replaces an existing output)");
  command.add_flag("--quiet", options.quiet, "Print errors only");
}

}  // namespace

command transfer_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("transfer", "Write SOURCE with HELPER's vocabulary to OUTPUT");
  const auto options = std::make_shared<transfer_options>();
  add_model_options(*command, *options);
  options->command_line.add_to(*command, options->synthesis.seed, "clp | overlap-random | random", undertrained_help);
  add_output_flags(*command, *options);
  return {command, [options] {
            options->command_line.interpret(options->synthesis, options->pair.matching);
            run_transfer(options->pair, options->synthesis, options->target, options->quiet);
          }};
}

}  // namespace clp_transfer
