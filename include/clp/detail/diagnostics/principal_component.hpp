// SPDX-License-Identifier: MIT
#pragma once

// Internal: the under-trained screen's passes that summarise a matrix: each row's norm, the
// mean row, random projections of every row (for the cluster search), and the first principal
// component of the mean-centred rows, found by subspace iteration with Rayleigh-Ritz
// extraction, one pass over the rows per iteration, never with a #cols by #cols matrix formed.
// The small products outside a pass are coefficient loops (lazyProduct), which no library
// parallelises, so that the component is the same for any thread count.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/diagnostics/row_passes.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/splitmix64.hpp>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstdint>
#include <vector>

namespace clp::detail::undertrained {

using row_major_floats = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// What the first pass learns of a matrix.
struct row_statistics {
  std::vector<double> norms;       ///< #rows: each row's Euclidean norm; NaN or inf for a non-finite row
  Eigen::VectorXd mean;            ///< #cols: the mean row
  std::vector<float> projections;  ///< #rows by `directions`, row-major: each row against random_directions
  Index directions = 0;
};

/// #cols by `count` directions, each of unit norm with entries +-1/sqrt(#cols) by a fixed hash.
inline row_major_floats random_directions(Index cols, Index count) {
  row_major_floats g(cols, count);
  const float entry = cols > 0 ? static_cast<float>(1.0 / std::sqrt(double(cols))) : 0.0f;
  for (Index c = 0; c < cols; ++c)
    for (Index k = 0; k < count; ++k)
      g(c, k) = (splitmix64(std::uint64_t(c * count + k) ^ 0x5eedULL) & 1) ? entry : -entry;
  return g;
}

/// One pass: the norms, the mean and (when `directions` > 0) the projections of every row.
inline row_statistics measure_rows(const matrix_view<const void>& m, Index directions, int threads) {
  const Index n = m.rows(), d = m.cols();
  row_statistics s;
  s.norms.resize(static_cast<std::size_t>(n));
  s.directions = directions;
  s.projections.resize(static_cast<std::size_t>(n * directions));
  const row_major_floats g = random_directions(d, directions);
  std::vector<Eigen::VectorXd> sums(static_cast<std::size_t>(slot_count(m)), Eigen::VectorXd::Zero(d));
  for_each_chunk(m, threads, [&](Index slot, const row_chunk& chunk) {
    const Eigen::Map<const row_major_floats> rows(chunk.rows, chunk.count, d);
    for (Index i = 0; i < chunk.count; ++i)
      s.norms[static_cast<std::size_t>(chunk.first + i)] = std::sqrt(dot(chunk.row(i), chunk.row(i), d));
    sums[static_cast<std::size_t>(slot)] += rows.cast<double>().colwise().sum().transpose();
    if (directions > 0)
      Eigen::Map<row_major_floats>(s.projections.data() + chunk.first * directions, chunk.count, directions).noalias() =
          rows * g;
  });
  s.mean = Eigen::VectorXd::Zero(d);
  for (const Eigen::VectorXd& sum : sums) s.mean += sum;
  if (n > 0) s.mean /= double(n);
  return s;
}

/// (X - 1 mean^T)^T (X - 1 mean^T) v for the #rows by #cols matrix X = m: one pass.
/// @param[in] v  #cols by b
inline Eigen::MatrixXd centred_gram_times(const matrix_view<const void>& m, const Eigen::VectorXd& mean,
                                          const Eigen::MatrixXd& v, int threads) {
  const Eigen::RowVectorXf centre = mean.cast<float>().transpose();
  const Eigen::MatrixXf vf = v.cast<float>();
  std::vector<Eigen::MatrixXd> partials(static_cast<std::size_t>(slot_count(m)),
                                        Eigen::MatrixXd::Zero(v.rows(), v.cols()));
  for_each_chunk(m, threads, [&](Index slot, const row_chunk& chunk) {
    Eigen::Map<row_major_floats> rows(chunk.rows, chunk.count, chunk.cols);
    rows.rowwise() -= centre;
    const Eigen::MatrixXf projected = rows * vf;
    partials[static_cast<std::size_t>(slot)] += (rows.transpose() * projected).cast<double>();
  });
  Eigen::MatrixXd total = Eigen::MatrixXd::Zero(v.rows(), v.cols());
  for (const Eigen::MatrixXd& partial : partials) total += partial;
  return total;
}

/// The columns of a made orthonormal by Gram-Schmidt, twice over (which keeps them orthogonal
/// to working precision); a column that vanishes becomes zero.
inline Eigen::MatrixXd orthonormalised(Eigen::MatrixXd a) {
  for (Index j = 0; j < a.cols(); ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (Index i = 0; i < j; ++i) a.col(j) -= a.col(i).dot(a.col(j)) * a.col(i);
    const double norm = a.col(j).norm();
    a.col(j) = norm > 0 ? Eigen::VectorXd(a.col(j) / norm) : Eigen::VectorXd::Zero(a.rows());
  }
  return a;
}

/// The first principal component of m's mean-centred rows: the unit #cols vector of the largest
/// variance, up to sign. Subspace iteration on a block of b = min(#cols, 8) vectors from a fixed
/// start, the top Ritz vector taken after each pass, until it turns by less than about 1e-5
/// radians between passes or after 100 passes. When the top variances are nearly equal the
/// result is a unit vector of their span.
inline Eigen::VectorXd first_principal_component(const matrix_view<const void>& m, const Eigen::VectorXd& mean,
                                                 int threads) {
  const Index d = m.cols(), b = std::min<Index>(d, 8);
  Eigen::MatrixXd start(d, b);
  for (Index c = 0; c < d; ++c)
    for (Index j = 0; j < b; ++j) start(c, j) = uniform(0x9c4ULL, std::uint64_t(c * b + j)) - 0.5;
  Eigen::MatrixXd v = orthonormalised(start);
  Eigen::VectorXd top = v.col(0);
  constexpr int max_passes = 100;
  for (int pass = 0; pass < max_passes; ++pass) {
    const Eigen::MatrixXd w = centred_gram_times(m, mean, v, threads);
    Eigen::MatrixXd h = v.transpose().lazyProduct(w);
    h = (0.5 * (h + h.transpose())).eval();
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(h);
    if (!(eigen.eigenvalues().maxCoeff() > 0)) break;  // every row is the mean: no direction to find
    const Eigen::MatrixXd rotation = eigen.eigenvectors().rowwise().reverse();  // largest first
    const Eigen::VectorXd ritz = v.lazyProduct(rotation.col(0));
    const bool settled = pass > 0 && 1.0 - std::abs(ritz.dot(top)) < 5e-11;
    top = ritz;
    if (settled) break;
    v = orthonormalised(w.lazyProduct(rotation));
  }
  const double norm = top.norm();
  return norm > 0 ? Eigen::VectorXd(top / norm) : top;
}

}  // namespace clp::detail::undertrained
