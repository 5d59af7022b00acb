// `clp-transfer transfer`: its options as the command line gives them, their registration, and
// their interpretation into the transfer_arguments the phases read (transfer/arguments.hpp);
// the run itself is transfer/run.hpp.
#include <memory>
#include <optional>
#include <string>

#include "commands/command.hpp"
#include "transfer/arguments.hpp"
#include "transfer/run.hpp"
#include "library_names.hpp"

namespace clp_transfer {

namespace {

/// The options as given, before they are interpreted: names to parse, and whether an option
/// with a per-policy default was given.
struct transfer_options {
  transfer_arguments args;
  std::string method = "clp", weighting = default_weighting, match = "bytes", similarity = "auto", row_norms = "top-k";
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

  /// The arguments the phases read. A bad value is refused like a bad input (status 1), in the
  /// words of the check.
  const transfer_arguments& interpreted() {
    args.method = parse_method(method);
    args.weighting = parse_weighting(weighting, k_option->count() ? std::optional<Index>(k) : std::nullopt, temperature,
                                     lambda_option->count() ? std::optional<double>(lambda) : std::nullopt, row_norms);
    args.matching = parse_match(match, match_option->count() > 0);
    args.similarity = parse_similarity_choice(similarity);
    given_options given;
    given.weighting = weighting_option->count() > 0;
    given.k = k_option->count() > 0;
    given.temperature = temperature_option->count() > 0;
    given.lambda = lambda_option->count() > 0;
    given.row_norms = row_norms_option->count() > 0;
    given.seed = seed_option->count() > 0;
    given.similarity = args.similarity != similarity_choice::automatic;
    refuse_unread_options(args.method, args.weighting, given);
    return args;
  }
};

void add_model_options(CLI::App& command, transfer_arguments& args) {
  command.add_option("--source", args.source, "Large source model folder (config.json, weights, tokenizer)")
      ->required();
  command.add_option("--helper", args.helper, "Small helper model folder speaking the target vocabulary")->required();
  command.add_option("--output", args.output, "Output model folder (must not exist unless --force)")->required();
  command.add_option("--report", args.report, "Also write a JSON report here");
  add_execution_options(command, args.execution, "Working memory of the synthesis, MiB");
  command.add_option("--embedding-tensor", args.embedding_tensor, "Source input embedding name (default: found)");
  command.add_option("--helper-embedding-tensor", args.helper_embedding_tensor,
                     "Helper input embedding name (default: found)");
  command.add_option("--lm-head-tensor", args.lm_head_tensor, "Source untied output head name (default: found)");
  command
      .add_option("--transfer-tensor", args.transfer_tensors,
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
      command.add_option("--seed", options.args.seed, "Seed of the random methods")->capture_default_str();
  command
      .add_option("--similarity-product", options.similarity,
                  "auto | float32 | bf16: the cosines of the neighbour lists (top-k, softmax, least-squares' top-k "
                  "row norms) in bf16 where the CPU has avx512_bf16 or AMX and oneDNN is built in, their candidates "
                  "rescored in float32 (auto), or float32 throughout")
      ->capture_default_str();
}

void add_output_flags(CLI::App& command, transfer_arguments& args) {
  command.add_flag("--force", args.force, "Replace an existing output (only after success)");
  command.add_flag("--fsync", args.fsync,
                   "Flush the output to disk before moving it into place, so it survives a power loss (runs at the "
                   "disk's write speed; always done when --force replaces an existing output)");
  command.add_flag("--quiet", args.quiet, "Print errors only");
}

}  // namespace

command transfer_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("transfer", "Write SOURCE with HELPER's vocabulary to OUTPUT");
  const auto options = std::make_shared<transfer_options>();
  add_model_options(*command, options->args);
  add_method_options(*command, *options);
  add_output_flags(*command, options->args);
  return {command, [options] { run_transfer(options->interpreted()); }};
}

}  // namespace clp_transfer
