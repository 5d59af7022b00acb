// The expected output of a CLP-Transfer, computed from a fixture's values in double precision
// and written from the paper's formulas directly (no code shared with the library): overlap by
// token string, cosines of the helper rows, the weighting, the weighted sum of source rows,
// and the documented fallback (mean of the overlapping source rows) for rows that cannot be
// weighted.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "model_fixtures.hpp"

namespace program_test {

/// A --weighting choice and the options it takes.
struct weighting_choice {
  std::string name;
  std::int64_t k = 10;
  double temperature = 0.1;

  std::vector<std::string> arguments() const {
    return {"--weighting", name, "--k", std::to_string(k), "--temperature", std::to_string(temperature)};
  }
};

/// The predicted target rows.
struct oracle_rows {
  matrix embedding;                 ///< #helper rows by source width
  matrix head;                      ///< the same for the untied head; empty when tied
  std::vector<bool> copied;         ///< target rows that copy a source row (eq. 2)
  std::vector<bool> ambiguous;      ///< rows whose k-th and (k+1)-th cosines nearly tie (top-k, softmax)
  std::vector<std::int64_t> source_of;  ///< for copied rows, the source row
  std::int64_t overlap = 0, degenerate = 0;
};

namespace detail {

inline double dot(const double* a, const double* b, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

/// Weights for one row of cosines, or an empty vector when the row falls back to the mean.
/// Sets `ambiguous` when a top-k selection sits on a near tie that float arithmetic may break
/// either way.
inline std::vector<double> weights_for(const std::vector<double>& cosine, const weighting_choice& choice,
                                       bool& ambiguous) {
  const std::size_t n = cosine.size();
  std::vector<double> w(n, 0.0);
  // Positions by descending cosine, ties to the lower position.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cosine[a] > cosine[b]; });

  if (choice.name == "paper") {  // eq. 4, with the guard of a cosine sum that is not safely positive
    double sum = 0, sum_abs = 0;
    for (double c : cosine) sum += c, sum_abs += std::abs(c);
    if (!(sum > 1e-4 * sum_abs)) return {};
    for (std::size_t j = 0; j < n; ++j) w[j] = cosine[j] / sum;
  } else if (choice.name == "clamped") {
    double sum = 0;
    for (double c : cosine) sum += std::max(c, 0.0);
    if (!(sum > 0)) return {};
    for (std::size_t j = 0; j < n; ++j) w[j] = std::max(cosine[j], 0.0) / sum;
  } else if (choice.name == "top-k" || choice.name == "softmax") {
    const std::size_t k = std::min<std::size_t>(std::size_t(choice.k), n);
    if (k < n && cosine[order[k - 1]] - cosine[order[k]] < 1e-5) ambiguous = true;
    double sum = 0;
    for (std::size_t i = 0; i < k; ++i)
      sum += choice.name == "top-k" ? std::max(cosine[order[i]], 0.0)
                                    : std::exp((cosine[order[i]] - cosine[order[0]]) / choice.temperature);
    if (!(sum > 0)) return {};
    for (std::size_t i = 0; i < k; ++i)
      w[order[i]] = (choice.name == "top-k" ? std::max(cosine[order[i]], 0.0)
                                            : std::exp((cosine[order[i]] - cosine[order[0]]) / choice.temperature)) /
                    sum;
  } else if (choice.name == "sparsemax") {
    // Martins & Astudillo's sort-based form: the support is the largest prefix of the sorted
    // cosines z with 1 + j * z_j > z_1 + ... + z_j, and tau = (that prefix sum - 1) / its length.
    double prefix = 0, support_sum = 0;
    std::size_t support = 0;
    for (std::size_t j = 0; j < n; ++j) {
      prefix += cosine[order[j]];
      if (1 + double(j + 1) * cosine[order[j]] > prefix) support = j + 1, support_sum = prefix;
    }
    const double tau = (support_sum - 1) / double(support);
    for (std::size_t j = 0; j < n; ++j) w[j] = std::max(cosine[j] - tau, 0.0);
  } else {
    throw std::logic_error("oracle: weighting " + choice.name);
  }
  return w;
}

}  // namespace detail

/// What `clp-transfer transfer --method clp` should write for `pair` with `choice`.
inline oracle_rows clp_oracle(const model_pair& pair, const weighting_choice& choice) {
  const model_fixture& source = pair.source;
  const model_fixture& helper = pair.helper;
  const std::int64_t rows = helper.embedding.rows, d_helper = helper.embedding.cols;
  const bool untied = !source.head_name.empty();

  std::unordered_map<std::string, std::int64_t> source_id;
  for (std::size_t id = 0; id < source.tokens.size(); ++id) source_id.emplace(source.tokens[id], std::int64_t(id));

  oracle_rows out;
  out.embedding = matrix(rows, source.embedding.cols);
  if (untied) out.head = matrix(rows, source.head.cols);
  out.copied.assign(std::size_t(rows), false);
  out.ambiguous.assign(std::size_t(rows), false);
  out.source_of.assign(std::size_t(rows), -1);
  std::vector<std::int64_t> overlap_target, overlap_source;  // ascending target id
  for (std::int64_t t = 0; t < std::int64_t(helper.tokens.size()); ++t)
    if (auto hit = source_id.find(helper.tokens[std::size_t(t)]); hit != source_id.end()) {
      overlap_target.push_back(t);
      overlap_source.push_back(hit->second);
      out.copied[std::size_t(t)] = true;
      out.source_of[std::size_t(t)] = hit->second;
    }
  out.overlap = std::int64_t(overlap_target.size());

  // Copied rows and the fallback rows (mean of the overlapping source rows).
  auto fill = [&](const matrix& from, matrix& to, std::vector<double>& mean) {
    mean.assign(std::size_t(from.cols), 0.0);
    for (std::size_t i = 0; i < overlap_target.size(); ++i) {
      std::copy(from.row(overlap_source[i]), from.row(overlap_source[i]) + from.cols, to.row(overlap_target[i]));
      for (std::int64_t c = 0; c < from.cols; ++c) mean[std::size_t(c)] += from(overlap_source[i], c);
    }
    for (double& x : mean) x /= double(overlap_target.size());
  };
  std::vector<double> embedding_mean, head_mean;
  fill(source.embedding, out.embedding, embedding_mean);
  if (untied) fill(source.head, out.head, head_mean);

  std::vector<double> overlap_norm;
  for (std::int64_t t : overlap_target)
    overlap_norm.push_back(std::sqrt(detail::dot(helper.embedding.row(t), helper.embedding.row(t), d_helper)));

  for (std::int64_t t = 0; t < rows; ++t) {
    if (out.copied[std::size_t(t)]) continue;
    const double* h = helper.embedding.row(t);
    const double norm = std::sqrt(detail::dot(h, h, d_helper));
    std::vector<double> w;
    if (norm > 0) {
      std::vector<double> cosine(overlap_target.size());
      for (std::size_t j = 0; j < cosine.size(); ++j)
        cosine[j] = overlap_norm[j] > 0
                        ? detail::dot(h, helper.embedding.row(overlap_target[j]), d_helper) / (norm * overlap_norm[j])
                        : 0.0;
      bool ambiguous = false;
      w = detail::weights_for(cosine, choice, ambiguous);
      out.ambiguous[std::size_t(t)] = ambiguous;
    }
    if (w.empty()) ++out.degenerate;
    auto synthesize = [&](const matrix& from, matrix& to, const std::vector<double>& mean) {
      double* row = to.row(t);
      if (w.empty()) {
        std::copy(mean.begin(), mean.end(), row);
        return;
      }
      for (std::size_t j = 0; j < w.size(); ++j)
        if (w[j] != 0)
          for (std::int64_t c = 0; c < from.cols; ++c) row[c] += w[j] * from(overlap_source[j], c);
    };
    synthesize(source.embedding, out.embedding, embedding_mean);
    if (untied) synthesize(source.head, out.head, head_mean);
  }
  return out;
}

}  // namespace program_test
