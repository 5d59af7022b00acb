// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: orthogonal matching pursuit over the overlap's helper rows, how the
// engine weighs a block for a policy whose input is weighting_input::helper_rows (omp_weights).
//
// Each row repeatedly picks the overlapping token most correlated with its residual (ties: the
// lower index), refits the coefficients of the chosen rows by least squares (double), and stops
// after k tokens, when no correlation exceeds the tolerance, or when the pick is linearly
// dependent on the chosen. The correlations of the next step come one of two ways, the same
// numbers up to rounding:
//   - Batch-OMP (Rubinstein, Zibulevsky & Elad 2008), when the plan holds the Gram matrix G
//     of the normalised overlapping rows: alpha = alpha0 - G_S x_S, row by row, kept up to
//     date with one row of G per step (the fit's Cholesky factor turns G_S x_S into a sum with
//     one new term per pick, see update_correlations);
//   - otherwise step by step for the whole block: each row's residual q - N_S x_S, then one
//     product of the block's residuals with the overlapping rows (|overlap| x d_helper per
//     row and step).
// Either way a row's arithmetic depends only on the row, so the bits do not depend on the
// blocking or the threads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/similarity_product.hpp>
#include <clp/element_type.hpp>
#include <clp/policy.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace clp::detail {

/// Per block, in double: each row's Gram matrix of its chosen rows (lower triangle,
/// k_max x k_max), right-hand side N_S^T q and coefficients, kept from step to step; and the
/// workspace of one Cholesky solve.
struct pursuit_state {
  pursuit_state(Index m, const synthesis_plan& plan)
      : k_max(plan.k_max),
        per_row(k_max * k_max + 2 * k_max),
        active(std::size_t(m)),
        fits(std::size_t(m * per_row), 0.0),
        factor(std::size_t(k_max * k_max)),
        y(std::size_t(k_max)),
        atom(std::size_t(plan.d_helper)),
        other(std::size_t(plan.d_helper)) {}
  double* gram(Index i) { return fits.data() + i * per_row; }
  double* rhs(Index i) { return gram(i) + k_max * k_max; }
  double* coefficients(Index i) { return rhs(i) + k_max; }

  Index k_max, per_row;
  std::vector<char> active;
  std::vector<double> fits, factor, y;
  std::vector<float> atom, other;  // gathered overlap rows when the panels are not resident
};

/// The normalised overlapping helper row j (the resident panel's, or gathered into `into`
/// with the same arithmetic).
inline const float* atom(const block_context& context, Index j, float* into) {
  const Index d_helper = context.plan.d_helper;
  if (context.plan.resident) return context.panels.helper + j * d_helper;
  load_row(context.helper, context.overlap.target_ids[std::size_t(j)], into);
  for (Index c = 0; c < d_helper; ++c) into[c] *= context.scan.inverse_norm[std::size_t(j)];
  return into;
}

/// A row's next pick from its correlations: the largest |correlation| (over independent
/// lanes, vectorised), then its first index; the chosen rows are zeroed first (never twice).
/// Returns -1 when nothing exceeds the tolerance.
inline Index pick(float* correlation, Index n_overlap, const Index* chosen, Index count, double tolerance) {
  for (Index s = 0; s < count; ++s) correlation[chosen[s]] = 0;
  const float best_value = max_abs_of(correlation, n_overlap);
  if (!(double(best_value) > tolerance)) return -1;
  return std::min(first_abs_equal(correlation, n_overlap, best_value), n_overlap - 1);
}

/// The Cholesky factor L (lower triangle of `factor`, row stride k_max) of the size x size
/// matrix g, from scratch (k is small); false when g is not safely positive definite.
inline bool cholesky(const double* g, Index size, Index k_max, double* factor) {
  for (Index row = 0; row < size; ++row)
    for (Index col = 0; col <= row; ++col) {
      double value = g[row * k_max + col];
      for (Index l = 0; l < col; ++l) value -= factor[row * k_max + l] * factor[col * k_max + l];
      if (row == col) {
        if (!(value > 1e-12 * g[row * k_max + row])) return false;
        factor[row * k_max + row] = std::sqrt(value);
      } else {
        factor[row * k_max + col] = value / factor[col * k_max + col];
      }
    }
  return true;
}

