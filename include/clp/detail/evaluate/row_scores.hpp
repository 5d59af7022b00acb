// SPDX-License-Identifier: MIT
#pragma once

// Internal, evaluate: the scores of synthesised rows against the source rows they should have
// been. Included by <clp/evaluate.hpp> after held_out_scores, which it fills.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/matrices/rows.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace clp::detail {

/// The value at quantile q of sorted values (nearest rank).
inline double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = std::size_t(std::llround(q * double(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

/// The scores of `synthesised` against the source rows `source_ids`.
/// @param synthesised  #source_ids by d, row-major float32; d = source.cols()
inline held_out_scores score_rows(const std::string& name, const matrix_view<const void>& source,
                                  const std::vector<Index>& source_ids, const float* synthesised) {
  const Index d = source.cols();
  held_out_scores s;
  s.name = name;
  std::vector<float> truth(std::size_t(d), 0.0f);
  for (std::size_t i = 0; i < source_ids.size(); ++i) {
    load_row(source, source_ids[i], truth.data());
    const float* got = synthesised + i * std::size_t(d);
    double dot = 0, got2 = 0, true2 = 0, diff2 = 0;
    for (Index c = 0; c < d; ++c) {
      dot += double(got[c]) * truth[std::size_t(c)];
      got2 += double(got[c]) * got[c];
      true2 += double(truth[std::size_t(c)]) * truth[std::size_t(c)];
      diff2 += (double(got[c]) - truth[std::size_t(c)]) * (double(got[c]) - truth[std::size_t(c)]);
    }
    s.cosine.push_back(got2 > 0 && true2 > 0 ? dot / std::sqrt(got2 * true2) : 0.0);
    s.relative_error.push_back(true2 > 0 ? std::sqrt(diff2 / true2) : std::sqrt(diff2));
    s.norm_ratio.push_back(true2 > 0 ? std::sqrt(got2 / true2) : 0.0);
  }
  const double n = double(source_ids.size());
  s.mean_cosine = std::accumulate(s.cosine.begin(), s.cosine.end(), 0.0) / n;
  s.mean_relative_error = std::accumulate(s.relative_error.begin(), s.relative_error.end(), 0.0) / n;
  std::vector<double> sorted = s.cosine;
  std::sort(sorted.begin(), sorted.end());
  s.cosine_p10 = quantile_of_sorted(sorted, 0.1);
  s.median_cosine = quantile_of_sorted(sorted, 0.5);
  s.cosine_p90 = quantile_of_sorted(sorted, 0.9);
  sorted = s.norm_ratio;
  std::sort(sorted.begin(), sorted.end());
  s.median_norm_ratio = quantile_of_sorted(sorted, 0.5);
  return s;
}

}  // namespace clp::detail
