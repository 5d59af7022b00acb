// SPDX-License-Identifier: MIT
#pragma once

// The tests' reference: CLP-Transfer in plain double precision, written from the paper's
// equations and the textbook definitions of each weighting, sharing no code with the library.
// Slow on purpose (no blocking, no float32, sorts instead of heaps and fixed points): its only
// job is to be obviously right.
//
//   e_t = sum_j w_tj a_j over the overlapping tokens j              (eq. 3)
//   paper:     w_tj = c_tj / sum_j' c_tj'                           (eq. 4, as the published
//              clp.py computes it: a negative sum divides too; only a sum of 0, or one whose
//              inverse is past float32's range, falls back)
//   paper-guarded: paper where sum > ratio * sum_j |c_tj|, else the fallback
//   clamped:   w_tj = max(c_tj, 0) / sum_j' max(c_tj', 0)
//   top-k:     clamped, restricted to the k largest cosines
//   softmax:   exp(c_tj / T) / sum exp(c_tj' / T) over the k largest cosines
//   sparsemax: the Euclidean projection of c_t onto the probability simplex
//   omp:       orthogonal matching pursuit of the normalised h_t over the normalised
//              overlapping helper rows (greedy, at most k, least squares by the normal
//              equations), w_tj = x_j ||h_t|| / ||h_j||
// with c_tj = cos(h_t, h_j) of the helper embeddings; ties rank the lower overlap index first.
// A row that cannot be weighted, or whose helper row is zero, becomes the mean of the
// overlapping source rows.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace oracle {

using index = std::ptrdiff_t;

/// A dense row-major matrix of doubles.
struct matrix {
  index rows = 0, cols = 0;
  std::vector<double> values;

  matrix() = default;
  matrix(index r, index c, double fill = 0.0) : rows(r), cols(c), values(std::size_t(r * c), fill) {}
  double& operator()(index r, index c) { return values[std::size_t(r * cols + c)]; }
  double operator()(index r, index c) const { return values[std::size_t(r * cols + c)]; }
  const double* row(index r) const { return values.data() + r * cols; }
  double* row(index r) { return values.data() + r * cols; }
};

