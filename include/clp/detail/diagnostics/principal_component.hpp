// SPDX-License-Identifier: MIT
#pragma once

// Internal: the under-trained screen's passes that summarise a matrix, and its first principal
// component. The first pass takes each row's norm, the mean row, the rows' projections on fixed
// random directions (the cluster search's hashes) and, from the same projections, the sketch
// C^T C Omega of the centred rows C when the component is known to be needed (else a pass of its
// own makes it later). The component comes from that sketch by a randomised range finder with
// subspace iteration (Halko, Martinsson & Tropp 2011, algorithms 4.4 and 5.1): a
// fixed number of further passes, each C^T C V for the current basis V, each followed by a
// Rayleigh-Ritz step, and never a #cols by #cols matrix. A fixed number of passes is what a
// threshold needs: where one direction dominates, the passes converge on it many times over;
// where the top variances are close, any unit vector of their span removes about as much of
// the rows, and that is what the passes give. The small products outside a pass are coefficient
// loops (lazyProduct), which no library parallelises, so that the component is the same for
// any thread count.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/diagnostics/row_passes.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/splitmix64.hpp>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace clp::detail::undertrained {

using row_major_floats = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The random directions of the first pass when the cluster search runs: its hash tables'.
inline constexpr Index cluster_directions = 32;
/// Of those, the ones the range finder starts from (the first ones), and the basis the power
/// passes carry: the sketch's leading directions (at most #cols), oversampled two to one.
inline constexpr Index sketch_directions = 16;
inline constexpr Index range_basis = 8;
/// Passes of subspace iteration after the sketch.
inline constexpr int power_passes = 3;

/// What the first pass learns of a matrix.
struct row_statistics {
  std::vector<double> norms;       ///< #rows: each row's Euclidean norm; NaN or inf for a non-finite row
  Eigen::VectorXd mean;            ///< #cols: the mean row
  std::vector<float> projections;  ///< #rows by `directions`, row-major, when kept: each row against random_directions
  Index directions = 0;
  Eigen::MatrixXd sketch;  ///< #cols by sketch_directions: C^T C times the first of random_directions, C centred
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

/// A worker's own part of a pass: its sums over the slot it is reading, in double, and the
/// float products of its chunk, each made once, so that no chunk allocates.
struct pass_worker {
  Eigen::VectorXd vector_sum;  ///< #cols (the first pass's row sum) or b (a power pass's column sums)
  Eigen::MatrixXd matrix_sum;  ///< #cols by b: X^T Y over the slot
  row_major_floats projected;  ///< a chunk's Y, chunk rows by b
  Eigen::MatrixXf product;     ///< a chunk's X^T Y, #cols by b

