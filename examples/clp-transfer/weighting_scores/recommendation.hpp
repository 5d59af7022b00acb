// What `clp-transfer evaluate` found for each weighting, and the weighting it recommends: the
// program's default unless another that inflates no real missing row leads it by more than the
// splits' spread (recommend() says how that is measured).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "library_names.hpp"
#include "transfer/synthesis_choice.hpp"
#include "weighting_scores/candidates.hpp"

namespace clp_transfer {

/// What a weighting came to: its held-out scores over the splits, and its real missing rows.
struct weighting_score {
  const weighting_candidate* weighting = nullptr;
  std::vector<double> split_cosines;   ///< mean cosine per split
  double mean_cosine = 0, spread = 0;  ///< mean and (max - min) / 2 over the splits
  double relative_error = 0, norm_ratio = 0;
  Index negative_sum_rows = 0, inflated_rows = 0, degenerate_rows = 0;
  double max_row_norm_ratio = 0;  ///< largest synthesised row norm / median source row norm (map only)
  double relative_lambda = -1;    ///< least-squares: of the last split
};

/// What evaluate recommends, and why.
struct recommendation {
  const weighting_score* chosen = nullptr;  ///< nullptr: every weighting inflates some row
  bool is_default = false;
  const weighting_score* leader = nullptr;  ///< the best score among those that inflate no row
  double lead = 0, spread = 0;              ///< leader against the default, paired by split
  std::string reason;                       ///< in words, for the table and the JSON
};

/// The default (the program's default weighting at its default k) unless another weighting that
/// inflates no real missing row leads it by more than the splits' spread: with d_s the leader's
/// held-out cosine minus the default's on split s, the lead is mean(d) and the spread
/// (max(d) - min(d)) / 2, so the leader replaces the default only when it leads on every split by
/// a margin the splits agree on. A default that inflates rows is never kept; where the default
/// was not scored (--weightings), the leader is chosen. `sorted`: best mean cosine first.
inline recommendation recommend(const std::vector<weighting_score>& sorted) {
  recommendation r;
  const weighting_score* by_default = nullptr;
  for (const weighting_score& o : sorted) {
    if (!r.leader && o.inflated_rows == 0) r.leader = &o;
    if (o.weighting->name == default_weighting && !o.weighting->k) by_default = &o;
  }
  if (!r.leader) {
    r.reason = "every weighting inflates some row";
    return r;
  }
  if (!by_default || by_default->inflated_rows > 0 || r.leader == by_default) {
    r.chosen = r.leader;
    r.is_default = r.leader == by_default;
    r.reason = r.is_default ? "the default, and the best held-out cosine among those that inflate no row"
               : by_default ? "the best held-out cosine among those that inflate no row; the default inflates rows"
                            : "the best held-out cosine among those that inflate no row; the default was not scored";
    return r;
  }
  std::vector<double> d;
  for (std::size_t s = 0; s < r.leader->split_cosines.size(); ++s)
    d.push_back(r.leader->split_cosines[s] - by_default->split_cosines[s]);
  const auto [low, high] = std::minmax_element(d.begin(), d.end());
  for (double x : d) r.lead += x / double(d.size());
  r.spread = (*high - *low) / 2;
  char words[200];
  if (r.lead > r.spread) {
    r.chosen = r.leader;
    std::snprintf(words, sizeof words, "leads the default by %.3f, more than the splits' spread %.3f", r.lead,
                  r.spread);
  } else {
    r.chosen = by_default;
    r.is_default = true;
    std::snprintf(words, sizeof words, "the default; %s leads by %.3f, within the splits' spread %.3f; default kept",
                  r.leader->weighting->label.c_str(), r.lead, r.spread);
  }
  r.reason = words;
  return r;
}

/// The recommended weighting as options: "--weighting top-k --k 30".
inline std::string as_options(const weighting_candidate& c) {
  return "--weighting " + c.name + (c.k ? " --k " + std::to_string(*c.k) : std::string());
}

}  // namespace clp_transfer