inline double dot(const double* a, const double* b, index n) {
  double sum[4] = {0, 0, 0, 0};  // four partial sums: lets the compiler vectorise
  const index whole = n - n % 4;
  for (index i = 0; i < whole; i += 4) {
    sum[0] += a[i] * b[i];
    sum[1] += a[i + 1] * b[i + 1];
    sum[2] += a[i + 2] * b[i + 2];
    sum[3] += a[i + 3] * b[i + 3];
  }
  for (index i = whole; i < n; ++i) sum[0] += a[i] * b[i];
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

inline double norm(const double* a, index n) { return std::sqrt(dot(a, a, n)); }

/// cos(a, b); 0 when either vector is zero (a zero vector is similar to nothing).
inline double cosine(const double* a, const double* b, index n) {
  const double na = norm(a, n), nb = norm(b, n);
  if (na == 0 || nb == 0) return 0;
  return dot(a, b, n) / (na * nb);
}

// ---------------------------------------------------------------------------------------------
// Weightings. Each returns (overlap index, weight) pairs; an empty result means "fall back to
// the mean".

using weights = std::vector<std::pair<index, double>>;

enum class kind { paper, clamped, top_k, softmax, sparsemax, paper_guarded, omp };

struct policy {
  kind which = kind::paper;
  index k = 10;
  double temperature = 0.1;
  double min_sum_ratio = 1e-4;  ///< paper_guarded: fall back unless sum > ratio * sum |c|
  double tolerance = 1e-5;      ///< omp: stop when no |correlation| with the residual exceeds it
};

/// The first `count` overlap indices ordered by descending cosine, equal cosines by ascending
/// index (all of them by default).
inline std::vector<index> ranking(const std::vector<double>& c, index count = -1) {
  std::vector<index> order(c.size());
  std::iota(order.begin(), order.end(), index(0));
  const auto before = [&](index a, index b) {
    return c[std::size_t(a)] > c[std::size_t(b)] || (c[std::size_t(a)] == c[std::size_t(b)] && a < b);
  };
  if (count < 0 || count > index(order.size())) count = index(order.size());
  std::partial_sort(order.begin(), order.begin() + count, order.end(), before);
  order.resize(std::size_t(count));
  return order;
}

/// The published computation, w = c / sum c, whatever the sign of the sum.
inline weights paper(const std::vector<double>& c) {
  double sum = 0;
  for (double x : c) sum += x;
  if (sum == 0 || !std::isfinite(static_cast<float>(1 / sum))) return {};
  weights w;
  for (std::size_t j = 0; j < c.size(); ++j) w.emplace_back(index(j), c[j] / sum);
  return w;
}

inline weights paper_guarded(const std::vector<double>& c, double min_sum_ratio = 1e-4) {
  double sum = 0, sum_abs = 0;
  for (double x : c) {
    sum += x;
    sum_abs += std::abs(x);
  }
  if (!(sum_abs > 0) || !(sum > min_sum_ratio * sum_abs)) return {};
  weights w;
  for (std::size_t j = 0; j < c.size(); ++j) w.emplace_back(index(j), c[j] / sum);
  return w;
}

/// max(c, 0) / sum max(c, 0) over the given indices.
inline weights clamped_over(const std::vector<double>& c, const std::vector<index>& among) {
  double sum = 0;
  for (index j : among) sum += std::max(c[std::size_t(j)], 0.0);
  if (!(sum > 0)) return {};
  weights w;
  for (index j : among) w.emplace_back(j, std::max(c[std::size_t(j)], 0.0) / sum);
  return w;
}

inline weights clamped(const std::vector<double>& c) {
  std::vector<index> all(c.size());
  std::iota(all.begin(), all.end(), index(0));
  return clamped_over(c, all);
}

inline std::vector<index> top(const std::vector<double>& c, index k) { return ranking(c, k); }

inline weights top_k(const std::vector<double>& c, index k) { return clamped_over(c, top(c, k)); }

inline weights softmax(const std::vector<double>& c, index k, double temperature) {
  const std::vector<index> chosen = top(c, k);
  if (chosen.empty()) return {};
  const double best = c[std::size_t(chosen.front())];
  double sum = 0;
  for (index j : chosen) sum += std::exp((c[std::size_t(j)] - best) / temperature);
  weights w;
  for (index j : chosen) w.emplace_back(j, std::exp((c[std::size_t(j)] - best) / temperature) / sum);
  return w;
}

/// Sparsemax by sorting (Martins & Astudillo 2016, Algorithm 1): with z sorted descending, the
/// support is the largest k with 1 + k z_k > z_1 + ... + z_k, and tau = (z_1 + ... + z_k - 1) / k.
inline double sparsemax_threshold(const std::vector<double>& c) {
  std::vector<double> z = c;
  std::sort(z.begin(), z.end(), std::greater<>());
  double prefix = 0, tau = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    prefix += z[i];
    if (1 + double(i + 1) * z[i] > prefix) tau = (prefix - 1) / double(i + 1);
  }
  return tau;
}

inline weights sparsemax(const std::vector<double>& c) {
  if (c.empty()) return {};
  const double tau = sparsemax_threshold(c);
  weights w;
  for (std::size_t j = 0; j < c.size(); ++j)
    if (c[j] > tau) w.emplace_back(index(j), c[j] - tau);
  return w;
}

/// x with G x = b by Gaussian elimination with partial pivoting; false when G is singular
/// (a pivot below 1e-12 of the largest diagonal entry).
inline bool solve(std::vector<std::vector<double>> g, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(g[i][i]));
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(g[r][col]) > std::abs(g[pivot][col])) pivot = r;
    if (!(std::abs(g[pivot][col]) > 1e-12 * largest)) return false;
    std::swap(g[pivot], g[col]);
    std::swap(b[pivot], b[col]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = g[r][col] / g[col][col];
      for (std::size_t c = col; c < n; ++c) g[r][c] -= f * g[col][c];
      b[r] -= f * b[col];
    }
  }
  x.assign(n, 0.0);
  for (std::size_t r = n; r-- > 0;) {
    double v = b[r];
    for (std::size_t c = r + 1; c < n; ++c) v -= g[r][c] * x[c];
    x[r] = v / g[r][r];
  }
  return true;
}

