// SPDX-License-Identifier: MIT
#pragma once

// Internal: the bodies of linear_map.hpp that use Eigen's products or solvers, whose contracts
// are there. Included by it in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/linear_map.hpp>

#include <Eigen/Eigenvalues>

namespace clp::detail {

CLP_DECL void add_transposed_product(double_matrix& target, const double_matrix& left, const double_matrix& right,
                                     int threads) {
  parallel_for(ceil_div(right.cols(), map_chunk_cols), threads, [&](Index chunk, int) {
    const Index c0 = chunk * map_chunk_cols;
    const Index cn = std::min(map_chunk_cols, right.cols() - c0);
    target.middleCols(c0, cn).noalias() += left.transpose() * right.middleCols(c0, cn);
  });
}

CLP_DECL void add_panel_gram(double_matrix& gram, const double_matrix& h, int threads) {
  const Index d = gram.rows();
  parallel_for(ceil_div(d, map_chunk_cols), threads, [&](Index chunk, int) {
    const Index c0 = chunk * map_chunk_cols;
    const Index cn = std::min(map_chunk_cols, d - c0);
    gram.block(c0, c0, d - c0, cn).noalias() += h.rightCols(d - c0).transpose() * h.middleCols(c0, cn);
  });
}

CLP_DECL void add_panel_product(double_matrix& target, const float* left, const float* right, Index panel,
                                std::vector<Eigen::MatrixXf>& products, int threads) {
  const const_matrix_map l(left, panel, target.rows()), r(right, panel, target.cols());
  parallel_for(ceil_div(target.cols(), moment_chunk_cols), threads, [&](Index chunk, int worker) {
    const Index c0 = chunk * moment_chunk_cols;
    const Index cn = std::min(moment_chunk_cols, target.cols() - c0);
    Eigen::MatrixXf& product = products[std::size_t(worker)];
    product.resize(target.rows(), cn);
    product.noalias() = l.transpose() * r.middleCols(c0, cn);
    target.middleCols(c0, cn) += product.cast<double>();
  });
}

CLP_DECL void add_row_sums(const float* rows, Index n, Index d, double& sum_squares, Eigen::VectorXd& sums,
                           int threads) {
  std::vector<double> squares(static_cast<std::size_t>(n));
  const Index row_tasks = ceil_div(n, Index(64)), column_tasks = ceil_div(d, map_chunk_cols);
  parallel_for(row_tasks + column_tasks, threads, [&](Index task, int) {
    if (task < row_tasks) {
      for (Index i = task * 64; i < std::min(n, (task + 1) * 64); ++i)
        squares[std::size_t(i)] = dot_double(rows + i * d, rows + i * d, d);
      return;
    }
    const Index c0 = (task - row_tasks) * map_chunk_cols, cn = std::min(map_chunk_cols, d - c0);
    for (Index i = 0; i < n; ++i)
      sums.segment(c0, cn) += Eigen::Map<const Eigen::VectorXf>(rows + i * d + c0, cn).cast<double>();
  });
  for (const double square : squares) sum_squares += square;
}

CLP_DECL void gather_rows_on_workers(const matrix_view<const void>& v, const Index* ids, Index n, float* dst,
                                     int threads) {
  constexpr Index stretch = 64;
  parallel_for(ceil_div(n, stretch), threads, [&](Index task, int) {
    const Index r0 = task * stretch;
    gather_rows(v, ids + r0, std::min(stretch, n - r0), dst + r0 * v.cols());
  });
}

CLP_DECL overlap_moments sum_overlap_moments(const std::vector<source_output>& pairs,
                                             const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                             int threads) {
  const Index n = overlap.size(), d_helper = helper.cols();
  overlap_moments moments;
  moments.gram = double_matrix::Zero(d_helper, d_helper);
  for (const source_output& pair : pairs) {
    moments.cross.push_back(double_matrix::Zero(d_helper, pair.source.cols()));
    moments.sum_squares.push_back(0.0);
    moments.column_sums.push_back(Eigen::VectorXd::Zero(pair.source.cols()));
  }
  std::vector<float> h, a;
  double_matrix h_double;
  std::vector<Eigen::MatrixXf> products(std::size_t(resolve_threads(threads)));
  for (Index p0 = 0; p0 < n; p0 += panel_rows) {
    const Index pn = std::min(panel_rows, n - p0);
    h.resize(std::size_t(pn * d_helper));
    gather_rows_on_workers(helper, overlap.target_ids.data() + p0, pn, h.data(), threads);
    h_double = const_matrix_map(h.data(), pn, d_helper).cast<double>();
    add_panel_gram(moments.gram, h_double, threads);
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const Index d = pairs[p].source.cols();
      a.resize(std::size_t(pn * d));
      gather_rows_on_workers(pairs[p].source, overlap.source_ids.data() + p0, pn, a.data(), threads);
      add_panel_product(moments.cross[p], h.data(), a.data(), pn, products, threads);
      add_row_sums(a.data(), pn, d, moments.sum_squares[p], moments.column_sums[p], threads);
    }
  }
  for (Index c = 1; c < d_helper; ++c) moments.gram.col(c).head(c) = moments.gram.row(c).head(c).transpose();
  return moments;
}

