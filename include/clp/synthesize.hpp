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
/// give the block's output rows. A policy whose weights are its cosines times a row scale
/// (paper_weights) skips that second product: the block's normalised helper rows times
/// P = sum_j n_j a_j^T (d_helper x d_source, computed once) give the same rows up to the scale.
/// The |missing| x |overlap| matrix never exists, and no input
/// is ever copied whole: panels of at most panel_rows rows are gathered (and converted to
/// float32) from the caller's matrices as needed. Blocks run in parallel; each output row is
/// computed by one thread in a fixed order whatever the thread count and tile budget, so the
/// output is bit-identical for any of them.

#include <clp/detail/blocking.hpp>
#include <clp/detail/erased_view.hpp>
#include <clp/detail/parallel.hpp>
#include <clp/detail/reductions.hpp>
#include <clp/detail/scratch_buffer.hpp>
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
  /// Working memory for all threads together, in bytes. A policy that scales cosines
  /// (paper_weights) first takes 4 * d_helper * d_source bytes per source for P from it. When
  /// the overlap panels, 4 * |overlap| * (d_helper + d_source) bytes (d_helper alone for a
  /// sparse policy or one that scales cosines), fit in half of the rest they
  /// are gathered once and shared; the rest is split between the threads, each needing about
  /// 4 * m * (|overlap| + d_helper + d_source) bytes for a block of m rows (plus one panel of
  /// panel_rows rows when the panels are not shared); m is a multiple of 48, 48 at least, and
  /// at most 480 when the panels are shared.
  /// The default, 256 MiB, is the smallest measured to keep re-gathering the panels below the
  /// noise at the BLOOM-7B1 shape (README, "Speed and memory").
  std::size_t tile_bytes = std::size_t(256) << 20;
  /// Only target rows in [first_row, last_row) are written (copied or synthesised); -1 means
  /// up to the last row. Lets callers split one transfer across processes or machines.
  Index first_row = 0;
  Index last_row = -1;
  /// Optional: called as blocks finish with (rows synthesised so far, rows to synthesise).
  /// Calls come from the worker threads, one at a time.
  std::function<void(Index done, Index total)> progress;
};

/// What a synthesis did. Row counts refer to the rows written (the row range).
struct synthesis_report {
  Index overlap = 0;           ///< |Vs ∩ Vt|
  Index copied_rows = 0;       ///< overlapping rows copied (eq. 2)
  Index synthesized_rows = 0;  ///< missing rows synthesised (eq. 3)
  /// Rows set to the mean of the overlapping source rows because their helper row has zero
  /// norm or the policy could not weight them (see each policy). Their sum is degenerate_rows.
  Index zero_norm_rows = 0;
  Index fallback_rows = 0;
  Index degenerate_rows() const { return zero_norm_rows + fallback_rows; }
  /// Rows whose largest cosine is not positive: the helper sees no overlapping token as similar.
  Index no_positive_rows = 0;
  /// Rows whose weights' absolute values add up to more than 2: a small cosine sum that
  /// inflates the output row (only paper_weights can produce them).
  Index inflated_rows = 0;
  /// The effective number of neighbours 1 / sum_j w_tj^2 over the synthesised rows.
  double effective_neighbours_min = 0, effective_neighbours_median = 0, effective_neighbours_max = 0;
  /// Largest and median norm of the synthesised rows of the first output, and the median norm
  /// of the overlapping rows of the first source, to spot inflated rows at a glance.
  double max_output_row_norm = 0, median_output_row_norm = 0, median_source_row_norm = 0;
};

namespace detail {

struct source_output {
  input_view source;
  output_view output;
  const char* source_name = "source";  // for messages
  const char* output_name = "output";
};

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

/// Throws naming the first (lowest listed) row of v among `rows` with a NaN or infinite
/// element. The rows are screened in parallel, in chunks.
inline void require_finite_rows(const input_view& v, const char* name, const std::vector<Index>& rows, int threads,
                                const char* context) {
  constexpr Index chunk = 1024;
  const Index n = static_cast<Index>(rows.size());
  std::vector<Index> first_bad((n + chunk - 1) / chunk, -1);  // per chunk: position in rows
  parallel_for(Index(first_bad.size()), threads, [&](Index k, int) {
    for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i)
      if (first_non_finite(v, rows[i]) >= 0) {
        first_bad[k] = i;
        return;
      }
  });
  for (Index i : first_bad)
    if (i >= 0) {
      const Index r = rows[i];
      fail(std::string(context) + ": '" + name + "' row " + std::to_string(r) + " column " +
           std::to_string(first_non_finite(v, r)) + " is NaN or infinite");
    }
}