/// Plain greedy OMP of the unit vector q over the unit atoms (rows of `atoms`, zero rows
/// never chosen): at most k steps, each taking the atom of largest |<residual, atom>| (ties:
/// lower index) unless that is at most `tolerance`, then refitting every coefficient by the
/// normal equations. Returns (atom index, coefficient) pairs. *ambiguous is set when a step's
/// best two |correlations|, or the best and the tolerance, are within `ambiguity`.
inline weights pursue(const std::vector<std::vector<double>>& atoms, const std::vector<double>& q, index k,
                      double tolerance, double ambiguity, bool* ambiguous) {
  const std::size_t d = q.size();
  std::vector<index> chosen;
  std::vector<double> x, residual = q;
  for (index step = 0; step < k && step < index(atoms.size()); ++step) {
    std::vector<double> correlation(atoms.size(), 0.0);
    for (std::size_t j = 0; j < atoms.size(); ++j)
      if (std::find(chosen.begin(), chosen.end(), index(j)) == chosen.end())
        correlation[j] = std::abs(dot(residual.data(), atoms[j].data(), index(d)));
    const std::vector<index> order = ranking(correlation, 2);
    const double best = correlation[std::size_t(order[0])];
    if (ambiguity > 0 && ambiguous) {
      if (order.size() > 1 && best - correlation[std::size_t(order[1])] < ambiguity) *ambiguous = true;
      if (std::abs(best - tolerance) < ambiguity) *ambiguous = true;
    }
    if (!(best > tolerance)) break;
    chosen.push_back(order[0]);
    const std::size_t s = chosen.size();
    std::vector<std::vector<double>> g(s, std::vector<double>(s));
    std::vector<double> b(s);
    for (std::size_t a = 0; a < s; ++a) {
      b[a] = dot(atoms[std::size_t(chosen[a])].data(), q.data(), index(d));
      for (std::size_t c = 0; c < s; ++c)
        g[a][c] = dot(atoms[std::size_t(chosen[a])].data(), atoms[std::size_t(chosen[c])].data(), index(d));
    }
    std::vector<double> next;
    if (!solve(g, b, next)) {
      chosen.pop_back();
      break;
    }
    x = next;
    residual = q;
    for (std::size_t a = 0; a < s; ++a)
      for (std::size_t c = 0; c < d; ++c) residual[c] -= x[a] * atoms[std::size_t(chosen[a])][c];
  }
  weights w;
  for (std::size_t a = 0; a < chosen.size(); ++a) w.emplace_back(chosen[a], x[a]);
  return w;
}

