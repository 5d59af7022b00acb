// The options that choose how rows are made (--match, --method, --weighting, --k, --temperature,
// --lambda, --row-norms, --seed, --similarity-product, --undertrained), as `transfer` and `extend`
// both take them: one registration, so the two commands share names, defaults and help, and one
// interpretation, so they share the rules that refuse a value or an option the choice does not
// read.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands/command.hpp"
#include "commands/option_checks.hpp"
#include "token_matching.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/undertrained_choice.hpp"

namespace clp_transfer {

/// The synthesis options as the command line gives them, and the CLI11 options that say which
/// were given.
struct synthesis_command_line {
  std::string match = "bytes", method = "clp", weighting = default_weighting, similarity = "auto",
              row_norms = default_row_norms;
  std::string undertrained = undertrained_name(default_undertrained);
  Index k = 10;
  float temperature = 0.1f;
  double lambda = -1;
  CLI::Option* match_option = nullptr;
  CLI::Option* method_option = nullptr;
  CLI::Option* weighting_option = nullptr;
  CLI::Option* k_option = nullptr;
  CLI::Option* temperature_option = nullptr;
  CLI::Option* lambda_option = nullptr;
  CLI::Option* row_norms_option = nullptr;
  CLI::Option* seed_option = nullptr;
  CLI::Option* similarity_option = nullptr;
  CLI::Option* undertrained_option = nullptr;

  /// Registers the options on `command`; --seed writes `seed` directly.
  /// @param[in]  method_help        --method's help: the methods the command takes
  /// @param[in]  undertrained_help  --undertrained's help, in the command's words
  void add_to(CLI::App& command, std::uint64_t& seed, const std::string& method_help,
              const std::string& undertrained_help) {
    match_option = add_match_option(command, match);
    method_option = command.add_option("--method", method, method_help)->capture_default_str();
    weighting_option =
        command
            .add_option("--weighting", weighting,
                        "paper | paper-guarded | clamped | top-k | softmax | sparsemax | omp | least-squares")
            ->capture_default_str();
    k_option = command.add_option(
        "--k", k, "Neighbours for top-k, softmax and least-squares' row norms (default 10) and omp (default 8)");
    temperature_option = command.add_option("--temperature", temperature, "Softmax temperature")->capture_default_str();
    lambda_option = command.add_option(
        "--lambda", lambda,
        "least-squares: ridge lambda relative to the overlap's mean Gram eigenvalue (default: chosen by GCV; "
        "negative: the same)");
    row_norms_option =
        command
            .add_option("--row-norms", row_norms,
                        "least-squares: top-k-mean | top-k | map: each row keeps the map's direction with its k "
                        "neighbours' norms averaged with top-k's weights (k from --k, default 10), or the norm of its "
                        "top-k row, or the map's own norm")
            ->capture_default_str();
    // An unsigned option would take "-1" as 2^64 - 1: a negative number is refused first.
    seed_option = command.add_option("--seed", seed, "Seed of the random methods")
                      ->check(not_negative())
                      ->capture_default_str();
    similarity_option =
        command
            .add_option("--similarity-product", similarity,
                        "auto | float32 | bf16: the cosines of the neighbour lists (top-k, softmax, least-squares' "
                        "row norms) in bf16 where the CPU has avx512_bf16 or AMX and oneDNN is built in, their "
                        "candidates rescored in float32 (auto), or float32 throughout")
            ->capture_default_str();
    undertrained_option = command.add_option("--undertrained", undertrained, undertrained_help)->capture_default_str();
  }

  /// The options that only rows made from a helper read: all but --undertrained.
  std::vector<CLI::Option*> helper_options() const {
    return {match_option,  method_option,    weighting_option, k_option,         temperature_option,
            lambda_option, row_norms_option, seed_option,      similarity_option};
  }

  /// Interprets the names into `synthesis` and `matching`. A bad value, or an option the chosen
  /// method and weighting do not read, is refused like a bad input (status 1), in the words of
  /// the check.
  void interpret(synthesis_choice& synthesis, match_arguments& matching) const {
    synthesis.method = parse_method(method);
    synthesis.weighting =
        parse_weighting(weighting, k_option->count() ? std::optional<Index>(k) : std::nullopt, temperature,
                        lambda_option->count() ? std::optional<double>(lambda) : std::nullopt, row_norms);
    matching = parse_match(match, match_option->count() > 0);
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

}  // namespace clp_transfer