inline void check_sorted_ids(const std::vector<Index>& ids, Index rows, const char* what, const char* matrix,
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
  const Index n_overlap = overlap.size();
  if (n_overlap == 0) fail(std::string(context) + ": the overlap is empty");
  if (overlap.source_ids.size() != overlap.target_ids.size())
    fail(std::string(context) + ": overlap has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
         std::to_string(overlap.source_ids.size()) + " source ids");
  if (helper.cols < 1) fail(std::string(context) + ": 'helper' has no columns");
  check_sorted_ids(overlap.target_ids, helper.rows, "overlap target", "helper", context);
  check_sorted_ids(overlap.missing_ids, helper.rows, "missing target", "helper", context);
  for (const auto& [source, output, source_name, output_name] : pairs) {
    if (output.rows != helper.rows)
      fail(std::string(context) + ": '" + output_name + "' has " + std::to_string(output.rows) +
           " rows but 'helper' has " + std::to_string(helper.rows));
    if (output.cols != source.cols)
      fail(std::string(context) + ": '" + output_name + "' has " + std::to_string(output.cols) + " columns but '" +
           source_name + "' has " + std::to_string(source.cols));
    for (Index s : overlap.source_ids)
      if (s < 0 || s >= source.rows)
        fail(std::string(context) + ": overlap source id " + std::to_string(s) + " is outside the " +
             std::to_string(source.rows) + " rows of '" + source_name + "'");
  }
  const Index first = options.first_row;
  const Index last = options.last_row < 0 ? helper.rows : options.last_row;
  if (first < 0 || first > last || last > helper.rows)
    fail(std::string(context) + ": row range [" + std::to_string(first) + ", " + std::to_string(last) +
         ") is outside the " + std::to_string(helper.rows) + " target rows");

  auto in_range = [&](const std::vector<Index>& ids) {
    return std::pair(std::lower_bound(ids.begin(), ids.end(), first) - ids.begin(),
                     std::lower_bound(ids.begin(), ids.end(), last) - ids.begin());
  };
  const auto [copy_begin, copy_end] = in_range(overlap.target_ids);
  const auto [miss_begin, miss_end] = in_range(overlap.missing_ids);
  const std::vector<Index> missing(overlap.missing_ids.begin() + miss_begin, overlap.missing_ids.begin() + miss_end);
  const Index n_missing = static_cast<Index>(missing.size());

  const int threads = resolve_threads(options.threads);
  require_finite_rows(helper, "helper", overlap.target_ids, threads, context);
  require_finite_rows(helper, "helper", missing, threads, context);
  for (const auto& pair : pairs)
    require_finite_rows(pair.source, pair.source_name, overlap.source_ids, threads, context);

  // --- one parallel pass over the overlap, panel by panel: the helper rows' norms, per
  // source the sum of its overlapping rows (for their mean, the fallback row) and the norms
  // of the first source's rows, and the copy of the overlapping rows in the range (eq. 2).
  // Panel sums are added in panel order, so the mean does not depend on the thread count.
  const Index d_helper = helper.cols;
  Index d_source = 0;
  for (const auto& pair : pairs) d_source = std::max(d_source, pair.source.cols);
  const Index n_panels = (n_overlap + panel_rows - 1) / panel_rows;
  std::vector<float> inverse_norm(static_cast<std::size_t>(n_overlap));
  std::vector<double> source_norm(static_cast<std::size_t>(n_overlap));
  std::vector<std::vector<double>> panel_sums(pairs.size());
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panel_sums[p].assign(static_cast<std::size_t>(n_panels * pairs[p].source.cols), 0.0);
  std::vector<std::vector<float>> rows(static_cast<std::size_t>(threads),
                                       std::vector<float>(static_cast<std::size_t>(std::max(d_helper, d_source))));
  parallel_for(n_panels, threads, [&](Index panel, int worker) {
    float* const row = rows[static_cast<std::size_t>(worker)].data();
    const Index p0 = panel * panel_rows, p1 = std::min(n_overlap, p0 + panel_rows);
    for (Index j = p0; j < p1; ++j) {
      load_row(helper, overlap.target_ids[j], row);
      const double norm = row_norm(row, d_helper);
      inverse_norm[j] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    }
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const auto& [source, output, source_name, output_name] = pairs[p];
      double* const sum = panel_sums[p].data() + panel * source.cols;
      for (Index j = p0; j < p1; ++j) {
        load_row(source, overlap.source_ids[j], row);
        for (Index c = 0; c < source.cols; ++c) sum[c] += row[c];
        if (p == 0) source_norm[j] = row_norm(row, source.cols);
        if (j >= copy_begin && j < copy_end) copy_row(source, overlap.source_ids[j], output, overlap.target_ids[j], row);
      }
    }
  });
  synthesis_report report;
  report.overlap = n_overlap;
  report.median_source_row_norm = median(std::move(source_norm));
  std::vector<std::vector<float>> means;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const Index cols = pairs[p].source.cols;
    std::vector<float> mean(static_cast<std::size_t>(cols));
    for (Index c = 0; c < cols; ++c) {
      double sum = 0;
      for (Index panel = 0; panel < n_panels; ++panel) sum += panel_sums[p][panel * cols + c];
      mean[c] = static_cast<float>(sum / double(n_overlap));
    }
    means.push_back(std::move(mean));
  }
  report.copied_rows = copy_end - copy_begin;
  report.synthesized_rows = n_missing;
  if (n_missing == 0) return report;

  // --- blocking. The overlap panels (normalised helper rows, and for a dense policy the
  // source rows, as float32) are gathered once and shared by every block when they fit in half
  // the budget; otherwise each block gathers them panel by panel into its own scratch. Both
  // ways feed the products the same panels, so they give the same bits.
  const Index k_max = [&] {
    if constexpr (Policy::is_sparse)
      return policy.max_neighbours(n_overlap);
    else
      return Index(0);
  }();
  // A policy whose weights are its cosines times a row scale never needs the weights times
  // the overlapping source rows: with q_t and n_j the normalised helper rows,
  //     sum_j cos(h_t, h_j) a_j = sum_j (q_t . n_j) a_j = q_t^T P,   P = sum_j n_j a_j^T,
  // and P (d_helper x d_source, per source) is computed once. The second product shrinks from
  // |overlap| to d_helper terms per output element; the cosines are still formed, for the
  // policy's guard and the report.
  constexpr bool projected = !Policy::is_sparse && scales_cosines<Policy>::value;
  Index resident_width = d_helper;
  if constexpr (!Policy::is_sparse && !projected)
    for (const auto& pair : pairs) resident_width += pair.source.cols;
  Index projection_floats = 0;
  if constexpr (projected)
    for (const auto& pair : pairs) projection_floats += d_helper * pair.source.cols;
  const Index budget =
      std::max<Index>(0, static_cast<Index>(options.tile_bytes / sizeof(float)) - projection_floats);
  const bool resident = n_overlap * resident_width <= budget / 2;
  const Index panel_width = resident ? 0 : std::max(d_helper, d_source);
  const Index per_thread =
      ((resident ? budget - n_overlap * resident_width : budget) / threads) - panel_rows * panel_width;
  const Index floats_per_row = n_overlap + d_helper + d_source + 2 * k_max;
  const auto round_up = [](Index n, Index step) { return (n + step - 1) / step * step; };
  Index block = std::max(block_quantum, per_thread / floats_per_row / block_quantum * block_quantum);
  // With the panels shared nothing is re-gathered per block, and taller blocks only add
  // first-touch page faults and cache misses on the cosine block: cap them.
  if (resident) block = std::min(block, max_shared_block);
  // Balance: a multiple of `threads` blocks of equal height, so no worker idles at the end.
  Index n_blocks = (n_missing + block - 1) / block;
  n_blocks = std::min(round_up(n_blocks, threads), (n_missing + block_quantum - 1) / block_quantum);
  block = round_up((n_missing + n_blocks - 1) / n_blocks, block_quantum);
  n_blocks = (n_missing + block - 1) / block;

  // Panel p covers overlap entries [p * panel_rows, ...): the helper's rows normalised, and the
  // rows of each source.
  auto gather_helper_panel = [&](Index p0, Index pn, float* into) {
    gather_rows(helper, overlap.target_ids.data() + p0, pn, into);
    for (Index j = 0; j < pn; ++j) {
      float* h = into + j * d_helper;
      for (Index c = 0; c < d_helper; ++c) h[c] *= inverse_norm[p0 + j];
    }
  };
  scratch_buffer<float> resident_helper;
  std::vector<scratch_buffer<float>> resident_source(pairs.size());
  if (resident) {
    resident_helper.reserve(std::size_t(n_overlap * d_helper));
    if constexpr (!Policy::is_sparse && !projected)
      for (std::size_t p = 0; p < pairs.size(); ++p)
        resident_source[p].reserve(std::size_t(n_overlap * pairs[p].source.cols));
    parallel_for(n_panels, threads, [&](Index panel, int) {
      const Index p0 = panel * panel_rows, pn = std::min(panel_rows, n_overlap - p0);
      gather_helper_panel(p0, pn, resident_helper.data() + p0 * d_helper);
      if constexpr (!Policy::is_sparse && !projected)
        for (std::size_t p = 0; p < pairs.size(); ++p)
          gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn,
                      resident_source[p].data() + p0 * pairs[p].source.cols);
    });
  }

  // P = sum_j n_j a_j^T per source, panel by panel in a fixed order; each panel's product is
  // split into column chunks of fixed width, one task each, so the bits of P do not depend on
  // the thread count.
  std::vector<scratch_buffer<float>> projection(pairs.size());
  if constexpr (projected) {
    constexpr Index chunk_cols = 256;
    scratch_buffer<float> helper_panel, source_panel;
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const input_view& source = pairs[p].source;
      const Index d = source.cols;
      float* const into = projection[p].reserve(std::size_t(d_helper * d));
      for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
        const Index pn = std::min(panel_rows, n_overlap - p0);
        const float* h = resident_helper.data() + p0 * d_helper;
        if (!resident) {
          gather_helper_panel(p0, pn, helper_panel.reserve(std::size_t(panel_rows * d_helper)));
          h = helper_panel.data();
        }
        float* const a = source_panel.reserve(std::size_t(panel_rows * d));
        gather_rows(source, overlap.source_ids.data() + p0, pn, a);
        parallel_for((d + chunk_cols - 1) / chunk_cols, threads, [&](Index chunk, int) {
          const Index c0 = chunk * chunk_cols, cn = std::min(chunk_cols, d - c0);
          strided_map part(into + c0, d_helper, cn, Eigen::OuterStride<>(d));
          const auto normalised = Eigen::Map<const row_major_matrix>(h, pn, d_helper);
          const auto values = Eigen::Map<const row_major_matrix, 0, Eigen::OuterStride<>>(a + c0, pn, cn,
                                                                                           Eigen::OuterStride<>(d));
          if (p0 == 0)
            part.noalias() = normalised.transpose() * values;
          else
            part.noalias() += normalised.transpose() * values;
        });
      }
    }
  }

  std::vector<std::uint8_t> flags(static_cast<std::size_t>(n_missing), 0);
  std::vector<double> effective(static_cast<std::size_t>(n_missing), 0.0);
  std::vector<double> output_norm(static_cast<std::size_t>(n_missing), 0.0);

  struct scratch {
    scratch_buffer<float> queries, cosines, panel, accumulator, weight, source_row, scale;
    scratch_buffer<Index> neighbour, count;
  };
  std::vector<scratch> workers(static_cast<std::size_t>(threads));
  std::mutex progress_mutex;
  Index rows_done = 0;

  parallel_for(n_blocks, threads, [&](Index b, int worker) {
    scratch& s = workers[static_cast<std::size_t>(worker)];
    float* const cosines = s.cosines.reserve(std::size_t(block * n_overlap));
    float* const accumulator = s.accumulator.reserve(std::size_t(block * d_source));
    float* const panel = s.panel.reserve(std::size_t(panel_rows * panel_width));
    Index* const neighbours = s.neighbour.reserve(std::size_t(block * k_max));
    float* const weights = s.weight.reserve(std::size_t(block * k_max));
    Index* const counts = s.count.reserve(std::size_t(block));
    float* const source_row = s.source_row.reserve(std::size_t(d_source));
    float* const scale = s.scale.reserve(std::size_t(block));

    const Index row0 = b * block;
    const Index m = std::min(block, n_missing - row0);

    // Normalised helper rows of the block; rows past m are zero (padding to the block height).
    matrix_map queries(s.queries.reserve(std::size_t(block * d_helper)), block, d_helper);
    queries.bottomRows(block - m).setZero();
    for (Index i = 0; i < m; ++i) {
      float* q = queries.data() + i * d_helper;
      load_row(helper, missing[row0 + i], q);
      const double norm = row_norm(q, d_helper);
      if (norm > 0) {
        const float inv = static_cast<float>(1.0 / norm);
        for (Index c = 0; c < d_helper; ++c) q[c] *= inv;
      } else {
        flags[row0 + i] |= zero_norm;
      }
    }

    // Cosines, panel by panel of the overlap.
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* h = resident_helper.data() + p0 * d_helper;
      if (!resident) gather_helper_panel(p0, pn, panel), h = panel;
      strided_map(cosines + p0, block, pn, Eigen::OuterStride<>(n_overlap)).noalias() =
          queries * Eigen::Map<const row_major_matrix>(h, pn, d_helper).transpose();
    }

    // Weights, one row at a time. A dense policy leaves a row of weights up to a factor,
    // scale[i], applied below to the (shorter) output row.
    for (Index i = 0; i < m; ++i) {
      float* c = cosines + i * n_overlap;
      std::uint8_t& f = flags[row0 + i];
      double sum_abs = 0, sum_squares = 0;
      if constexpr (Policy::is_sparse) {
        if (max_of(c, n_overlap) <= 0) f |= no_positive;
        Index* nb = neighbours + i * k_max;
        float* w = weights + i * k_max;
        counts[i] = (f & zero_norm) ? 0 : policy(c, n_overlap, nb, w);
        if (counts[i] == 0 && !(f & zero_norm)) f |= fallback;
        const cosine_statistics s = statistics_of(w, counts[i]);
        sum_abs = s.sum_abs, sum_squares = s.sum_squares;
        scale[i] = 1.0f;
      } else {
        const cosine_statistics s = statistics_of(c, n_overlap);
        if (s.max <= 0) f |= no_positive;
        dense_weights w;
        if (!(f & zero_norm)) w = policy(c, n_overlap, s);
        if (!(w.scale != 0 && std::isfinite(w.scale)) && !(f & zero_norm)) f |= fallback;
        sum_abs = w.sum_abs, sum_squares = w.sum_squares;
        scale[i] = static_cast<float>(w.scale);
      }
      if (f & (zero_norm | fallback))
        effective[row0 + i] = double(n_overlap);
      else
        effective[row0 + i] = sum_squares > 0 ? 1.0 / sum_squares : 0.0;
      if (sum_abs > 2) f |= inflated;
    }
    // Padding rows carry no weight (their cosines are 0, as their query rows are). The
    // products below still run over the rows that fall back; their results are replaced.

    // Weighted sums of the overlapping source rows, for each (source, output) pair.
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const input_view& source = pairs[p].source;
      const output_view& output = pairs[p].output;
      const Index d = source.cols;
      if constexpr (Policy::is_sparse) {
        for (Index i = 0; i < m; ++i) {
          float* out = accumulator + i * d;
          std::fill(out, out + d, 0.0f);
          const Index* nb = neighbours + i * k_max;
          const float* w = weights + i * k_max;
          for (Index k = 0; k < counts[i]; ++k) {
            load_row(source, overlap.source_ids[nb[k]], source_row);
            for (Index c = 0; c < d; ++c) out[c] += w[k] * source_row[c];
          }
        }
      } else if constexpr (projected) {
        matrix_map(accumulator, block, d).noalias() =
            queries * Eigen::Map<const row_major_matrix>(projection[p].data(), d_helper, d);
      } else {
        matrix_map result(accumulator, block, d);
        for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
          const Index pn = std::min(panel_rows, n_overlap - p0);
          const float* a = resident_source[p].data() + p0 * d;
          if (!resident) gather_rows(source, overlap.source_ids.data() + p0, pn, panel), a = panel;
          const auto w = strided_map(cosines + p0, block, pn, Eigen::OuterStride<>(n_overlap));
          const auto values = Eigen::Map<const row_major_matrix>(a, pn, d);
          if (p0 == 0)
            result.noalias() = w * values;
          else
            result.noalias() += w * values;
        }
      }
      for (Index i = 0; i < m; ++i) {
        float* out = accumulator + i * d;
        if (flags[row0 + i] & (zero_norm | fallback))
          std::copy(means[p].begin(), means[p].end(), out);
        else if (scale[i] != 1.0f)
          for (Index c = 0; c < d; ++c) out[c] *= scale[i];
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