/// x from L L^T x = rhs (L in `factor`), through y.
inline void cholesky_solve(const double* factor, const double* rhs, Index size, Index k_max, double* y, double* x) {
  for (Index row = 0; row < size; ++row) {
    double value = rhs[row];
    for (Index l = 0; l < row; ++l) value -= factor[row * k_max + l] * y[l];
    y[row] = value / factor[row * k_max + row];
  }
  for (Index row = size - 1; row >= 0; --row) {
    double value = y[row];
    for (Index l = row + 1; l < size; ++l) value -= factor[l * k_max + row] * x[l];
    x[row] = value / factor[row * k_max + row];
  }
}

/// Adds overlap row `best` to row i's chosen rows and refits the coefficients: the new row of
/// the chosen rows' Gram matrix and the new right-hand side (double, from the rows), then the
/// Cholesky factor L and two triangular solves (L y = N_S^T q, then L^T x = y; L and y stay in
/// `state` for update_correlations). Returns false, adding nothing, when `best` lies in the
/// span of the chosen rows.
inline bool extend_fit(const block_context& context, Index i, Index best, const block_buffers& buffers,
                       pursuit_state& state) {
  const Index d_helper = context.plan.d_helper;
  const Index k_max = state.k_max;
  Index* const chosen = buffers.neighbours + i * k_max;
  Index& count = buffers.counts[i];
  const float* q = buffers.queries + i * d_helper;
  const float* a = atom(context, best, state.atom.data());
  double* const g = state.gram(i);
  for (Index s = 0; s < count; ++s)
    g[count * k_max + s] = dot_double(a, atom(context, chosen[s], state.other.data()), d_helper);
  g[count * k_max + count] = dot_double(a, a, d_helper);
  state.rhs(i)[count] = dot_double(a, q, d_helper);
  if (!cholesky(g, count + 1, k_max, state.factor.data())) return false;
  chosen[count] = best;
  ++count;
  cholesky_solve(state.factor.data(), state.rhs(i), count, k_max, state.y.data(), state.coefficients(i));
  return true;
}

/// Batch-OMP's correlations of a row after its n-th pick (counting from 0), from those before it.
/// With L the Cholesky factor of the chosen rows' Gram matrix and y = L^-1 N_S^T q (extend_fit),
/// G_S x = G_S L^-T y = W y, where W = G_S L^-T has the columns
///     w_n = (G_{chosen n} - sum_{s<n} L_ns w_s) / L_nn,
/// and neither L's rows nor y's entries before n change when a row is chosen. So
/// alpha = alpha0 - G_S x loses one term per pick, alpha -= y_n w_n: one row of G read per step
/// (not |S|), the earlier w_s, in `basis` (column s at s * n_overlap), from cache. Chunk by
/// chunk, so that a chunk of alpha and of the w_s stays in L1; the chosen entries are then
/// zeroed. Returns the largest |alpha_j|.
CLP_DECL float update_correlations(const overlap_panels& panels, const Index* chosen, Index n, const double* factor_row,
                                   double y_n, float* basis, float* alpha, Index n_overlap);

/// Batch-OMP, row by row: the cosines are the first correlations (alpha0); after each fit the
/// correlations lose the new pick's term (update_correlations).
inline void pursue_with_gram(const block_context& context, double tolerance, Index m, const block_buffers& buffers,
                             pursuit_state& state) {
  const Index n_overlap = context.plan.n_overlap;
  const Index k_max = context.plan.k_max;
  float* const alpha = buffers.correlations;
  float* const basis = buffers.correlations + n_overlap;
  for (Index i = 0; i < m; ++i) {
    if (!state.active[std::size_t(i)]) continue;
    const Index* const chosen = buffers.neighbours + i * k_max;
    std::copy(buffers.cosines + i * n_overlap, buffers.cosines + (i + 1) * n_overlap, alpha);
    float top = max_abs_of(alpha, n_overlap);
    for (Index step = 0; step < k_max && tolerance < top; ++step) {
      const Index best = std::min(first_abs_equal(alpha, n_overlap, top), n_overlap - 1);
      if (!extend_fit(context, i, best, buffers, state) || buffers.counts[i] == k_max) break;
      const Index n = buffers.counts[i] - 1;
      top = update_correlations(context.panels, chosen, n, state.factor.data() + n * k_max, state.y[std::size_t(n)],
                                basis, alpha, n_overlap);
    }
  }
}

