// The weightings `clp-transfer evaluate` scores: by default every weighting at its default k, and
// top-k and softmax at k 5, 10 and 30; or the list --weightings names, each NAME or NAME:K with
// the names and k values --weighting and --k take.
#pragma once

#include <clp/error.hpp>
#include <clp/weights.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "errors.hpp"
#include "library_names.hpp"
#include "transfer/synthesis_choice.hpp"

namespace clp_transfer {

/// One weighting as evaluate scores it.
struct weighting_candidate {
  std::string label;  ///< "top-k k=10", "omp", "least-squares"
  std::string name;   ///< --weighting's value
  std::optional<Index> k;
  clp::weighting policy;
};

/// `name` at k (nullopt: the policy's own), as the transfer builds it (parse_weighting: the
/// least-squares map with top-k mean row norms of k). The label and `k` show k for top-k and softmax,
/// which the default list scores at several k, and for the others where it is not their default
/// (so "least-squares:10" is the default weighting, "least-squares").
inline weighting_candidate make_candidate(const std::string& name, std::optional<Index> k) {
  const weighting_choice choice = parse_weighting(name, k, 0.1f);
  const bool several_k = name == "top-k" || name == "softmax";
  const bool default_k = !k || *k == (name == "omp" ? clp::omp_weights{}.k : clp::top_k_weights{}.k);
  const std::optional<Index> shown = several_k || !default_k ? std::optional<Index>(choice.k) : std::nullopt;
  return {shown ? name + " k=" + std::to_string(*shown) : name, name, shown, choice.policy};
}

/// Every weighting at its default k, and top-k and softmax at k 5, 10 and 30.
inline std::vector<weighting_candidate> default_candidates() {
  std::vector<weighting_candidate> list;
  for (const char* name : {"paper", "paper-guarded", "clamped", "sparsemax", "omp", "least-squares"})
    list.push_back(make_candidate(name, std::nullopt));
  for (const char* name : {"top-k", "softmax"})
    for (const Index k : {5, 10, 30}) list.push_back(make_candidate(name, k));
  return list;
}

/// --weightings' list: comma-separated NAME or NAME:K. Throws clp::invalid_argument naming
/// --weightings for an empty entry, an unknown name, a k that is not a whole number of at least
/// 1, a k for a weighting that reads none, and a weighting named twice.
inline std::vector<weighting_candidate> parse_candidates(const std::string& list) {
  const auto refuse = [](const std::string& problem) {
    throw clp::invalid_argument(option_facts("--weightings"), problem);
  };
  std::vector<weighting_candidate> chosen;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string entry = list.substr(start, comma - start);
    start = comma + 1;
    if (entry.empty()) refuse("has an empty entry in '" + list + "' (expected NAME or NAME:K, comma-separated)");
    const std::size_t colon = entry.find(':');
    const std::string name = entry.substr(0, colon);
    if (std::find(std::begin(weighting_names), std::end(weighting_names), name) == std::end(weighting_names))
      refuse("names an unknown weighting '" + name + "' (expected " + weighting_name_list() + ")");
    std::optional<Index> k;
    if (colon != std::string::npos) {
      const std::string digits = entry.substr(colon + 1);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
          std::stol(digits) < 1)
        refuse("entry '" + entry + "': k must be a whole number of at least 1");
      if (name != "top-k" && name != "softmax" && name != "omp" && name != "least-squares")
        refuse("entry '" + entry + "': " + name + " reads no k");
      k = Index(std::stol(digits));
    }
    weighting_candidate c = make_candidate(name, k);
    for (const weighting_candidate& earlier : chosen)
      if (earlier.label == c.label) refuse("names " + c.label + " twice");
    chosen.push_back(std::move(c));
  }
  return chosen;
}

}  // namespace clp_transfer
