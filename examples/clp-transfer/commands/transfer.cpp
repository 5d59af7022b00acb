// `clp-transfer transfer`: its options as the command line gives them, their registration, and
// their interpretation into the values the phases read (the model pair, the synthesis choice,
// the output target); the run itself is transfer/run.hpp.
#include <memory>
#include <optional>
#include <string>

#include "commands/command.hpp"
#include "library_names.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/output_target.hpp"
#include "transfer/run.hpp"
#include "transfer/synthesis_choice.hpp"

namespace clp_transfer {

namespace {

/// The options as given, before they are interpreted: names to parse, and whether an option
/// with a per-policy default was given.
struct transfer_options {
  model_pair pair;
  synthesis_choice synthesis;
  output_target target;
  bool quiet = false;
  std::string method = "clp", weighting = default_weighting, match = "bytes", similarity = "auto", row_norms = "top-k";
  std::string undertrained = undertrained_name(default_undertrained);
  Index k = 10;
  float temperature = 0.1f;
  double lambda = -1;
  CLI::Option* k_option = nullptr;
  CLI::Option* lambda_option = nullptr;
  CLI::Option* match_option = nullptr;
  CLI::Option* weighting_option = nullptr;
  CLI::Option* temperature_option = nullptr;
  CLI::Option* row_norms_option = nullptr;
  CLI::Option* seed_option = nullptr;
  CLI::Option* undertrained_option = nullptr;

  /// Interprets the names into `pair.matching` and `synthesis`. A bad value is refused like a
  /// bad input (status 1), in the words of the check.
  void interpret() {
    synthesis.method = parse_method(method);
    synthesis.weighting =
        parse_weighting(weighting, k_option->count() ? std::optional<Index>(k) : std::nullopt, temperature,
                        lambda_option->count() ? std::optional<double>(lambda) : std::nullopt, row_norms);
    pair.matching = parse_match(match, match_option->count() > 0);
    synthesis.similarity = parse_similarity_choice(similarity);
    synthesis.undertrained = parse_undertrained(undertrained);
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

void add_method_options(CLI::App& command, transfer_options& options) {
  options.match_option = add_match_option(command, options.match);
  command.add_option("--method", options.method, "clp | overlap-random | random")->capture_default_str();
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
      "--lambda", options.lambda,
      "least-squares: ridge lambda relative to the overlap's mean Gram eigenvalue (default: chosen by GCV; "
      "negative: the same)");
  options.row_norms_option =
      command
          .add_option("--row-norms", options.row_norms,
                      "least-squares: top-k | map: each row keeps the map's direction with the norm of its top-k "
                      "row (k from --k, default 10), or the map's own norm")
          ->capture_default_str();
  options.seed_option =
      command.add_option("--seed", options.synthesis.seed, "Seed of the random methods")->capture_default_str();
  command
      .add_option("--similarity-product", options.similarity,
                  "auto | float32 | bf16: the cosines of the neighbour lists (top-k, softmax, least-squares' top-k "
                  "row norms) in bf16 where the CPU has avx512_bf16 or AMX and oneDNN is built in, their candidates "
                  "rescored in float32 (auto), or float32 throughout")
      ->capture_default_str();
  options.undertrained_option =
      command.add_option("--undertrained", options.undertrained, undertrained_help)->capture_default_str();
}

void add_output_flags(CLI::App& command, transfer_options& options) {
  command.add_flag("--force", options.target.force, "Replace an existing output (only after success)");
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
  add_method_options(*command, *options);
  add_output_flags(*command, *options);
  return {command, [options] {
            options->interpret();
            run_transfer(options->pair, options->synthesis, options->target, options->quiet);
          }};
}

}  // namespace clp_transfer
