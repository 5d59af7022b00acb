// What `clp-transfer transfer` is asked to do, as its phases read it: the options interpreted
// once (commands/transfer.cpp reads the command line) into the method and the weighting, and
// the checks that refuse a run before any work.
#pragma once

#include <clp/weights.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "errors.hpp"
#include "execution_arguments.hpp"
#include "io/errors.hpp"
#include "io/output_folder.hpp"
#include "similarity_choice.hpp"
#include "token_matching.hpp"

namespace clp::program {

/// CLP-Transfer itself, or one of the paper's two baselines.
enum class transfer_method {
  clp,             ///< copy the overlapping rows, synthesise the others from the helper
  overlap_random,  ///< copy the overlapping rows, draw the others (transfer without a helper)
  random,          ///< draw every row (a fresh start)
};

/// The method named on the command line; throws naming --method for any other name.
inline transfer_method parse_method(const std::string& name) {
  if (name == "clp") return transfer_method::clp;
  if (name == "overlap-random") return transfer_method::overlap_random;
  if (name == "random") return transfer_method::random;
  throw clp::invalid_argument(option_facts("--method"), "must be clp, overlap-random or random, not '" + name + "'");
}

/// The method's command-line name.
inline const char* method_name(transfer_method method) {
  switch (method) {
    case transfer_method::clp:
      return "clp";
    case transfer_method::overlap_random:
      return "overlap-random";
    case transfer_method::random:
      break;
  }
  return "random";
}

/// The weighting the program uses unless told otherwise: the best of the measured weightings
/// (the documentation's page on weightings, under docs/, gives the measurement).
inline constexpr const char* default_weighting = "top-k";

/// The weighting policy and the options it came from (which the report repeats).
struct weighting_choice {
  std::string name = default_weighting;
  Index k = 10;
  float temperature = 0.1f;
  /// least-squares only: --lambda, relative to the overlap's mean Gram eigenvalue; nullopt:
  /// chosen by generalised cross-validation.
  std::optional<double> lambda;
  /// least-squares only: --row-norms, "map" (the map's own) or "top-k" (each row's norm from
  /// its top-k row, with k).
  std::string row_norms = "map";
  clp::weighting policy = clp::make_weighting(default_weighting, 10, 0.1f);
};

/// --weighting, --k (nullopt: not given, each policy's own default), --temperature and --lambda;
/// throws clp::invalid_argument naming the option for an unknown name, k < 1, a temperature that
/// is not positive or a lambda that is not finite (the library's check, in the options' names).
inline weighting_choice parse_weighting(const std::string& name, std::optional<Index> k, float temperature,
                                        std::optional<double> lambda = std::nullopt,
                                        const std::string& row_norms = "map") {
  const Index used_k = k.value_or(name == "omp" ? clp::omp_weights{}.k : clp::top_k_weights{}.k);
  const error_origins options = error_origins()
                                    .add("name", option_facts("--weighting"))
                                    .add("weighting", option_facts("--weighting"))
                                    .add("k", option_facts("--k"))
                                    .add("temperature", option_facts("--temperature"))
                                    .add("lambda", option_facts("--lambda"));
  if (row_norms != "map" && row_norms != "top-k")
    throw clp::invalid_argument(option_facts("--row-norms"), "must be map or top-k, not '" + row_norms + "'");
  weighting_choice choice{name, used_k, temperature, lambda, row_norms,
                          options.run([&] { return clp::make_weighting(name, k, temperature, lambda); })};
  if (auto* map = std::get_if<clp::least_squares_map>(&choice.policy); map && row_norms == "top-k")
    map->norm_neighbours = used_k;
  return choice;
}

struct transfer_arguments {
  std::filesystem::path source, helper, output, report;
  execution_arguments execution;  // --threads, --tile-mb
  std::string embedding_tensor, helper_embedding_tensor, lm_head_tensor;
  std::vector<std::string> transfer_tensors;  // --transfer-tensor, repeatable
  bool force = false, quiet = false;
  bool fsync = false;  // flush the output to disk before the rename
  transfer_method method = transfer_method::clp;
  weighting_choice weighting;
  match_arguments matching;  // --match
  std::uint64_t seed = 0;
  similarity_choice similarity = similarity_choice::automatic;  // --similarity-product
};

/// Refuses, before any work, what would otherwise end a long run in an error: an output or
/// report in the way, an output replacing an input, a thread count or tile size out of range.
inline void check_arguments(const transfer_arguments& args) {
  io::check_output_available(args.output, args.force);
  if (!args.report.empty()) {
    if (std::filesystem::exists(args.report) && !args.force)
      throw clp::invalid_argument(io::about(args.report), "already exists (use --force to replace it)");
    const auto parent = args.report.has_parent_path() ? args.report.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(parent))
      throw clp::invalid_argument(io::about(args.report), "parent directory " + parent.string() + " does not exist");
  }
  args.execution.check();
  for (const auto& input : {args.source, args.helper}) {
    std::error_code ignored;
    if (std::filesystem::equivalent(io::without_trailing_separator(args.output), input, ignored))
      throw clp::invalid_argument(io::about(args.output),
                                  "is the input model " + input.string() + "; refusing to replace it");
  }
}

}  // namespace clp::program
