// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// Embedding synthesis (eq. 2-3): overlapping target rows copy their source row; every
/// missing target row t becomes e_t = sum_j w_tj a_j over the overlapping tokens j, with
/// weights from a policy (<clp/weights.hpp>) applied to the cosines cos(h_t, h_j) of the
/// helper model's embeddings.
///
/// How it runs: missing rows are processed in blocks of m rows. A block's normalised helper
/// rows are multiplied by the normalised overlapping helper rows, panel by panel, giving the
/// m x |overlap| cosine block; the policy turns each row into weights; the weights times the
/// overlapping source rows (panel by panel again, or only the chosen rows for a sparse policy)
/// give the block's output rows. The |missing| x |overlap| matrix never exists, and no input
/// is ever copied whole: panels of at most panel_rows rows are gathered (and converted to
/// float32) from the caller's matrices as needed. Blocks run in parallel; each output row is
/// computed by one thread in a fixed order whatever the thread count and tile budget, so the
/// output is bit-identical for any of them.

#include <clp/detail/erased_view.hpp>
#include <clp/detail/parallel.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/vocabulary.hpp>
#include <clp/weights.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace clp {

struct synthesis_options {
  /// Worker threads; 0 means all hardware threads.
  int threads = 0;
  /// Working memory for all threads together, in bytes. Each thread needs about
  /// 4 * (m * (|overlap| + d_helper + d_source) + panel_rows * max(d_helper, d_source)) bytes
  /// for a block of m rows; m is the largest multiple of 48 that fits (48 at least).
  std::size_t tile_bytes = std::size_t(64) << 20;
  /// Only target rows in [first_row, last_row) are written (copied or synthesised); -1 means
  /// up to the last row. Lets callers split one transfer across processes or machines.
  index first_row = 0;
  index last_row = -1;
  /// Optional: called as blocks finish with (rows synthesised so far, rows to synthesise).
  /// Calls come from the worker threads, one at a time.
  std::function<void(index done, index total)> progress;
};

/// What a synthesis did. Row counts refer to the rows written (the row range).
struct synthesis_report {
  index overlap = 0;           ///< |Vs ∩ Vt|
  index copied_rows = 0;       ///< overlapping rows copied (eq. 2)
  index synthesized_rows = 0;  ///< missing rows synthesised (eq. 3)
  /// Rows set to the mean of the overlapping source rows because their helper row has zero
  /// norm or the policy could not weight them (see each policy). Their sum is degenerate_rows.
  index zero_norm_rows = 0;
  index fallback_rows = 0;
  index degenerate_rows() const { return zero_norm_rows + fallback_rows; }
  /// Rows whose largest cosine is not positive: the helper sees no overlapping token as similar.
  index no_positive_rows = 0;
  /// Rows whose weights' absolute values add up to more than 2: a small cosine sum that
  /// inflates the output row (only paper_weights can produce them).
  index inflated_rows = 0;
  /// The effective number of neighbours 1 / sum_j w_tj^2 over the synthesised rows.
  double effective_neighbours_min = 0, effective_neighbours_median = 0, effective_neighbours_max = 0;
  /// Largest and median norm of the synthesised rows of the first output, and the median norm
  /// of the overlapping rows of the first source, to spot inflated rows at a glance.
  double max_output_row_norm = 0, median_output_row_norm = 0, median_source_row_norm = 0;
};

namespace detail {

/// Rows of the overlap processed per product; fixed so that the order of every sum, and so
/// the output, does not depend on the tile budget.
inline constexpr index panel_rows = 512;
/// Block heights are multiples of this (the row blocking of Eigen's float kernels on AVX-512,
/// AVX and SSE divides it), so every row goes through the same kernel path.
inline constexpr index block_quantum = 48;

using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using matrix_map = Eigen::Map<row_major_matrix>;
using strided_map = Eigen::Map<row_major_matrix, 0, Eigen::OuterStride<>>;

struct source_output {
  input_view source;
  output_view output;
};

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

inline double row_norm(const float* row, index n) {
  double sum = 0;
  for (index c = 0; c < n; ++c) sum += double(row[c]) * row[c];
  return std::sqrt(sum);
}

inline void require_finite_rows(const input_view& v, const char* name, const std::vector<index>& rows,
                                const char* context) {
  for (index r : rows)
    if (index c = first_non_finite(v, r); c >= 0)
      fail(std::string(context) + ": '" + name + "' row " + std::to_string(r) + " column " + std::to_string(c) +
           " is NaN or infinite");
}

inline void check_sorted_ids(const std::vector<index>& ids, index rows, const char* what, const char* matrix,
                             const char* context) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows)
      fail(std::string(context) + ": " + what + " id " + std::to_string(ids[i]) + " is outside the " +
           std::to_string(rows) + " rows of '" + matrix + "'");
    if (i > 0 && ids[i] <= ids[i - 1])
      fail(std::string(context) + ": " + what + " ids are not strictly ascending at position " + std::to_string(i));
  }
}