  pass_worker(Index vector, Index rows, Index cols)
      : vector_sum(Eigen::VectorXd::Zero(vector)), matrix_sum(Eigen::MatrixXd::Zero(rows, cols)) {}
  /// Adds the slot's sums to the totals and starts the next slot from zero.
  void add_to(Eigen::VectorXd& vector_total, Eigen::MatrixXd& matrix_total) {
    vector_total += vector_sum;
    matrix_total += matrix_sum;
    vector_sum.setZero();
    matrix_sum.setZero();
  }
};

/// One pass: the norms, the mean, and the rows' projections on `directions` random directions,
/// kept when `keep_projections`; when `sketch`, also the sketch on the first sketch_directions
/// of them, Omega, summed from the raw rows, X^T (X Omega) - n mean (mean^T Omega), so that no row
/// is changed or copied.
inline row_statistics measure_rows(const matrix_view<const void>& m, Index directions, bool keep_projections,
                                   bool sketch, int threads) {
  const Index n = m.rows(), d = m.cols();
  const Index columns = sketch ? std::min(directions, sketch_directions) : 0;
  row_statistics s;
  s.norms.resize(static_cast<std::size_t>(n));
  s.directions = directions;
  if (keep_projections) s.projections.resize(static_cast<std::size_t>(n * directions));
  s.mean = Eigen::VectorXd::Zero(d);
  s.sketch = Eigen::MatrixXd::Zero(d, columns);
  const row_major_floats g = random_directions(d, directions);
  std::vector<pass_worker> workers(static_cast<std::size_t>(resolve_threads(threads)), pass_worker(d, d, columns));
  for_each_chunk_summed(
      m, threads,
      [&](Index, int w, const row_chunk& chunk) {
        pass_worker& worker = workers[static_cast<std::size_t>(w)];
        for (Index i = 0; i < chunk.count; ++i)
          s.norms[static_cast<std::size_t>(chunk.first + i)] =
              std::sqrt(add_row(chunk.row(i), d, worker.vector_sum.data()));
        if (!keep_projections && columns == 0) return;
        const auto rows = chunk.matrix();
        worker.projected.noalias() = rows * g;
        if (columns > 0) {
          worker.product.noalias() = rows.transpose() * worker.projected.leftCols(columns);
          worker.matrix_sum += worker.product.cast<double>();
        }
        if (keep_projections)
          Eigen::Map<row_major_floats>(s.projections.data() + chunk.first * directions, chunk.count, directions) =
              worker.projected;
      },
      [&](Index, int w) { workers[static_cast<std::size_t>(w)].add_to(s.mean, s.sketch); });
  if (n > 0) s.mean /= double(n);
  const Eigen::RowVectorXd mean_along = s.mean.transpose().lazyProduct(g.leftCols(columns).cast<double>());
  s.sketch -= double(n) * s.mean.lazyProduct(mean_along);
  return s;
}

/// One pass: C^T C v for the centred rows C = X - 1 mean^T of m, as X^T Y - mean (1^T Y) with
/// Y = X v - 1 (mean^T v).
/// @param[in] v  #cols by b
inline Eigen::MatrixXd centred_gram_times(const matrix_view<const void>& m, const Eigen::VectorXd& mean,
                                          const Eigen::MatrixXd& v, int threads) {
  const Index d = m.cols(), b = v.cols();
  const Eigen::MatrixXf vf = v.cast<float>();
  const Eigen::RowVectorXf mean_along = mean.transpose().lazyProduct(v).cast<float>();
  Eigen::VectorXd column_sum = Eigen::VectorXd::Zero(b);
  Eigen::MatrixXd total = Eigen::MatrixXd::Zero(d, b);
  std::vector<pass_worker> workers(static_cast<std::size_t>(resolve_threads(threads)), pass_worker(b, d, b));
  for_each_chunk_summed(
      m, threads,
      [&](Index, int w, const row_chunk& chunk) {
        pass_worker& worker = workers[static_cast<std::size_t>(w)];
        const auto rows = chunk.matrix();
        worker.projected.noalias() = rows * vf;
        worker.projected.rowwise() -= mean_along;
        worker.product.noalias() = rows.transpose() * worker.projected;
        worker.matrix_sum += worker.product.cast<double>();
        worker.vector_sum += worker.projected.cast<double>().colwise().sum().transpose();
      },
      [&](Index, int w) { workers[static_cast<std::size_t>(w)].add_to(column_sum, total); });
  return total - mean.lazyProduct(column_sum.transpose());
}

/// The sketch C^T C Omega of the centred rows of m in a pass of its own (measure_rows makes it
/// in the first pass when it is known to be needed then), Omega the first sketch_directions of
/// random_directions.
inline Eigen::MatrixXd sketch_of(const matrix_view<const void>& m, const Eigen::VectorXd& mean, int threads) {
  const Index columns = std::min(m.cols(), sketch_directions);
  return centred_gram_times(m, mean, random_directions(m.cols(), sketch_directions).leftCols(columns).cast<double>(),
                            threads);
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

/// The eigenvectors of the symmetric part of the small matrix h, largest eigenvalue first.
inline Eigen::MatrixXd eigenvectors_largest_first(const Eigen::MatrixXd& h) {
  const Eigen::MatrixXd symmetric = 0.5 * (h + h.transpose());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(symmetric);
  return eigen.eigenvectors().rowwise().reverse();
}

/// The first principal component of the centred rows C, from the first pass's sketch
/// (C^T C Omega) and power_passes passes of subspace iteration. Use: basis() is what the next
/// pass multiplies (centred_gram_times), absorb() takes what it gave, direction() is the
/// component once every pass is absorbed.
class range_finder {
 public:
  /// The starting basis: the `range_basis` leading left singular vectors of the sketch (from
  /// the eigenvectors of the sketch's small Gram matrix in an orthonormal basis of its columns).
  explicit range_finder(const Eigen::MatrixXd& sketch) {
    const Eigen::MatrixXd q = orthonormalised(sketch);
    const Eigen::MatrixXd coefficients = q.transpose().lazyProduct(sketch);
    const Eigen::MatrixXd leading = eigenvectors_largest_first(coefficients.lazyProduct(coefficients.transpose()));
    const Index b = std::min<Index>({range_basis, sketch.rows(), sketch.cols()});
    basis_ = orthonormalised(q.lazyProduct(leading.leftCols(b)));
    direction_ = basis_.col(0);
  }

  const Eigen::MatrixXd& basis() const { return basis_; }

  /// Given w = C^T C basis(): the top Ritz vector of the basis becomes the direction, and the
  /// basis moves to w's Ritz rotation, orthonormalised.
  void absorb(const Eigen::MatrixXd& w) {
    const Eigen::MatrixXd h = basis_.transpose().lazyProduct(w);
    if (!(h.diagonal().maxCoeff() > 0)) return;  // every row is the mean: no direction to find
    const Eigen::MatrixXd rotation = eigenvectors_largest_first(h);
    direction_ = basis_.lazyProduct(rotation.col(0));
    basis_ = orthonormalised(w.lazyProduct(rotation));
  }

  /// The unit component (zero when the sketch held nothing: every row the mean).
  Eigen::VectorXd direction() const {
    const double norm = direction_.norm();
    return norm > 0 ? Eigen::VectorXd(direction_ / norm) : direction_;
  }

 private:
  Eigen::MatrixXd basis_;
  Eigen::VectorXd direction_;
};

}  // namespace clp::detail::undertrained
