// SPDX-License-Identifier: MIT
// What the diagnostics tests share: random embeddings, and the brute-force double oracle of
// every row's neighbours.
#pragma once

#include "support/error_of.hpp"

#include <clp/adapters/eigen.hpp>
#include <clp/error.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

namespace knn_fixtures {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline row_major random_matrix(clp::Index rows, clp::Index cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  row_major m(rows, cols);
  for (clp::Index r = 0; r < rows; ++r)
    for (clp::Index c = 0; c < cols; ++c) m(r, c) = normal(rng);
  return m;
}

/// A second embedding of the same tokens: a random linear map of a plus noise, so the
/// neighbourhoods partly survive.
inline row_major related_matrix(const row_major& a, clp::Index cols, unsigned seed) {
  const row_major map = random_matrix(a.cols(), cols, seed);
  return a * map + 2.0f * random_matrix(a.rows(), cols, seed + 1);
}

/// The oracle: the full cosine matrix in double, every row's candidates sorted by (cosine
/// descending, id ascending), self excluded.
struct oracle {
  clp::Index rows = 0;
  std::vector<std::vector<clp::Index>> order;  // rows - 1 ids per row, best first
  std::vector<std::vector<double>> cosine;     // cosine[v][u]

  explicit oracle(const row_major& x) : rows(x.rows()) {
    const Eigen::MatrixXd d = x.cast<double>();
    Eigen::MatrixXd unit = d;
    for (clp::Index r = 0; r < rows; ++r) {
      const double norm = d.row(r).norm();
      unit.row(r) = norm > 0 ? Eigen::RowVectorXd(d.row(r) / norm) : Eigen::RowVectorXd::Zero(d.cols());
    }
    const Eigen::MatrixXd c = unit * unit.transpose();
    for (clp::Index v = 0; v < rows; ++v) {
      std::vector<double> row(static_cast<std::size_t>(rows));
      for (clp::Index u = 0; u < rows; ++u) row[u] = c(v, u);
      std::vector<clp::Index> ids;
      for (clp::Index u = 0; u < rows; ++u)
        if (u != v) ids.push_back(u);
      std::sort(ids.begin(), ids.end(),
                [&](clp::Index p, clp::Index q) { return row[p] > row[q] || (row[p] == row[q] && p < q); });
      order.push_back(std::move(ids));
      cosine.push_back(std::move(row));
    }
  }

  /// True when the k-th and (k+1)-th cosines of v are so close that float32 may swap them.
  bool ambiguous(clp::Index v, clp::Index k, double tolerance = 1e-5) const {
    return cosine[v][order[v][k - 1]] - cosine[v][order[v][k]] < tolerance;
  }
};

/// Our neighbours of v agree with the oracle: exactly when the boundary is clear, and
/// otherwise every chosen id is within the tolerance of the oracle's k-th cosine.
inline void check_neighbours(const oracle& o, clp::Index v, const clp::Index* ours, clp::Index k) {
  const double kth = o.cosine[v][o.order[v][k - 1]];
  if (!o.ambiguous(v, k)) {
    for (clp::Index r = 0; r < k; ++r)
      if (ours[r] != o.order[v][r] && std::abs(o.cosine[v][ours[r]] - o.cosine[v][o.order[v][r]]) > 1e-5) {
        FAIL("row " << v << " rank " << r << ": got " << ours[r] << ", oracle " << o.order[v][r]);
      }
    std::vector<clp::Index> a(ours, ours + k), b(o.order[v].begin(), o.order[v].begin() + k);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  } else {
    for (clp::Index r = 0; r < k; ++r) CHECK(o.cosine[v][ours[r]] >= kth - 1e-5);
  }
}

inline std::vector<clp::Index> all_rows(clp::Index n) {
  std::vector<clp::Index> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), clp::Index(0));
  return ids;
}

/// A copy of the Error a call throws, or nullopt (tests/support).
using clp_test::thrown;

using clp_test::error_of;

}  // namespace knn_fixtures
