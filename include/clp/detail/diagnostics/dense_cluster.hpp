// SPDX-License-Identifier: MIT
#pragma once

// Internal: the under-trained screen's search for the largest group of near-identical rows,
// the reference it compares every row with when the caller names no unused rows. Seeds come
// from hashing: each of four tables cuts eight random projections of the rows into cells
// 2 * radius times each projection's robust spread wide (at a random offset), and its fullest
// cell is a seed. A group within `radius` of its mean spreads about radius times a
// projection's spread along it (the projections are random), so it mostly shares a cell, while
// rows far apart rarely share one in all eight projections. Each seed's mean is then refined
// twice against the exact distances: its members are the eligible rows within `radius` times
// the median distance of a row from the mean row, and its centre their mean.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/diagnostics/principal_component.hpp>
#include <clp/detail/diagnostics/row_passes.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/splitmix64.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace clp::detail::undertrained {

/// The hash tables of the seed search, and the projections each one reads.
inline constexpr Index cluster_tables = 4;
inline constexpr Index projections_per_table = 8;
inline constexpr Index cluster_directions = cluster_tables * projections_per_table;

/// The fullest cell of each table among the `eligible` rows (ids ascending), those of two rows
/// or more; ties go to the cell whose hash is lower. `radius` sets the cell width.
inline std::vector<std::vector<Index>> fullest_cells(const row_statistics& s, const std::vector<Index>& eligible,
                                                     double radius) {
  const Index k_total = s.directions;
  std::vector<double> widths(static_cast<std::size_t>(k_total));
  std::vector<double> values(eligible.size());
  for (Index k = 0; k < k_total; ++k) {
    for (std::size_t i = 0; i < eligible.size(); ++i)
      values[i] = s.projections[static_cast<std::size_t>(eligible[i] * k_total + k)];
    const double sigma = robust_spread::of(values).sigma;
    widths[static_cast<std::size_t>(k)] = sigma > 0 ? 2 * radius * sigma : 1.0;
  }
  std::vector<std::vector<Index>> cells;
  std::vector<std::pair<std::uint64_t, Index>> keys(eligible.size());
  for (Index t = 0; t * projections_per_table < k_total; ++t) {
    for (std::size_t i = 0; i < eligible.size(); ++i) {
      std::uint64_t key = splitmix64(std::uint64_t(t));
      for (Index k = t * projections_per_table; k < (t + 1) * projections_per_table; ++k) {
        const double x = s.projections[static_cast<std::size_t>(eligible[i] * k_total + k)];
        const double cell = std::floor(x / widths[static_cast<std::size_t>(k)] + uniform(0xce11ULL, std::uint64_t(k)));
        key = splitmix64(key ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(cell)));
      }
      keys[i] = {key, eligible[i]};
    }
    std::sort(keys.begin(), keys.end());
    std::size_t best_begin = 0, best_size = 0;
    for (std::size_t begin = 0, end = 0; begin < keys.size(); begin = end) {
      for (end = begin + 1; end < keys.size() && keys[end].first == keys[begin].first;) ++end;
      if (end - begin > best_size) best_begin = begin, best_size = end - begin;
    }
    if (best_size < 2) continue;
    cells.emplace_back();
    for (std::size_t i = best_begin; i < best_begin + best_size; ++i) cells.back().push_back(keys[i].second);
  }
  return cells;
}

/// The mean of rows `ids` of m (not empty), in double.
inline Eigen::VectorXd mean_of_rows(const matrix_view<const void>& m, const std::vector<Index>& ids) {
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(m.cols());
  Eigen::VectorXf row(m.cols());
  for (Index id : ids) {
    read_row_as_float(m, id, row.data());
    sum += row.cast<double>();
  }
  return sum / double(ids.size());
}

/// One pass: the squared distance of every row of m from each centre, #rows by #centres,
/// row-major.
/// @param[in] centres  #centres by #cols
inline std::vector<double> squared_distances(const matrix_view<const void>& m, const Eigen::MatrixXd& centres,
                                             int threads) {
  const Index q = centres.rows();
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows_of_centres = centres;
  std::vector<double> distances(static_cast<std::size_t>(m.rows() * q));
  for_each_chunk(m, threads, [&](Index, const row_chunk& chunk) {
    for (Index i = 0; i < chunk.count; ++i)
      for (Index j = 0; j < q; ++j)
        distances[static_cast<std::size_t>((chunk.first + i) * q + j)] =
            squared_distance(chunk.row(i), rows_of_centres.row(j).data(), chunk.cols);
  });
  return distances;
}

/// For each of the first `centres` columns of `distances` (#rows by `stride`, row-major), the
/// eligible rows within sqrt(limit), ascending.
inline std::vector<std::vector<Index>> members_within(const std::vector<double>& distances, Index stride, Index centres,
                                                      const std::vector<Index>& eligible, double limit) {
  std::vector<std::vector<Index>> members(static_cast<std::size_t>(centres));
  for (Index id : eligible)
    for (Index j = 0; j < centres; ++j)
      if (distances[static_cast<std::size_t>(id * stride + j)] <= limit)
        members[static_cast<std::size_t>(j)].push_back(id);
  return members;
}

/// The rows of the largest group of near-identical rows among `eligible` (ascending): the
/// members of the refined seed with the most members, the first seed on a tie; empty when no
/// seed has min_rows members.
inline std::vector<Index> densest_cluster(const matrix_view<const void>& m, const row_statistics& s,
                                          const std::vector<Index>& eligible, double radius, Index min_rows,
                                          int threads) {
  const std::vector<std::vector<Index>> cells = fullest_cells(s, eligible, radius);
  const Index q = static_cast<Index>(cells.size());
  if (q == 0) return {};
  Eigen::MatrixXd centres(q + 1, m.cols());
  for (Index j = 0; j < q; ++j) centres.row(j) = mean_of_rows(m, cells[static_cast<std::size_t>(j)]).transpose();
  centres.row(q) = s.mean.transpose();
  std::vector<double> distances = squared_distances(m, centres, threads);
  std::vector<double> from_mean(static_cast<std::size_t>(m.rows()));
  for (Index i = 0; i < m.rows(); ++i)
    from_mean[static_cast<std::size_t>(i)] = std::sqrt(distances[static_cast<std::size_t>(i * (q + 1) + q)]);
  const double limit = std::pow(radius * median(std::move(from_mean)), 2);
  std::vector<std::vector<Index>> members = members_within(distances, q + 1, q, eligible, limit);
  centres.conservativeResize(q, Eigen::NoChange);
  for (Index j = 0; j < q; ++j)
    if (!members[static_cast<std::size_t>(j)].empty())
      centres.row(j) = mean_of_rows(m, members[static_cast<std::size_t>(j)]).transpose();
  members = members_within(squared_distances(m, centres, threads), q, q, eligible, limit);
  std::size_t best = 0;
  for (std::size_t j = 1; j < members.size(); ++j)
    if (members[j].size() > members[best].size()) best = j;
  if (static_cast<Index>(members[best].size()) < min_rows) return {};
  return members[best];
}

}  // namespace clp::detail::undertrained