/// Row i's residual q - sum_s x_s n_s over its chosen rows, into residuals (float, summed in
/// double).
inline void update_residual(const block_context& context, Index i, const block_buffers& buffers, pursuit_state& state,
                            std::vector<double>& sum) {
  const Index d_helper = context.plan.d_helper;
  const Index* const chosen = buffers.neighbours + i * state.k_max;
  const double* const coefficient = state.coefficients(i);
  const float* q = buffers.queries + i * d_helper;
  float* const residual = buffers.residuals + i * d_helper;
  std::fill(sum.begin(), sum.end(), 0.0);
  for (Index s = 0; s < buffers.counts[i]; ++s) {
    const float* b = atom(context, chosen[s], state.other.data());
    for (Index col = 0; col < d_helper; ++col) sum[std::size_t(col)] += coefficient[s] * b[col];
  }
  for (Index col = 0; col < d_helper; ++col) residual[col] = static_cast<float>(q[col] - sum[std::size_t(col)]);
}

/// Step by step for the whole block: every active row picks and refits, updates its residual;
/// then one product of the block's residuals (zero for rows that stopped, and for the padding)
/// with the overlapping rows gives the next correlations.
inline void pursue_by_products(const block_context& context, double tolerance, Index m, const block_buffers& buffers,
                               pursuit_state& state) {
  const Index n_overlap = context.plan.n_overlap;
  const Index d_helper = context.plan.d_helper;
  const Index k_max = context.plan.k_max;
  std::vector<double> sum(static_cast<std::size_t>(d_helper));
  matrix_map(buffers.residuals, context.plan.blocks.rows, d_helper).setZero();
  for (Index step = 0; step < k_max; ++step) {
    bool any = false;
    for (Index i = 0; i < m; ++i) {
      if (!state.active[std::size_t(i)]) continue;
      const Index best = pick(buffers.cosines + i * n_overlap, n_overlap, buffers.neighbours + i * k_max,
                              buffers.counts[i], tolerance);
      if (best < 0 || !extend_fit(context, i, best, buffers, state) || buffers.counts[i] == k_max) {
        state.active[std::size_t(i)] = false;
        continue;
      }
      update_residual(context, i, buffers, state, sum);
      any = true;
    }
    if (!any) break;
    for (Index i = 0; i < m; ++i)
      if (!state.active[std::size_t(i)])
        std::fill(buffers.residuals + i * d_helper, buffers.residuals + (i + 1) * d_helper, 0.0f);
    form_cosines(context, buffers.residuals, buffers.cosines, buffers.panel);
  }
}

/// The block's weights by the pursuit: flags from the cosines, the pursuit, then the
/// coefficients of the raw rows, x_s ||h_t|| / ||h_s||.
inline void pursue(const block_context& context, double tolerance, block_rows rows, const block_buffers& buffers) {
  const synthesis_plan& plan = context.plan;
  pursuit_state state(rows.m, plan);
  for (Index i = 0; i < rows.m; ++i) {
    std::uint8_t& flag = context.outcomes.flags[std::size_t(rows.row0 + i)];
    float max = 0;
    double sum = 0;
    max_and_sum(buffers.cosines + i * plan.n_overlap, plan.n_overlap, max, sum);
    flag_cosines(max, sum, flag);
    buffers.counts[i] = 0;
    state.active[std::size_t(i)] = !(flag & zero_norm);
  }
  if (plan.gram)
    pursue_with_gram(context, tolerance, rows.m, buffers, state);
  else
    pursue_by_products(context, tolerance, rows.m, buffers, state);
  for (Index i = 0; i < rows.m; ++i) {
    const Index row = rows.row0 + i;
    float* const weight = buffers.weights + i * plan.k_max;
    const Index* const chosen = buffers.neighbours + i * plan.k_max;
    const Index count = buffers.counts[i];
    const double* const coefficient = state.coefficients(i);
    for (Index s = 0; s < count; ++s)
      weight[s] = static_cast<float>(coefficient[s] * buffers.query_norm[i] * context.scan.inverse_norm[chosen[s]]);
    buffers.scale[i] = 1.0f;
    if (count == 0 && !(context.outcomes.flags[std::size_t(row)] & zero_norm))
      context.outcomes.flags[std::size_t(row)] |= fallback;
    const cosine_statistics statistics = statistics_of(weight, count);
    record_weights(context.outcomes, row, plan.n_overlap, {statistics.sum_abs, statistics.sum_squares});
  }
}

}  // namespace clp::detail

// The bodies; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/synthesis/pursuit-inl.hpp>
#endif
