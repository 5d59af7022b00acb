// How the new rows are made: the method, the weighting and how they run, interpreted once from
// the command line (commands/transfer.cpp reads it), and the one rule that refuses an option
// the chosen method or weighting does not read, before any work.
#pragma once

#include <clp/weights.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <variant>

#include "errors.hpp"
#include "execution_arguments.hpp"
#include "library_names.hpp"
#include "similarity_choice.hpp"
#include "transfer/undertrained_choice.hpp"

namespace clp_transfer {

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

/// `value` in the fewest digits that read back as the same value of its type: a float option
/// given as 0.1 is written 0.1, not 0.100000001 (its double widening).
template <class Real>
std::string shortest_text(Real value) {
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

/// The weighting the program uses unless told otherwise, the library's clp::default_weighting:
/// the least-squares map with top-k mean row norms (docs/weighting.md gives the rules and the
/// measurements that chose it).
inline constexpr const char* default_weighting = "least-squares";
/// Its --row-norms unless told otherwise, clp::least_squares_map{}'s norm rule.
inline constexpr const char* default_row_norms = "top-k-mean";

/// The weighting policy and the options it came from (which the report repeats).
struct weighting_choice {
  std::string name = default_weighting;
  Index k = 10;
  float temperature = 0.1f;
  /// least-squares only: --lambda, relative to the overlap's mean Gram eigenvalue; nullopt:
  /// chosen by generalised cross-validation.
  std::optional<double> lambda;
  /// least-squares only: --row-norms, "top-k" (each row's norm that of its top-k row, with k),
  /// "top-k-mean" (its k neighbours' norms averaged with top-k's weights) or "map" (the map's own).
  std::string row_norms = default_row_norms;
  clp::weighting policy = clp::make_weighting(default_weighting, 10, 0.1f);
};

/// The names --weighting takes, in the order the help and the messages list them.
inline constexpr const char* weighting_names[] = {"paper",   "paper-guarded", "clamped", "top-k",
                                                  "softmax", "sparsemax",     "omp",     "least-squares"};

/// "paper, paper-guarded, ..., omp or least-squares".
inline std::string weighting_name_list() {
  std::string list;
  const std::size_t count = std::size(weighting_names);
  for (std::size_t i = 0; i < count; ++i)
    list += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(weighting_names[i]);
  return list;
}

/// Refuses, naming the option, a weighting name or a value the library's make_weighting would
/// refuse in its own words: an unknown name, k < 1, a temperature that is not positive and
/// finite, a lambda that is not finite.
inline void check_weighting_options(const std::string& name, std::optional<Index> k, float temperature,
                                    std::optional<double> lambda) {
  if (std::find(std::begin(weighting_names), std::end(weighting_names), name) == std::end(weighting_names)) {
    clp::error_facts facts;
    facts.context = "--weighting";
    throw clp::invalid_argument(std::move(facts),
                                "unknown weighting '" + name + "'; " +
                                    (name == "ridge" ? "the ridge map is named least-squares; " : "") + "one of " +
                                    weighting_name_list());
  }
  if (k && *k < 1) throw clp::invalid_argument(option_facts("--k"), "must be at least 1, not " + std::to_string(*k));
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw clp::invalid_argument(option_facts("--temperature"),
                                "must be positive and finite, not " + shortest_text(temperature));
  if (lambda && !std::isfinite(*lambda))
    throw clp::invalid_argument(option_facts("--lambda"), "must be finite, not " + shortest_text(*lambda));
}

/// --weighting, --k (nullopt: not given, each policy's own default), --temperature and --lambda;
/// throws clp::invalid_argument naming the option for an unknown name, k < 1, a temperature that
/// is not positive or a lambda that is not finite (check_weighting_options).
inline weighting_choice parse_weighting(const std::string& name, std::optional<Index> k, float temperature,
                                        std::optional<double> lambda = std::nullopt,
                                        const std::string& row_norms = default_row_norms) {
  check_weighting_options(name, k, temperature, lambda);
  const Index used_k = k.value_or(name == "omp" ? clp::omp_weights{}.k : clp::top_k_weights{}.k);
  const error_origins options = error_origins()
                                    .add("name", option_facts("--weighting"))
                                    .add("weighting", option_facts("--weighting"))
                                    .add("k", option_facts("--k"))
                                    .add("temperature", option_facts("--temperature"))
                                    .add("lambda", option_facts("--lambda"))
                                    .otherwise("--weighting " + name);
  if (row_norms != "map" && row_norms != "top-k" && row_norms != "top-k-mean")
    throw clp::invalid_argument(option_facts("--row-norms"),
                                "must be top-k, top-k-mean or map, not '" + row_norms + "'");
  weighting_choice choice{name,        used_k,
                          temperature, lambda,
                          row_norms,   options.run([&] { return clp::make_weighting(name, k, temperature, lambda); })};
  if (auto* map = std::get_if<clp::least_squares_map>(&choice.policy)) {
    map->norm_neighbours = row_norms == "map" ? 0 : used_k;
    map->norm_rule = row_norms == "top-k-mean" ? clp::least_squares_map::neighbour_norm::mean
                                               : clp::least_squares_map::neighbour_norm::of_top_k_row;
  }
  return choice;
}

/// Whether `weighting` forms neighbour lists, the part of a synthesis --similarity-product
/// speeds up: top-k, softmax, and least-squares' row norms from top-k (all but --row-norms map).
inline bool forms_neighbour_lists(const weighting_choice& weighting) {
  const std::string& name = weighting.name;
  return name == "top-k" || name == "softmax" || (name == "least-squares" && weighting.row_norms != "map");
}

/// Whether `weighting` reads --k: those that form neighbour lists, and omp.
inline bool reads_k(const weighting_choice& weighting) {
  return forms_neighbour_lists(weighting) || weighting.name == "omp";
}

/// Which of the options that depend on the method or the weighting were given on the command line.
struct given_options {
  bool weighting = false, k = false, temperature = false, lambda = false, row_norms = false, seed = false;
  bool similarity = false;  ///< --similarity-product float32 or bf16 (auto fits every weighting)
  bool undertrained = false;
};

/// The one rule for options that do not apply: an option given on the command line that the
/// chosen method and weighting do not read is refused, naming the option and why, before any
/// work. --weighting, --k, --temperature, --lambda, --row-norms and --similarity-product are
/// read by --method clp alone, --seed by the other methods alone; --k by top-k, softmax, omp and
/// least-squares with --row-norms top-k or top-k-mean; --temperature by softmax; --lambda and
/// --row-norms by least-squares; --similarity-product by the weightings that form neighbour lists
/// (top-k, softmax, least-squares unless --row-norms map); --undertrained by the methods that
/// copy the shared rows (clp, overlap-random: a flagged row is drawn like a missing one), not by
/// random.
inline void refuse_unread_options(transfer_method method, const weighting_choice& weighting,
                                  const given_options& given) {
  const auto refuse = [](const char* option, const std::string& why) {
    throw clp::invalid_argument(option_facts(option), "does not apply " + why);
  };
  if (given.undertrained && method == transfer_method::random)
    refuse("--undertrained", "to --method random (it copies no row)");
  if (method != transfer_method::clp) {
    const std::string why = std::string("to --method ") + method_name(method) + " (it reads no weighting)";
    if (given.weighting) refuse("--weighting", why);
    if (given.k) refuse("--k", why);
    if (given.temperature) refuse("--temperature", why);
    if (given.lambda) refuse("--lambda", why);
    if (given.row_norms) refuse("--row-norms", why);
    if (given.similarity) refuse("--similarity-product", why);
    return;
  }
  if (given.seed) refuse("--seed", "to --method clp (it draws nothing)");
  const std::string& name = weighting.name;
  const bool map = name == "least-squares";
  const bool neighbour_lists = forms_neighbour_lists(weighting);
  const std::string why = "to --weighting " + name + (map ? " --row-norms " + weighting.row_norms : "");
  if (given.k && !reads_k(weighting)) refuse("--k", why);
  if (given.temperature && name != "softmax") refuse("--temperature", why);
  if (given.lambda && !map) refuse("--lambda", why);
  if (given.row_norms && !map) refuse("--row-norms", why);
  if (given.similarity && !neighbour_lists) refuse("--similarity-product", why + " (it forms no neighbour lists)");
}

/// How the new rows are made: what synthesise reads, whichever command asks for them.
struct synthesis_choice {
  transfer_method method = transfer_method::clp;
  weighting_choice weighting;                                   ///< read by transfer_method::clp alone
  similarity_choice similarity = similarity_choice::automatic;  ///< --similarity-product
  std::uint64_t seed = 0;                                       ///< --seed: the baselines' draws
  undertrained_mode undertrained = default_undertrained;        ///< --undertrained; random copies nothing
  execution_arguments execution;                                ///< --threads, --tile-mb
};

}  // namespace clp_transfer