CLP_DECL void moments_without(overlap_moments& left, const overlap_moments& whole, const overlap_moments& part) {
  left.gram = whole.gram - part.gram;
  left.cross.resize(whole.cross.size());
  left.sum_squares.resize(whole.sum_squares.size());
  left.column_sums.resize(whole.column_sums.size());
  for (std::size_t p = 0; p < whole.cross.size(); ++p) {
    left.cross[p] = whole.cross[p] - part.cross[p];
    left.sum_squares[p] = whole.sum_squares[p] - part.sum_squares[p];
    left.column_sums[p] = whole.column_sums[p] - part.column_sums[p];
  }
}

CLP_DECL gram_factors factorise_gram(const double_matrix& gram) {
  const Eigen::SelfAdjointEigenSolver<double_matrix> solver(gram);
  gram_factors f;
  f.eigenvalues = solver.eigenvalues().cwiseMax(0.0);
  f.eigenvectors = solver.eigenvectors();
  f.mean_eigenvalue = f.eigenvalues.sum() / double(gram.rows());
  const double floor = map_rank_tolerance * f.eigenvalues.maxCoeff();
  for (Index i = 0; i < f.eigenvalues.size(); ++i) f.rank += f.eigenvalues[i] > floor;
  return f;
}

CLP_DECL void residual_and_df(const gram_factors& f, const Eigen::VectorXd& energy, double sum_squares, double lambda,
                              double& rss, double& df) {
  const double floor = map_rank_tolerance * f.eigenvalues.maxCoeff();
  double explained = 0;
  df = 0;
  for (Index i = 0; i < f.eigenvalues.size(); ++i) {
    const double s = f.eigenvalues[i];
    if (!(s > floor)) continue;  // C_i is round-off there: no signal to fit
    const double shrink = lambda / (s + lambda);
    explained += energy[i] / s * (1 - shrink * shrink);
    df += s / (s + lambda);
  }
  rss = std::max(0.0, sum_squares - explained);
}

CLP_DECL double choose_lambda(const gram_factors& f, const Eigen::VectorXd& energy, double sum_squares, Index n) {
  double best = -1, best_score = std::numeric_limits<double>::infinity();
  for (int e = map_grid_first; e <= map_grid_last; ++e) {
    const double lambda = std::pow(10.0, e / 4.0) * f.mean_eigenvalue;
    double rss = 0, df = 0;
    residual_and_df(f, energy, sum_squares, lambda, rss, df);
    const double free = double(n) - df;
    if (!(free > 0)) continue;
    const double score = double(n) * rss / (free * free);
    if (score <= best_score) best = lambda, best_score = score;
  }
  return best < 0 ? std::pow(10.0, map_grid_last / 4.0) * f.mean_eigenvalue : best;
}