inline weights weigh(const policy& p, const std::vector<double>& c) {
  switch (p.which) {
    case kind::paper: return paper(c);
    case kind::paper_guarded: return paper_guarded(c, p.min_sum_ratio);
    case kind::clamped: return clamped(c);
    case kind::top_k: return top_k(c, p.k);
    case kind::softmax: return softmax(c, p.k, p.temperature);
    case kind::sparsemax: return sparsemax(c);
    case kind::omp: break;  // needs the helper rows: see synthesize
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Synthesis.

struct result {
  /// #target_rows by d_source; rows neither copied nor synthesised stay 0.
  matrix output;
  index zero_norm_rows = 0, fallback_rows = 0, no_positive_rows = 0, inflated_rows = 0;
  index negative_sum_rows = 0;  ///< rows whose cosine sum is negative (any policy)
  /// Missing target ids whose k-th and (k+1)-th cosines are closer than `ambiguity` (top-k and
  /// softmax only): float32 may legitimately pick either neighbour there.
  std::vector<index> ambiguous;
  std::vector<double> effective_neighbours;  ///< 1 / sum w^2 per missing row (n for the mean)
};

inline std::vector<double> mean_row(const matrix& source, const std::vector<index>& source_ids) {
  std::vector<double> mean(static_cast<std::size_t>(source.cols), 0.0);
  for (index s : source_ids)
    for (index c = 0; c < source.cols; ++c) mean[std::size_t(c)] += source(s, c);
  for (double& x : mean) x /= double(source_ids.size());
  return mean;
}

/// One result per policy; the cosines of each missing row are computed once for all of them.
/// @param helper       #target_rows by d_helper
/// @param target_ids   overlapping target ids, parallel to source_ids
/// @param missing_ids  target ids to synthesise
/// @param source       #source_rows by d_source
/// @param ambiguity    see result::ambiguous
inline std::vector<result> synthesize(const matrix& helper, const std::vector<index>& target_ids,
                                      const std::vector<index>& source_ids, const std::vector<index>& missing_ids,
                                      const matrix& source, const std::vector<policy>& policies,
                                      double ambiguity = 0) {
  const index n = index(target_ids.size());
  const std::vector<double> mean = mean_row(source, source_ids);
  std::vector<double> overlap_norm;
  for (index t : target_ids) overlap_norm.push_back(norm(helper.row(t), helper.cols));
  // The normalised overlapping helper rows (zero for a zero row), for OMP.
  std::vector<std::vector<double>> atoms;
  for (std::size_t j = 0; j < target_ids.size(); ++j) {
    atoms.emplace_back(helper.row(target_ids[j]), helper.row(target_ids[j]) + helper.cols);
    for (double& x : atoms.back()) x = overlap_norm[j] > 0 ? x / overlap_norm[j] : 0.0;
  }

  std::vector<result> results(policies.size());
  for (result& r : results) {
    r.output = matrix(helper.rows, source.cols);
    for (std::size_t i = 0; i < target_ids.size(); ++i)
      std::copy(source.row(source_ids[i]), source.row(source_ids[i]) + source.cols, r.output.row(target_ids[i]));
  }
  // What happened to each missing row under each policy; summed in row order afterwards.
  struct outcome {
    bool zero = false, fallback = false, no_positive = false, inflated = false, ambiguous = false;
    bool negative_sum = false;
    double effective_neighbours = 0;
  };
  const index n_missing = index(missing_ids.size());
  std::vector<outcome> outcomes(std::size_t(n_missing) * policies.size());

  // Rows are independent (each writes its own output row), so they may run in parallel.
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16)
#endif
  for (index i = 0; i < n_missing; ++i) {
    const index t = missing_ids[std::size_t(i)];
    std::vector<double> c(static_cast<std::size_t>(n));
    const double query_norm = norm(helper.row(t), helper.cols);
    for (index j = 0; j < n; ++j) {
      const double denominator = query_norm * overlap_norm[std::size_t(j)];
      c[std::size_t(j)] = denominator > 0
                              ? dot(helper.row(t), helper.row(target_ids[std::size_t(j)]), helper.cols) / denominator
                              : 0.0;
    }
    const bool no_positive = *std::max_element(c.begin(), c.end()) <= 0;
    const bool negative_sum = std::accumulate(c.begin(), c.end(), 0.0) < 0;
    for (std::size_t q = 0; q < policies.size(); ++q) {
      const policy& p = policies[q];
      outcome& o = outcomes[std::size_t(i) * policies.size() + q];
      double* out = results[q].output.row(t);
      o.no_positive = no_positive;
      o.negative_sum = negative_sum;
      if ((p.which == kind::top_k || p.which == kind::softmax) && ambiguity > 0 && p.k < n) {
        const std::vector<index> order = ranking(c, p.k + 1);
        o.ambiguous = c[std::size_t(order[std::size_t(p.k - 1)])] - c[std::size_t(order[std::size_t(p.k)])] < ambiguity;
      }
      weights w;
      if (query_norm > 0 && p.which == kind::omp) {
        std::vector<double> q(helper.row(t), helper.row(t) + helper.cols);
        for (double& x : q) x /= query_norm;
        w = pursue(atoms, q, p.k, p.tolerance, ambiguity, &o.ambiguous);
        for (auto& [j, x] : w) x *= query_norm / overlap_norm[std::size_t(j)];
      } else if (query_norm > 0) {
        w = weigh(p, c);
      }
      if (w.empty()) {
        (query_norm == 0 ? o.zero : o.fallback) = true;
        std::copy(mean.begin(), mean.end(), out);
        o.effective_neighbours = double(n);
        continue;
      }
      double sum_abs = 0, sum_sq = 0;
      for (const auto& [j, weight] : w) {
        sum_abs += std::abs(weight);
        sum_sq += weight * weight;
        if (weight == 0) continue;
        const double* a = source.row(source_ids[std::size_t(j)]);
        for (index col = 0; col < source.cols; ++col) out[col] += weight * a[col];
      }
      o.inflated = sum_abs > 2;
      o.effective_neighbours = 1 / sum_sq;
    }
  }

  for (index i = 0; i < n_missing; ++i)
    for (std::size_t q = 0; q < policies.size(); ++q) {
      const outcome& o = outcomes[std::size_t(i) * policies.size() + q];
      result& r = results[q];
      const index t = missing_ids[std::size_t(i)];
      r.zero_norm_rows += o.zero;
      r.fallback_rows += o.fallback;
      r.no_positive_rows += o.no_positive;
      r.inflated_rows += o.inflated;
      r.negative_sum_rows += o.negative_sum;
      if (o.ambiguous) r.ambiguous.push_back(t);
      r.effective_neighbours.push_back(o.effective_neighbours);
    }
  return results;
}

inline result synthesize(const matrix& helper, const std::vector<index>& target_ids,
                         const std::vector<index>& source_ids, const std::vector<index>& missing_ids,
                         const matrix& source, const policy& p, double ambiguity = 0) {
  return std::move(synthesize(helper, target_ids, source_ids, missing_ids, source, std::vector<policy>{p}, ambiguity)[0]);
}

// ---------------------------------------------------------------------------------------------
// The baselines' pieces.

/// output(target_ids[i]) = source(source_ids[i]) for every i (eq. 2).
inline void copy_overlap(const matrix& source, const std::vector<index>& target_ids,
                         const std::vector<index>& source_ids, matrix& output) {
  for (std::size_t i = 0; i < target_ids.size(); ++i)
    for (index c = 0; c < source.cols; ++c) output(target_ids[i], c) = source(source_ids[i], c);
}

/// Per-column mean and population standard deviation, from the definitions.
struct column_moments {
  std::vector<double> mean, stddev;
};

inline column_moments moments_of(const matrix& m) {
  column_moments s{std::vector<double>(std::size_t(m.cols), 0.0), std::vector<double>(std::size_t(m.cols), 0.0)};
  for (index c = 0; c < m.cols; ++c) {
    double sum = 0;
    for (index r = 0; r < m.rows; ++r) sum += m(r, c);
    const double mean = sum / double(m.rows);
    double squares = 0;
    for (index r = 0; r < m.rows; ++r) squares += (m(r, c) - mean) * (m(r, c) - mean);
    s.mean[std::size_t(c)] = mean;
    s.stddev[std::size_t(c)] = std::sqrt(squares / double(m.rows));
  }
  return s;
}

/// The moments of the given rows of m.
inline column_moments moments_of(const matrix& m, const std::vector<index>& rows) {
  matrix picked(index(rows.size()), m.cols);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (index c = 0; c < m.cols; ++c) picked(index(i), c) = m(rows[i], c);
  return moments_of(picked);
}

// ---------------------------------------------------------------------------------------------
// Test data.

/// rows x cols normal draws plus `anisotropy` times one shared random direction (trained
/// embeddings share a mean direction, which keeps their cosines mostly positive), each value
/// rounded to float so every element type down to float holds the same numbers.
inline matrix random_embeddings(index rows, index cols, double anisotropy, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  std::vector<double> shared(static_cast<std::size_t>(cols));
  for (double& x : shared) x = normal(engine);
  matrix m(rows, cols);
  for (index r = 0; r < rows; ++r)
    for (index c = 0; c < cols; ++c)
      m(r, c) = double(static_cast<float>(normal(engine) + anisotropy * shared[std::size_t(c)]));
  return m;
}

// ---------------------------------------------------------------------------------------------
// The least-squares map, by the normal equations written out: (H^T H + lambda I) W = H^T A,
// formed element by element in double and solved column by column by Gaussian elimination.

/// H_o^T H_o (d_helper x d_helper) of the overlapping helper rows.
inline std::vector<std::vector<double>> overlap_gram(const matrix& helper, const std::vector<index>& target_ids) {
  const index d = helper.cols;
  std::vector<std::vector<double>> g(std::size_t(d), std::vector<double>(std::size_t(d), 0.0));
  for (index t : target_ids)
    for (index i = 0; i < d; ++i)
      for (index j = 0; j < d; ++j) g[std::size_t(i)][std::size_t(j)] += helper(t, i) * helper(t, j);
  return g;
}

/// trace(H_o^T H_o) / d_helper: what a relative lambda is relative to.
inline double mean_eigenvalue(const matrix& helper, const std::vector<index>& target_ids) {
  const auto g = overlap_gram(helper, target_ids);
  double trace = 0;
  for (std::size_t i = 0; i < g.size(); ++i) trace += g[i][i];
  return trace / double(g.size());
}

/// W (d_helper x d_source) for an absolute lambda; false when the system is singular.
inline bool least_squares_map(const matrix& helper, const std::vector<index>& target_ids, const matrix& source,
                              const std::vector<index>& source_ids, double lambda, matrix& w) {
  const index d = helper.cols;
  auto g = overlap_gram(helper, target_ids);
  for (index i = 0; i < d; ++i) g[std::size_t(i)][std::size_t(i)] += lambda;
  w = matrix(d, source.cols);
  for (index c = 0; c < source.cols; ++c) {
    std::vector<double> b(std::size_t(d), 0.0), x;
    for (std::size_t j = 0; j < target_ids.size(); ++j)
      for (index i = 0; i < d; ++i) b[std::size_t(i)] += helper(target_ids[j], i) * source(source_ids[j], c);
    if (!solve(g, b, x)) return false;
    for (index i = 0; i < d; ++i) w(i, c) = x[std::size_t(i)];
  }
  return true;
}

/// The rows `ids` of helper times W.
inline matrix apply_map(const matrix& helper, const std::vector<index>& ids, const matrix& w) {
  matrix out(index(ids.size()), w.cols);
  for (std::size_t r = 0; r < ids.size(); ++r)
    for (index c = 0; c < w.cols; ++c)
      for (index i = 0; i < w.rows; ++i) out(index(r), c) += helper(ids[r], i) * w(i, c);
  return out;
}

/// GCV(lambda) = n RSS / (n - df)^2 by brute force: the residual from W itself, and
/// df = trace(H (H^T H + lambda I)^-1 H^T) from one solve per overlapping row.
inline double gcv(const matrix& helper, const std::vector<index>& target_ids, const matrix& source,
                  const std::vector<index>& source_ids, double lambda) {
  matrix w;
  if (!least_squares_map(helper, target_ids, source, source_ids, lambda, w)) return INFINITY;
  const matrix fitted = apply_map(helper, target_ids, w);
  double rss = 0;
  for (std::size_t j = 0; j < target_ids.size(); ++j)
    for (index c = 0; c < source.cols; ++c) {
      const double r = fitted(index(j), c) - source(source_ids[j], c);
      rss += r * r;
    }
  auto g = overlap_gram(helper, target_ids);
  for (std::size_t i = 0; i < g.size(); ++i) g[i][i] += lambda;
  double df = 0;
  for (index t : target_ids) {
    std::vector<double> h(helper.row(t), helper.row(t) + helper.cols), x;
    solve(g, h, x);
    df += dot(h.data(), x.data(), helper.cols);
  }
  const double n = double(target_ids.size());
  return n * rss / ((n - df) * (n - df));
}

}  // namespace oracle
