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
#include <clp/parallel.hpp>
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
static_assert(cluster_directions == cluster_tables * projections_per_table);

/// The fullest cell of each table among the `eligible` rows (ids ascending), those of two rows
/// or more; ties go to the cell whose hash is lower. `radius` sets the cell width. Directions and
/// tables are independent tasks on `threads` workers; the cells come in table order.
inline std::vector<std::vector<Index>> fullest_cells(const row_statistics& s, const std::vector<Index>& eligible,
                                                     double radius, int threads) {
  const Index k_total = s.directions;
  const auto projection = [&](std::size_t i, Index k) {
    return double(s.projections[static_cast<std::size_t>(eligible[i] * k_total + k)]);
  };
  std::vector<double> widths(static_cast<std::size_t>(k_total)), offsets(static_cast<std::size_t>(k_total));
  const int workers = resolve_threads(threads);
  std::vector<std::vector<double>> values(static_cast<std::size_t>(workers));  // each worker's, reused
  parallel_for(k_total, workers, [&](Index k, int worker) {
    std::vector<double>& v = values[static_cast<std::size_t>(worker)];
    v.resize(eligible.size());
    for (std::size_t i = 0; i < eligible.size(); ++i) v[i] = projection(i, k);
    const double sigma = robust_spread::in_place(v).sigma;
    widths[static_cast<std::size_t>(k)] = sigma > 0 ? 2 * radius * sigma : 1.0;
    offsets[static_cast<std::size_t>(k)] = uniform(0xce11ULL, std::uint64_t(k));
  });
  values.clear();
  const Index tables = (k_total + projections_per_table - 1) / projections_per_table;
  std::vector<std::vector<Index>> fullest(static_cast<std::size_t>(tables));
  std::vector<std::vector<std::pair<std::uint64_t, Index>>> keys(static_cast<std::size_t>(workers));
  parallel_for(tables, workers, [&](Index t, int worker) {
    std::vector<std::pair<std::uint64_t, Index>>& key_of = keys[static_cast<std::size_t>(worker)];
    key_of.resize(eligible.size());
    for (std::size_t i = 0; i < eligible.size(); ++i) {
      std::uint64_t key = splitmix64(std::uint64_t(t));
      for (Index k = t * projections_per_table; k < std::min(k_total, (t + 1) * projections_per_table); ++k) {
        const auto at = static_cast<std::size_t>(k);
        const double cell = std::floor(projection(i, k) / widths[at] + offsets[at]);
        key = splitmix64(key ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(cell)));
      }
      key_of[i] = {key, eligible[i]};
    }
    std::sort(key_of.begin(), key_of.end());
    std::size_t best_begin = 0, best_size = 0;
    for (std::size_t begin = 0, end = 0; begin < key_of.size(); begin = end) {
      for (end = begin + 1; end < key_of.size() && key_of[end].first == key_of[begin].first;) ++end;
      if (end - begin > best_size) best_begin = begin, best_size = end - begin;
    }
    if (best_size < 2) return;
    for (std::size_t i = best_begin; i < best_begin + best_size; ++i)
      fullest[static_cast<std::size_t>(t)].push_back(key_of[i].second);
  });
  std::vector<std::vector<Index>> cells;
  for (std::vector<Index>& cell : fullest)
    if (!cell.empty()) cells.push_back(std::move(cell));
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

/// One pass: every row's squared distance to each row of `centres`, #rows by #centres, row-major.
inline std::vector<double> squared_distances_to(const matrix_view<const void>& m, const Eigen::MatrixXd& centres,
                                                int threads) {
  const Index q = centres.rows();
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows_of_centres = centres;
  std::vector<double> distances(static_cast<std::size_t>(m.rows() * q));
  for_each_chunk(m, threads, [&](Index, const row_chunk& chunk) {
    for (Index i = 0; i < chunk.count; ++i)
      squared_distances(chunk.row(i), rows_of_centres.data(), q, chunk.cols, distances.data() + (chunk.first + i) * q);
  });
  return distances;
}

/// The search for the largest group of near-identical rows among the eligible ones, in two
/// passes over the rows. The seeds' centres and the mean row are measured first, which sets
/// the distance limit and each seed's members; then the centres of those members, whose members
/// are the groups. Use: while centres() has rows, absorb() every row's squared distances to them
/// (squared_distances_to); then group().
class cluster_search {
 public:
  /// The seeds from the first pass's projections.
  /// @param[in] eligible  the rows that may join a group, ascending
  cluster_search(const matrix_view<const void>& m, const row_statistics& s, std::vector<Index> eligible, double radius,
                 Index min_rows, int threads)
      : m_(m), eligible_(std::move(eligible)), radius_(radius), min_rows_(min_rows) {
    const std::vector<std::vector<Index>> cells = fullest_cells(s, eligible_, radius, threads);
    const Index q = static_cast<Index>(cells.size());
    if (q == 0) return;
    centres_.resize(q + 1, m.cols());
    for (Index j = 0; j < q; ++j) centres_.row(j) = mean_of_rows(m, cells[static_cast<std::size_t>(j)]).transpose();
    centres_.row(q) = s.mean.transpose();
  }

  /// The centres the next pass measures every row's distance to; none when the search is over.
  const Eigen::MatrixXd& centres() const { return centres_; }

  /// Every row's squared distance to each of centres(), #rows by #centres, row-major.
  void absorb(const std::vector<double>& distances) {
    if (centres_.rows() == 0) return;
    if (!measured_seeds_) {
      const Index q = centres_.rows() - 1;  // the last centre is the mean row
      std::vector<double> from_mean(static_cast<std::size_t>(m_.rows()));
      for (Index i = 0; i < m_.rows(); ++i)
        from_mean[static_cast<std::size_t>(i)] = std::sqrt(distances[static_cast<std::size_t>(i * (q + 1) + q)]);
      limit_ = std::pow(radius_ * median(std::move(from_mean)), 2);
      const std::vector<std::vector<Index>> members = members_within(distances, q + 1, q, eligible_, limit_);
      centres_.conservativeResize(q, Eigen::NoChange);
      for (Index j = 0; j < q; ++j)
        if (!members[static_cast<std::size_t>(j)].empty())
          centres_.row(j) = mean_of_rows(m_, members[static_cast<std::size_t>(j)]).transpose();
      measured_seeds_ = true;
      return;
    }
    const Index q = centres_.rows();
    const std::vector<std::vector<Index>> members = members_within(distances, q, q, eligible_, limit_);
    std::size_t best = 0;
    for (std::size_t j = 1; j < members.size(); ++j)
      if (members[j].size() > members[best].size()) best = j;
    if (static_cast<Index>(members[best].size()) >= min_rows_) group_ = members[best];
    centres_.resize(0, m_.cols());
  }

  /// The rows of the largest group (ascending): the members of the refined seed with the most
  /// members, the first seed on a tie; empty when no seed has min_rows members.
  const std::vector<Index>& group() const { return group_; }

 private:
  matrix_view<const void> m_;
  std::vector<Index> eligible_;
  double radius_ = 0;
  Index min_rows_ = 0;
  Eigen::MatrixXd centres_;
  bool measured_seeds_ = false;
  double limit_ = 0;
  std::vector<Index> group_;
};

}  // namespace clp::detail::undertrained