CLP_DECL least_squares_fit fit_one_map(const gram_factors& f, const overlap_moments& m, std::size_t p, Index n,
                                       double relative_lambda, float* into, int threads) {
  const double_matrix& cross = m.cross[p];
  const Index d = cross.cols();
  double_matrix projected(f.eigenvectors.cols(), d);  // C = V^T B
  add_transposed_product(projected.setZero(), f.eigenvectors, cross, threads);
  // C_i = (H_o v_i)^T A_o, and ||H_o v_i||^2 = s_i: where s_i is round-off, so is C_i, and the
  // float32 products B is summed from leave more of it there than G's null space holds.
  const double null_floor = map_rank_tolerance * f.eigenvalues.maxCoeff();
  for (Index i = 0; i < f.eigenvalues.size(); ++i)
    if (!(f.eigenvalues[i] > null_floor)) projected.row(i).setZero();
  const Eigen::VectorXd energy = projected.rowwise().squaredNorm();
  least_squares_fit fit;
  fit.automatic = relative_lambda < 0;
  fit.lambda = fit.automatic ? choose_lambda(f, energy, m.sum_squares[p], n) : relative_lambda * f.mean_eigenvalue;
  fit.relative_lambda = fit.lambda / f.mean_eigenvalue;
  fit.rank = f.rank;
  double rss = 0;
  residual_and_df(f, energy, m.sum_squares[p], fit.lambda, rss, fit.degrees_of_freedom);
  const double total = m.sum_squares[p] - m.column_sums[p].squaredNorm() / double(n);
  fit.r_squared = total > 0 ? 1 - rss / total : (rss > 0 ? 0.0 : 1.0);
  const double floor = map_rank_tolerance * f.eigenvalues.maxCoeff();
  Eigen::VectorXd inverse(f.eigenvalues.size());
  for (Index i = 0; i < inverse.size(); ++i) {
    const double s = f.eigenvalues[i] + fit.lambda;
    inverse[i] = fit.lambda == 0 && !(f.eigenvalues[i] > floor) ? 0.0 : 1.0 / s;
  }
  const double_matrix scaled = inverse.asDiagonal() * projected;
  parallel_for(ceil_div(d, map_chunk_cols), threads, [&](Index chunk, int) {
    const Index c0 = chunk * map_chunk_cols;
    const Index cn = std::min(map_chunk_cols, d - c0);
    strided_map(into + c0, f.eigenvectors.rows(), cn, Eigen::OuterStride<>(d)) =
        (f.eigenvectors * scaled.middleCols(c0, cn)).cast<float>();
  });
  return fit;
}

CLP_DECL std::vector<least_squares_fit> fit_linear_maps(std::vector<scratch_buffer<float>>& maps,
                                                        const std::vector<source_output>& pairs,
                                                        const matrix_view<const void>& helper,
                                                        const vocabulary_overlap& overlap, double relative_lambda,
                                                        int threads, const char* context,
                                                        const overlap_moments* given) {
  if (!std::isfinite(relative_lambda))
    throw invalid_argument(error_facts::in(context).with_argument("lambda"),
                           "must be finite (negative: chosen by GCV)");
  std::optional<overlap_moments> own;
  if (given == nullptr) own = sum_overlap_moments(pairs, helper, overlap, threads);
  const overlap_moments& moments = given ? *given : *own;
  const gram_factors factors = factorise_gram(moments.gram);
  if (!(factors.mean_eigenvalue > 0))
    throw invalid_argument(error_facts::in(context).with_argument("helper"),
                           "has only zero rows among the overlapping tokens: no map can be fitted");
  if (relative_lambda == 0 && factors.rank < helper.cols())
    throw invalid_argument(error_facts::in(context).with_argument("lambda"),
                           "is 0 but the overlap's helper Gram matrix H_o^T H_o is singular (rank " +
                               std::to_string(factors.rank) + " of " + std::to_string(helper.cols()) +
                               "): use a positive lambda, or a negative one to choose it by GCV");
  std::vector<least_squares_fit> fits;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    float* const into = maps[p].reserve(std::size_t(helper.cols() * pairs[p].source.cols()));
    fits.push_back(fit_one_map(factors, moments, p, overlap.size(), relative_lambda, into, threads));
  }
  return fits;
}

CLP_DECL void weigh_by_query_norms(const block_context& context, block_rows rows, const block_buffers& buffers) {
  std::vector<float> row(std::size_t(context.plan.d_helper));
  for (Index i = 0; i < rows.m; ++i) {
    const Index position = rows.row0 + i;
    load_row(context.helper, context.rows.missing[std::size_t(position)], row.data());
    buffers.scale[i] = static_cast<float>(row_norm(row.data(), context.plan.d_helper));
    context.outcomes.effective_neighbours[std::size_t(position)] = double(context.plan.n_overlap);
  }
}

}  // namespace clp::detail