/// Per-row outcome flags collected by the blocks and summed afterwards in row order.
enum row_flag : std::uint8_t { zero_norm = 1, fallback = 2, no_positive = 4, inflated = 8 };

template <class Policy>
synthesis_report synthesize(const input_view& helper, const vocabulary_overlap& overlap,
                            const std::vector<source_output>& pairs, const Policy& policy,
                            const synthesis_options& options, const char* context) {
  // --- validation: every caller-caused problem is reported before any output is written
  const index n_overlap = overlap.size();
  if (n_overlap == 0) fail(std::string(context) + ": the overlap is empty");
  if (overlap.source_ids.size() != overlap.target_ids.size())
    fail(std::string(context) + ": overlap has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
         std::to_string(overlap.source_ids.size()) + " source ids");
  if (helper.cols < 1) fail(std::string(context) + ": 'helper' has no columns");
  check_sorted_ids(overlap.target_ids, helper.rows, "overlap target", "helper", context);
  check_sorted_ids(overlap.missing_ids, helper.rows, "missing target", "helper", context);
  for (const auto& [source, output] : pairs) {
    if (output.rows != helper.rows)
      fail(std::string(context) + ": 'output' has " + std::to_string(output.rows) + " rows but 'helper' has " +
           std::to_string(helper.rows));
    if (output.cols != source.cols)
      fail(std::string(context) + ": 'output' has " + std::to_string(output.cols) + " columns but 'source' has " +
           std::to_string(source.cols));
    for (index s : overlap.source_ids)
      if (s < 0 || s >= source.rows)
        fail(std::string(context) + ": overlap source id " + std::to_string(s) + " is outside the " +
             std::to_string(source.rows) + " rows of 'source'");
  }
  const index first = options.first_row;
  const index last = options.last_row < 0 ? helper.rows : options.last_row;
  if (first < 0 || first > last || last > helper.rows)
    fail(std::string(context) + ": row range [" + std::to_string(first) + ", " + std::to_string(last) +
         ") is outside the " + std::to_string(helper.rows) + " target rows");

  auto in_range = [&](const std::vector<index>& ids) {
    return std::pair(std::lower_bound(ids.begin(), ids.end(), first) - ids.begin(),
                     std::lower_bound(ids.begin(), ids.end(), last) - ids.begin());
  };
  const auto [copy_begin, copy_end] = in_range(overlap.target_ids);
  const auto [miss_begin, miss_end] = in_range(overlap.missing_ids);
  const std::vector<index> missing(overlap.missing_ids.begin() + miss_begin, overlap.missing_ids.begin() + miss_end);
  const index n_missing = static_cast<index>(missing.size());

  require_finite_rows(helper, "helper", overlap.target_ids, context);
  require_finite_rows(helper, "helper", missing, context);
  for (const auto& pair : pairs) require_finite_rows(pair.source, "source", overlap.source_ids, context);

  // --- what every block shares: overlap helper norms, and per source the mean of its
  // overlapping rows (the fallback row)
  const index d_helper = helper.cols;
  index d_source = 0;
  for (const auto& pair : pairs) d_source = std::max(d_source, pair.source.cols);
  std::vector<float> row(static_cast<std::size_t>(std::max(d_helper, d_source)));
  std::vector<float> inverse_norm(static_cast<std::size_t>(n_overlap));
  for (index j = 0; j < n_overlap; ++j) {
    load_row(helper, overlap.target_ids[j], row.data());
    const double norm = row_norm(row.data(), d_helper);
    inverse_norm[j] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
  }
  synthesis_report report;
  report.overlap = n_overlap;
  std::vector<std::vector<float>> means;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const input_view& source = pairs[p].source;
    std::vector<double> sum(static_cast<std::size_t>(source.cols), 0.0);
    std::vector<double> norms;
    for (index s : overlap.source_ids) {
      load_row(source, s, row.data());
      for (index c = 0; c < source.cols; ++c) sum[c] += row[c];
      if (p == 0) norms.push_back(row_norm(row.data(), source.cols));
    }
    std::vector<float> mean(sum.size());
    for (std::size_t c = 0; c < sum.size(); ++c) mean[c] = static_cast<float>(sum[c] / double(n_overlap));
    means.push_back(std::move(mean));
    if (p == 0) report.median_source_row_norm = median(std::move(norms));
  }

  // --- copy the overlapping rows (eq. 2)
  for (const auto& [source, output] : pairs)
    for (index i = copy_begin; i < copy_end; ++i)
      copy_row(source, overlap.source_ids[i], output, overlap.target_ids[i], row.data());
  report.copied_rows = copy_end - copy_begin;
  report.synthesized_rows = n_missing;
  if (n_missing == 0) return report;

  // --- block sizes from the tile budget
  const int threads = resolve_threads(options.threads);
  const index panel_width = std::max(d_helper, d_source);
  const index k_max = [&] {
    if constexpr (Policy::is_sparse) return policy.max_neighbours(n_overlap);
    else return index(0);
  }();
  const index floats_per_row = n_overlap + d_helper + d_source + 2 * k_max;
  const index budget_floats = static_cast<index>(options.tile_bytes / sizeof(float) / std::size_t(threads));
  index block = (budget_floats - panel_rows * panel_width) / floats_per_row / block_quantum * block_quantum;
  block = std::max(block, block_quantum);
  block = std::min(block, (n_missing + block_quantum - 1) / block_quantum * block_quantum);
  const index n_blocks = (n_missing + block - 1) / block;

  std::vector<std::uint8_t> flags(static_cast<std::size_t>(n_missing), 0);
  std::vector<double> effective(static_cast<std::size_t>(n_missing), 0.0);
  std::vector<double> output_norm(static_cast<std::size_t>(n_missing), 0.0);

  struct scratch {
    std::vector<float> queries, cosines, panel, accumulator;
    std::vector<index> neighbour, count;
    std::vector<float> weight;
  };
  std::vector<scratch> workers(static_cast<std::size_t>(threads));
  std::mutex progress_mutex;
  index rows_done = 0;

  parallel_for(n_blocks, threads, [&](index b, int worker) {
    scratch& s = workers[static_cast<std::size_t>(worker)];
    s.queries.resize(std::size_t(block * d_helper));
    s.cosines.resize(std::size_t(block * n_overlap));
    s.panel.resize(std::size_t(panel_rows * panel_width));
    s.accumulator.resize(std::size_t(block * d_source));
    s.neighbour.resize(std::size_t(block * k_max));
    s.weight.resize(std::size_t(block * k_max));
    s.count.resize(std::size_t(block));

    const index row0 = b * block;
    const index m = std::min(block, n_missing - row0);

    // Normalised helper rows of the block; rows past m stay zero (padding to the block height).
    matrix_map queries(s.queries.data(), block, d_helper);
    queries.setZero();
    for (index i = 0; i < m; ++i) {
      float* q = s.queries.data() + i * d_helper;
      load_row(helper, missing[row0 + i], q);
      const double norm = row_norm(q, d_helper);
      if (norm > 0) {
        const float inv = static_cast<float>(1.0 / norm);
        for (index c = 0; c < d_helper; ++c) q[c] *= inv;
      } else {
        flags[row0 + i] |= zero_norm;
      }
    }

    // Cosines, panel by panel of the overlap.
    for (index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const index pn = std::min(panel_rows, n_overlap - p0);
      gather_rows(helper, overlap.target_ids.data() + p0, pn, s.panel.data());
      for (index j = 0; j < pn; ++j) {
        float* h = s.panel.data() + j * d_helper;
        for (index c = 0; c < d_helper; ++c) h[c] *= inverse_norm[p0 + j];
      }
      strided_map(s.cosines.data() + p0, block, pn, Eigen::OuterStride<>(n_overlap)).noalias() =
          queries * matrix_map(s.panel.data(), pn, d_helper).transpose();
    }

    // Weights, one row at a time.
    for (index i = 0; i < m; ++i) {
      float* c = s.cosines.data() + i * n_overlap;
      std::uint8_t& f = flags[row0 + i];
      if (*std::max_element(c, c + n_overlap) <= 0) f |= no_positive;
      double sum_abs = 0, sum_sq = 0;
      if constexpr (Policy::is_sparse) {
        index* nb = s.neighbour.data() + i * k_max;
        float* w = s.weight.data() + i * k_max;
        const index count = (f & zero_norm) ? 0 : policy(c, n_overlap, nb, w);
        if (count == 0 && !(f & zero_norm)) f |= fallback;
        s.count[i] = count;
        for (index k = 0; k < count; ++k) {
          sum_abs += std::abs(w[k]);
          sum_sq += double(w[k]) * w[k];
        }
      } else {
        const bool ok = !(f & zero_norm) && policy(c, n_overlap);
        if (!ok) {
          if (!(f & zero_norm)) f |= fallback;
          std::fill(c, c + n_overlap, 0.0f);
        }
        for (index j = 0; j < n_overlap; ++j) {
          sum_abs += std::abs(c[j]);
          sum_sq += double(c[j]) * c[j];
        }
      }
      if (f & (zero_norm | fallback)) effective[row0 + i] = double(n_overlap);
      else effective[row0 + i] = sum_sq > 0 ? 1.0 / sum_sq : 0.0;
      if (sum_abs > 2) f |= inflated;
    }

    // Weighted sums of the overlapping source rows, for each (source, output) pair.
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const auto& [source, output] = pairs[p];
      const index d = source.cols;
      matrix_map accumulator(s.accumulator.data(), block, d);
      if constexpr (Policy::is_sparse) {
        for (index i = 0; i < m; ++i) {
          float* out = s.accumulator.data() + i * d;
          std::fill(out, out + d, 0.0f);
          const index* nb = s.neighbour.data() + i * k_max;
          const float* w = s.weight.data() + i * k_max;
          for (index k = 0; k < s.count[i]; ++k) {
            load_row(source, overlap.source_ids[nb[k]], s.panel.data());
            for (index c = 0; c < d; ++c) out[c] += w[k] * s.panel[c];
          }
        }
      } else {
        for (index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
          const index pn = std::min(panel_rows, n_overlap - p0);
          gather_rows(source, overlap.source_ids.data() + p0, pn, s.panel.data());
          const auto weights = strided_map(s.cosines.data() + p0, block, pn, Eigen::OuterStride<>(n_overlap));
          const auto values = matrix_map(s.panel.data(), pn, d);
          if (p0 == 0) accumulator.noalias() = weights * values;
          else accumulator.noalias() += weights * values;
        }
      }
      for (index i = 0; i < m; ++i) {
        float* out = s.accumulator.data() + i * d;
        if (flags[row0 + i] & (zero_norm | fallback)) std::copy(means[p].begin(), means[p].end(), out);
        store_row(output, missing[row0 + i], out);
        if (p == 0) output_norm[row0 + i] = row_norm(out, d);
      }
    }
    if (options.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      rows_done += m;
      options.progress(rows_done, n_missing);
    }
  });

  for (std::uint8_t f : flags) {
    report.zero_norm_rows += (f & zero_norm) != 0;
    report.fallback_rows += (f & fallback) != 0;
    report.no_positive_rows += (f & no_positive) != 0;
    report.inflated_rows += (f & inflated) != 0;
  }
  report.effective_neighbours_min = *std::min_element(effective.begin(), effective.end());
  report.effective_neighbours_max = *std::max_element(effective.begin(), effective.end());
  report.effective_neighbours_median = median(effective);
  report.max_output_row_norm = *std::max_element(output_norm.begin(), output_norm.end());
  report.median_output_row_norm = median(output_norm);
  return report;
}

}  // namespace detail

/// Writes target rows of `output`: overlapping rows copied from `source` (eq. 2), missing rows
/// synthesised from it with `policy` (eq. 3-4).
///
/// @param[in]  helper   #target_rows by d_helper: the helper (small target-language) model's
///                      input embeddings
/// @param[in]  overlap  from intersect_vocabularies, with target ids < #target_rows and
///                      source ids < #source_rows
/// @param[in]  source   #source_rows by d_source: the large source model's embeddings (or
///                      output head)
/// @param[out] output   #target_rows by d_source, caller-owned; rows outside the overlap and
///                      missing lists, or outside the row range, are not touched
/// @param[in]  policy   weighting policy (weights.hpp); paper_weights is eq. 4 as published
/// @param[in]  options  threads, tile budget, row range
/// Matrices may be of any type make_view accepts, with elements float, double, Eigen::half or
/// Eigen::bfloat16; computation is float32.
/// @throws clp::error on mismatched shapes, ids outside a matrix, NaN or infinite inputs
template <class Policy = paper_weights, class Helper, class Source, class Output>
synthesis_report synthesize_rows(const Helper& helper, const vocabulary_overlap& overlap, const Source& source,
                                 Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  const std::vector<detail::source_output> pairs{
      {detail::input_view::from(make_view(source)), detail::output_view::from(make_view(output))}};
  return detail::synthesize(detail::input_view::from(make_view(helper)), overlap, pairs, policy, options,
                            "clp::synthesize_rows");
}

/// synthesize_rows with a policy chosen at run time.
template <class Helper, class Source, class Output>
synthesis_report synthesize_rows(const Helper& helper, const vocabulary_overlap& overlap, const Source& source,
                                 Output&& output, const weighting& policy, const synthesis_options& options = {}) {
  return std::visit(
      [&](const auto& p) { return synthesize_rows(helper, overlap, source, std::forward<Output>(output), p, options); },
      policy);
}

}  // namespace clp
