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
/// overlapping source rows (panel by panel again, or only the chosen rows for a policy that
/// returns neighbours)
/// give the block's output rows. A policy whose weights are its cosines times a row scale
/// (paper_weights) skips that second product: the block's normalised helper rows times
/// P = sum_j n_j a_j^T (d_helper x d_source, computed once) give the same rows up to the scale.
/// The |missing| x |overlap| matrix never exists, and no input
/// is ever copied whole: panels of at most panel_rows rows are gathered (and converted to
/// float32) from the caller's matrices as needed. Blocks run in parallel; each output row is
/// computed by one thread in a fixed order whatever the thread count and tile budget, so the
/// output is bit-identical for any of them.
///
/// The engine below reads top to bottom in the order it runs: validate (shapes, ids, row range,
/// then the NaN screen), scan the overlap (helper norms, source means, the copies of eq. 2),
/// plan the blocks, gather the shared overlap panels (and P), then per block: normalise the
/// queries, form the cosines, weigh each row, combine the weights with the source rows; and
/// finally summarise the per-row outcomes into the report.
///
/// Argument order, the same for every entry point (synthesize_rows, transfer):
/// (source, helper, overlap, output, [untied_head], policy, options). Inputs come before the
/// output; the source comes first because the output is "the source with a new vocabulary"
/// (it has the source's width), and intersect_vocabularies(source, target) already puts the
/// source first.

#include <clp/detail/blocking.hpp>
#include <clp/detail/erased_view.hpp>
#include <clp/parallel.hpp>
#include <clp/detail/plan.hpp>
#include <clp/detail/reductions.hpp>
#include <clp/detail/scratch_buffer.hpp>
#include <clp/detail/validation.hpp>
#include <clp/error.hpp>
#include <clp/execution.hpp>
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
#include <type_traits>
#include <utility>
#include <vector>

namespace clp {

/// Threads and tile budget (execution_options), plus the rows to write and a progress callback.
/// How synthesis spends the tile budget: a policy that scales cosines (paper_weights) first
/// takes 4 * d_helper * d_source bytes per source for P from it. When the overlap panels,
/// 4 * |overlap| * (d_helper + d_source) bytes (d_helper alone for a policy that returns
/// neighbours or one that scales cosines), fit in half of the rest they are gathered once and
/// shared; the rest is split between the threads, each needing about
/// 4 * m * (|overlap| + d_helper + d_source) bytes for a block of m rows (plus one panel of
/// panel_rows rows when the panels are not shared); m is a multiple of 48, 48 at least, and at
/// most 480 when the panels are shared. The default budget (default_tile_bytes, 256 MiB) is the
/// smallest measured to keep re-gathering the panels below the noise at the BLOOM-7B1 shape.
struct synthesis_options : execution_options {
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
  /// Synthesised rows no token names (vocabulary_overlap::unnamed_ids: embedding padding).
  /// They are written like every missing row, but none of the counts and statistics below
  /// include them: a zero padding row is not a weighting failure.
  Index padding_rows = 0;
  /// Rows set to the mean of the overlapping source rows because their helper row has zero
  /// norm or the policy could not weight them (see each policy). Their sum is degenerate_rows.
  Index zero_norm_rows = 0;
  Index fallback_rows = 0;
  Index degenerate_rows() const { return zero_norm_rows + fallback_rows; }
  /// Rows whose largest cosine is not positive: the helper sees no overlapping token as similar.
  Index no_positive_rows = 0;
  /// Rows whose cosine sum is negative, whatever the policy: paper_weights divides by that
  /// sum, as published, so their weights flip sign; guarded_paper_weights falls back on them.
  Index negative_sum_rows = 0;
  /// Rows whose weights' absolute values add up to more than 2: a small cosine sum that
  /// inflates the output row (paper_weights, or guarded_paper_weights with a loose guard).
  Index inflated_rows = 0;
  /// The effective number of neighbours 1 / sum_j w_tj^2 over the synthesised rows (not
  /// padding; a row set to the mean counts as |overlap|).
  double effective_neighbours_min = 0, effective_neighbours_median = 0, effective_neighbours_max = 0;
  /// Largest and median norm of the synthesised rows (not padding) of the first output, and the median norm
  /// of the overlapping rows of the first source, to spot inflated rows at a glance.
  double max_output_row_norm = 0, median_output_row_norm = 0, median_source_row_norm = 0;
};

/// An untied output head, named: the source model's output head and the output's, passed right
/// after `output`. The head gets the same treatment as the embedding, with the same weights
/// (computed once) applied to the source head's rows. It only refers to the two matrices:
/// build it in the call, `clp::untied_head{source_head, output_head}`.
/// @param source_head  #source_rows by d_head: the source model's output head
/// @param output_head  #target_rows by d_head, written like `output`
template <class SourceHead, class OutputHead>
struct untied_head {
  const SourceHead& source_head;
  OutputHead&& output_head;
};
template <class SourceHead, class OutputHead>
untied_head(const SourceHead&, OutputHead&&) -> untied_head<SourceHead, OutputHead>;

/// One more matrix with a row (or a value) per token, transferred with the synthesis' weights
/// (computed once for all pairs): an untied head, its tied copies, a per-token output bias
/// as a #vocab by 1 matrix. Every pair has its own element type and width. It only refers to
/// the two matrices, which must outlive the call.
///     clp::matrix_pair("lm_head", source_head, output_head)
/// @param name    for messages ("'lm_head output' has 5000 rows but 'helper' has 5120")
/// @param source  #source_rows by d_pair, anything make_view accepts
/// @param output  #target_rows by d_pair, written like `output` (overlapping rows copied,
///                missing rows synthesised with the same weights)
class matrix_pair {
 public:
  template <class Source, class Output>
  matrix_pair(std::string name, const Source& source, Output&& output)
      : name_(std::move(name)),
        source_(detail::input_view::from(make_view(source))),
        output_(detail::output_view::from(make_view(output))) {}

  const std::string& name() const { return name_; }
  const detail::input_view& source() const { return source_; }
  const detail::output_view& output() const { return output_; }

 private:
  std::string name_;
  detail::input_view source_;
  detail::output_view output_;
};

/// Any number of matrix pairs, passed where an untied_head would be: the list form of it.
///     clp::transfer(source, helper, overlap, output,
///                   clp::matrix_pairs{{"lm_head", head, new_head}, {"bias", bias, new_bias}}, policy);
using matrix_pairs = std::vector<matrix_pair>;

namespace detail {

/// One (source, output) pair of the synthesis: the embedding, then an untied head or the
/// matrix_pairs, if any.
struct source_output {
  input_view source;
  output_view output;
  std::string source_name = "source";  // for messages
  std::string output_name = "output";
};

// ---------------------------------------------------------------------------------------------
// Validate: every caller-caused problem is reported before any output is written.

inline void validate_shapes(const std::vector<source_output>& pairs, const input_view& helper,
                            const vocabulary_overlap& overlap, const char* context) {
  if (overlap.size() == 0) fail(std::string(context) + ": the overlap is empty");
  if (overlap.source_ids.size() != overlap.target_ids.size())
    fail(std::string(context) + ": overlap has " + std::to_string(overlap.target_ids.size()) + " target ids but " +
         std::to_string(overlap.source_ids.size()) + " source ids");
  if (helper.cols < 1) fail(std::string(context) + ": 'helper' has no columns");
  check_sorted_ids(overlap.target_ids, helper.rows, "overlap target", "helper", context);
  check_sorted_ids(overlap.missing_ids, helper.rows, "missing target", "helper", context);
  check_sorted_ids(overlap.unnamed_ids, helper.rows, "unnamed target", "helper", context);
  if (!std::includes(overlap.missing_ids.begin(), overlap.missing_ids.end(), overlap.unnamed_ids.begin(),
                     overlap.unnamed_ids.end()))
    fail(std::string(context) + ": overlap's unnamed ids are not all missing ids");
  for (const source_output& pair : pairs) {
    if (pair.output.rows != helper.rows)
      fail(std::string(context) + ": '" + pair.output_name + "' has " + std::to_string(pair.output.rows) +
           " rows but 'helper' has " + std::to_string(helper.rows));
    if (pair.output.cols != pair.source.cols)
      fail(std::string(context) + ": '" + pair.output_name + "' has " + std::to_string(pair.output.cols) +
           " columns but '" + pair.source_name + "' has " + std::to_string(pair.source.cols));
    check_ids(overlap.source_ids, pair.source.rows, "overlap source", pair.source_name.c_str(), context);
  }
}

/// The target rows to write: the overlap entries [copy_begin, copy_end) to copy and the
/// missing ids to synthesise, those inside [first_row, last_row).
struct rows_to_write {
  Index copy_begin = 0, copy_end = 0;
  std::vector<Index> missing;
  std::vector<bool> padding;  ///< parallel to missing: no token names the row
};

inline rows_to_write select_rows(const vocabulary_overlap& overlap, const synthesis_options& options, Index target_rows,
                                 const char* context) {
  const Index first = options.first_row;
  const Index last = options.last_row < 0 ? target_rows : options.last_row;
  if (first < 0 || first > last || last > target_rows)
    fail(std::string(context) + ": row range [" + std::to_string(first) + ", " + std::to_string(last) +
         ") is outside the " + std::to_string(target_rows) + " target rows");
  const auto position = [](const std::vector<Index>& ids, Index row) {
    return Index(std::lower_bound(ids.begin(), ids.end(), row) - ids.begin());
  };
  rows_to_write rows;
  rows.copy_begin = position(overlap.target_ids, first);
  rows.copy_end = position(overlap.target_ids, last);
  rows.missing.assign(overlap.missing_ids.begin() + position(overlap.missing_ids, first),
                      overlap.missing_ids.begin() + position(overlap.missing_ids, last));
  rows.padding.resize(rows.missing.size());
  auto unnamed = overlap.unnamed_ids.begin();
  for (std::size_t i = 0; i < rows.missing.size(); ++i) {
    unnamed = std::lower_bound(unnamed, overlap.unnamed_ids.end(), rows.missing[i]);
    rows.padding[i] = unnamed != overlap.unnamed_ids.end() && *unnamed == rows.missing[i];
  }
  return rows;
}

inline void screen_inputs(const std::vector<source_output>& pairs, const input_view& helper,
                          const vocabulary_overlap& overlap, const std::vector<Index>& missing, int threads,
                          const char* context) {
  require_finite_rows(helper, "helper", overlap.target_ids, threads, context);
  require_finite_rows(helper, "helper", missing, threads, context);
  for (const source_output& pair : pairs)
    require_finite_rows(pair.source, pair.source_name.c_str(), overlap.source_ids, threads, context);
}

// ---------------------------------------------------------------------------------------------
// Scan the overlap: one parallel pass, panel by panel, over the overlapping rows.

/// What the rest of the synthesis needs to know about the overlap.
struct overlap_scan {
  std::vector<float> inverse_norm;        ///< 1 / ||helper row|| per overlap entry (0 for a zero row)
  std::vector<std::vector<float>> means;  ///< per source: the mean of its overlapping rows
  double median_source_row_norm = 0;      ///< of the first source's overlapping rows
};

/// The means from per-panel column sums, the panels added in panel order so the mean does not
/// depend on the thread count.
inline std::vector<float> mean_of_panels(const std::vector<double>& panel_sums, Index cols, Index n_panels,
                                         Index n_overlap) {
  std::vector<float> mean(static_cast<std::size_t>(cols));
  for (Index c = 0; c < cols; ++c) {
    double sum = 0;
    for (Index panel = 0; panel < n_panels; ++panel) sum += panel_sums[panel * cols + c];
    mean[c] = static_cast<float>(sum / double(n_overlap));
  }
  return mean;
}

/// The helper rows' inverse norms, per source the mean of its overlapping rows (the fallback
/// row) and the norms of the first source's rows; and, on the way, the copies of the
/// overlapping rows in range (eq. 2).
inline overlap_scan scan_overlap(const std::vector<source_output>& pairs, const input_view& helper,
                                 const vocabulary_overlap& overlap, const rows_to_write& rows, int threads) {
  const Index n_overlap = overlap.size();
  const Index n_panels = ceil_div(n_overlap, panel_rows);
  Index widest = helper.cols;
  for (const source_output& pair : pairs) widest = std::max(widest, pair.source.cols);
  overlap_scan scan;
  scan.inverse_norm.resize(static_cast<std::size_t>(n_overlap));
  std::vector<double> source_norm(static_cast<std::size_t>(n_overlap));
  std::vector<std::vector<double>> panel_sums(pairs.size());
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panel_sums[p].assign(static_cast<std::size_t>(n_panels * pairs[p].source.cols), 0.0);
  std::vector<std::vector<float>> row_buffers(static_cast<std::size_t>(threads),
                                              std::vector<float>(static_cast<std::size_t>(widest)));
  parallel_for(n_panels, threads, [&](Index panel, int worker) {
    float* const row = row_buffers[static_cast<std::size_t>(worker)].data();
    const Index p0 = panel * panel_rows;
    const Index p1 = std::min(n_overlap, p0 + panel_rows);
    for (Index j = p0; j < p1; ++j) {
      load_row(helper, overlap.target_ids[j], row);
      const double norm = row_norm(row, helper.cols);
      scan.inverse_norm[j] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    }
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const source_output& pair = pairs[p];
      double* const sum = panel_sums[p].data() + panel * pair.source.cols;
      for (Index j = p0; j < p1; ++j) {
        load_row(pair.source, overlap.source_ids[j], row);
        for (Index c = 0; c < pair.source.cols; ++c) sum[c] += row[c];
        if (p == 0) source_norm[j] = row_norm(row, pair.source.cols);
        if (j >= rows.copy_begin && j < rows.copy_end)
          copy_row(pair.source, overlap.source_ids[j], pair.output, overlap.target_ids[j], row);
      }
    }
  });
  scan.median_source_row_norm = median(std::move(source_norm));
  for (std::size_t p = 0; p < pairs.size(); ++p)
    scan.means.push_back(mean_of_panels(panel_sums[p], pairs[p].source.cols, n_panels, n_overlap));
  return scan;
}

// ---------------------------------------------------------------------------------------------
// Plan the blocks.

/// How a block's output rows come from its weights, from what the policy declares.
enum class combine_kind {
  neighbours,  ///< the policy returns a neighbour list: read only those source rows
  projected,   ///< the weights are the cosines times a row scale: queries times P
  dense        ///< a dense row of weights: weights times the overlapping source rows
};

template <class Policy>
constexpr combine_kind combine_kind_of() {
  if constexpr (Policy::returns_neighbours)
    return combine_kind::neighbours;
  else if constexpr (scales_cosines<Policy>::value)
    return combine_kind::projected;
  else
    return combine_kind::dense;
}

struct synthesis_plan {
  Index d_helper = 0, d_source = 0;  ///< d_source: the widest source
  Index n_overlap = 0, n_missing = 0;
  Index k_max = 0;       ///< neighbours per row (policies that return neighbours), else 0
  bool pursuit = false;  ///< the policy reconstructs helper rows (omp_weights)
  bool gram = false;     ///< pursuit: Batch-OMP with the overlap's Gram matrix (omp_weights::max_gram_bytes)
  /// The overlap panels are gathered once and shared by every block (else each block gathers
  /// them panel by panel into its own panel of panel_width floats per row).
  bool resident = false;
  Index panel_width = 0;
  block_plan blocks;
};

/// The blocks for a tile budget. The overlap panels (normalised helper rows, and for a dense
/// combine the source rows, as float32) are shared when they fit in half the budget; both ways
/// feed the products the same panels, so they give the same bits.
template <class Policy>
synthesis_plan plan_synthesis(const Policy& policy, const std::vector<source_output>& pairs, Index d_helper,
                              Index n_overlap, Index n_missing, int threads, std::size_t tile_bytes) {
  constexpr combine_kind kind = combine_kind_of<Policy>();
  synthesis_plan plan;
  plan.d_helper = d_helper;
  plan.n_overlap = n_overlap;
  plan.n_missing = n_missing;
  for (const source_output& pair : pairs) plan.d_source = std::max(plan.d_source, pair.source.cols);
  if constexpr (kind == combine_kind::neighbours) plan.k_max = policy.max_neighbours(n_overlap);
  plan.pursuit = reconstructs_helper_rows<Policy>::value;
  if constexpr (reconstructs_helper_rows<Policy>::value)
    plan.gram = double(n_overlap) * double(n_overlap) * sizeof(float) <= double(policy.max_gram_bytes);
  Index resident_width = d_helper;
  Index projection_floats = 0;
  for (const source_output& pair : pairs) {
    if constexpr (kind == combine_kind::dense) resident_width += pair.source.cols;
    if constexpr (kind == combine_kind::projected) projection_floats += d_helper * pair.source.cols;
  }
  const Index budget = std::max<Index>(0, static_cast<Index>(tile_bytes / sizeof(float)) - projection_floats);
  plan.resident = n_overlap * resident_width <= budget / 2;
  plan.panel_width = plan.resident ? 0 : std::max(d_helper, plan.d_source);
  const Index shared = plan.resident ? n_overlap * resident_width : 0;
  const Index per_thread = (budget - shared) / threads - panel_rows * plan.panel_width;
  const Index floats_per_row =
      n_overlap + d_helper + plan.d_source + 2 * plan.k_max + (plan.pursuit ? (plan.gram ? 0 : d_helper) + 1 : 0);
  Index max_rows = per_thread / floats_per_row;
  // With the panels shared nothing is re-gathered per block, and taller blocks only add
  // first-touch page faults and cache misses on the cosine block: cap them.
  if (plan.resident) max_rows = std::min(max_rows, max_shared_block);
  plan.blocks = balance_blocks(n_missing, max_rows, threads);
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Gather the shared overlap panels, and P.

/// Panel p covers overlap entries [p * panel_rows, ...): the helper's rows normalised, and the
/// rows of each source.
inline void gather_helper_panel(const input_view& helper, const vocabulary_overlap& overlap,
                                const std::vector<float>& inverse_norm, Index p0, Index pn, float* into) {
  gather_rows(helper, overlap.target_ids.data() + p0, pn, into);
  for (Index j = 0; j < pn; ++j) {
    float* h = into + j * helper.cols;
    for (Index c = 0; c < helper.cols; ++c) h[c] *= inverse_norm[p0 + j];
  }
}

struct overlap_panels {
  explicit overlap_panels(std::size_t sources) : source(sources), projection(sources) {}
  scratch_buffer<float> helper;                   ///< resident: n_overlap x d_helper, normalised
  std::vector<scratch_buffer<float>> source;      ///< resident, dense combine: per source
  std::vector<scratch_buffer<float>> projection;  ///< projected combine: P per source
  scratch_buffer<float> gram;                     ///< Batch-OMP: n_overlap x n_overlap
};

/// The resident panels, gathered in parallel, panel by panel.
template <combine_kind kind>
void gather_resident_panels(overlap_panels& panels, const std::vector<source_output>& pairs, const input_view& helper,
                            const vocabulary_overlap& overlap, const std::vector<float>& inverse_norm, int threads) {
  const Index n_overlap = overlap.size();
  panels.helper.reserve(std::size_t(n_overlap * helper.cols));
  if constexpr (kind == combine_kind::dense)
    for (std::size_t p = 0; p < pairs.size(); ++p)
      panels.source[p].reserve(std::size_t(n_overlap * pairs[p].source.cols));
  parallel_for(ceil_div(n_overlap, panel_rows), threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    gather_helper_panel(helper, overlap, inverse_norm, p0, pn, panels.helper.data() + p0 * helper.cols);
    if constexpr (kind == combine_kind::dense)
      for (std::size_t p = 0; p < pairs.size(); ++p)
        gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn,
                    panels.source[p].data() + p0 * pairs[p].source.cols);
  });
}

/// A policy whose weights are its cosines times a row scale never needs the weights times
/// the overlapping source rows: with q_t and n_j the normalised helper rows,
///     sum_j cos(h_t, h_j) a_j = sum_j (q_t . n_j) a_j = q_t^T P,   P = sum_j n_j a_j^T,
/// and P (d_helper x d_source, per source) is computed once. The second product shrinks from
/// |overlap| to d_helper terms per output element; the cosines are still formed, for the
/// policy's guard and the report. P is summed panel by panel in a fixed order; each panel's
/// product is split into column chunks of fixed width, one task each, so the bits of P do not
/// depend on the thread count.
inline void compute_projections(overlap_panels& panels, const std::vector<source_output>& pairs,
                                const input_view& helper, const vocabulary_overlap& overlap,
                                const std::vector<float>& inverse_norm, bool resident, int threads) {
  constexpr Index chunk_cols = 256;
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols;
  scratch_buffer<float> helper_panel, source_panel;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const Index d = pairs[p].source.cols;
    float* const into = panels.projection[p].reserve(std::size_t(d_helper * d));
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* h = panels.helper.data() + p0 * d_helper;
      if (!resident) {
        gather_helper_panel(helper, overlap, inverse_norm, p0, pn,
                            helper_panel.reserve(std::size_t(panel_rows * d_helper)));
        h = helper_panel.data();
      }
      float* const a = source_panel.reserve(std::size_t(panel_rows * d));
      gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn, a);
      parallel_for(ceil_div(d, chunk_cols), threads, [&](Index chunk, int) {
        const Index c0 = chunk * chunk_cols;
        const Index cn = std::min(chunk_cols, d - c0);
        strided_map part(into + c0, d_helper, cn, Eigen::OuterStride<>(d));
        const auto normalised = Eigen::Map<const row_major_matrix>(h, pn, d_helper);
        const auto values =
            Eigen::Map<const row_major_matrix, 0, Eigen::OuterStride<>>(a + c0, pn, cn, Eigen::OuterStride<>(d));
        if (p0 == 0)
          part.noalias() = normalised.transpose() * values;
        else
          part.noalias() += normalised.transpose() * values;
      });
    }
  }
}

/// Batch-OMP's Gram matrix G = N N^T of the normalised overlapping helper rows N
/// (n_overlap x n_overlap, float32), one task per panel of its rows, so its bits do not depend
/// on the thread count. N is gathered whole for it when the panels are not resident (it is
/// d_helper / n_overlap of G's size).
inline void compute_gram(overlap_panels& panels, const input_view& helper, const vocabulary_overlap& overlap,
                         const std::vector<float>& inverse_norm, bool resident, int threads) {
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols;
  const Index n_panels = ceil_div(n_overlap, panel_rows);
  scratch_buffer<float> gathered;
  const float* rows = panels.helper.data();
  if (!resident) {
    float* const into = gathered.reserve(std::size_t(n_overlap * d_helper));
    parallel_for(n_panels, threads, [&](Index panel, int) {
      const Index p0 = panel * panel_rows;
      gather_helper_panel(helper, overlap, inverse_norm, p0, std::min(panel_rows, n_overlap - p0),
                          into + p0 * d_helper);
    });
    rows = into;
  }
  float* const gram = panels.gram.reserve(std::size_t(n_overlap * n_overlap));
  const Eigen::Map<const row_major_matrix> atoms(rows, n_overlap, d_helper);
  parallel_for(n_panels, threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    matrix_map(gram + p0 * n_overlap, pn, n_overlap).noalias() = atoms.middleRows(p0, pn) * atoms.transpose();
  });
}

// ---------------------------------------------------------------------------------------------
// Per block: queries, cosines, weights, combine.

/// Per-row outcome flags collected by the blocks and summed afterwards in row order.
enum row_flag : std::uint8_t {
  zero_norm = 1,
  fallback = 2,
  no_positive = 4,
  inflated = 8,
  padding = 16,
  negative_sum = 32
};

/// What each synthesised row came to, indexed by position in the missing rows written.
struct row_outcomes {
  std::vector<std::uint8_t> flags;
  std::vector<double> effective_neighbours;
  std::vector<double> output_norm;  ///< of the first output
};

/// A worker's scratch, reused from block to block.
struct block_scratch {
  scratch_buffer<float> queries, cosines, panel, accumulator, weight, source_row, scale, residual, correlation,
      query_norm;
  scratch_buffer<Index> neighbour, count;
};

/// One block's view of its worker's scratch.
struct block_buffers {
  float* queries;       ///< block x d_helper: normalised helper rows, zero past the block's rows
  float* cosines;       ///< block x n_overlap
  float* panel;         ///< panel_rows x panel_width: the worker's own overlap panel
  float* accumulator;   ///< block x d_source: output rows
  Index* neighbours;    ///< block x k_max
  float* weights;       ///< block x k_max
  Index* counts;        ///< block: neighbours per row
  float* source_row;    ///< d_source
  float* scale;         ///< block: each row's weights are scale times its cosines as left
  float* residuals;     ///< pursuit by products: block x d_helper, each row's residual
  float* correlations;  ///< Batch-OMP: n_overlap, the correlations of the row being pursued
  float* query_norm;    ///< pursuit: block, ||h_t|| of each row
};

inline block_buffers reserve_block(block_scratch& s, const synthesis_plan& plan) {
  const Index block = plan.blocks.rows;
  return {s.queries.reserve(std::size_t(block * plan.d_helper)),
          s.cosines.reserve(std::size_t(block * plan.n_overlap)),
          s.panel.reserve(std::size_t(panel_rows * plan.panel_width)),
          s.accumulator.reserve(std::size_t(block * plan.d_source)),
          s.neighbour.reserve(std::size_t(block * plan.k_max)),
          s.weight.reserve(std::size_t(block * plan.k_max)),
          s.count.reserve(std::size_t(block)),
          s.source_row.reserve(std::size_t(plan.d_source)),
          s.scale.reserve(std::size_t(block)),
          s.residual.reserve(plan.pursuit && !plan.gram ? std::size_t(block * plan.d_helper) : 0),
          s.correlation.reserve(plan.gram ? std::size_t(plan.n_overlap) : 0),
          s.query_norm.reserve(plan.pursuit ? std::size_t(block) : 0)};
}

/// The sums of a row's final weights (for the report).
struct weight_sums {
  double sum_abs = 0, sum_squares = 0;
};

/// Runs one block of missing rows through queries, cosines, weights and combine.
template <class Policy>
class block_engine {
 public:
  block_engine(const std::vector<source_output>& pairs, const input_view& helper, const vocabulary_overlap& overlap,
               const std::vector<Index>& missing, const Policy& policy, const synthesis_plan& plan,
               const overlap_scan& scan, const overlap_panels& panels, row_outcomes& outcomes)
      : pairs_(pairs),
        helper_(helper),
        overlap_(overlap),
        missing_(missing),
        policy_(policy),
        plan_(plan),
        scan_(scan),
        panels_(panels),
        outcomes_(outcomes) {}

  /// Block b: missing rows [b * block, ...), at most block of them. Returns the row count.
  Index run(Index b, block_scratch& scratch) const {
    const block_buffers buffers = reserve_block(scratch, plan_);
    const Index row0 = b * plan_.blocks.rows;
    const Index m = std::min(plan_.blocks.rows, plan_.n_missing - row0);
    normalise_queries(row0, m, buffers);
    form_cosines(buffers.queries, buffers);
    if constexpr (reconstructs_helper_rows<Policy>::value)
      pursue(row0, m, buffers);
    else
      for (Index i = 0; i < m; ++i) weigh_row(row0 + i, i, buffers);
    // Padding rows carry no weight (their cosines are 0, as their query rows are). The
    // products below still run over the rows that fall back; their results are replaced.
    for (std::size_t p = 0; p < pairs_.size(); ++p) {
      combine(p, m, buffers);
      finish_rows(p, row0, m, buffers);
    }
    return m;
  }

 private:
  static constexpr combine_kind kind = combine_kind_of<Policy>();

  /// Normalised helper rows of the block; rows past m are zero (padding to the block height).
  void normalise_queries(Index row0, Index m, const block_buffers& buffers) const {
    float* const queries = buffers.queries;
    const Index d_helper = plan_.d_helper;
    matrix_map(queries, plan_.blocks.rows, d_helper).bottomRows(plan_.blocks.rows - m).setZero();
    for (Index i = 0; i < m; ++i) {
      float* q = queries + i * d_helper;
      load_row(helper_, missing_[row0 + i], q);
      const double norm = row_norm(q, d_helper);
      if (plan_.pursuit) buffers.query_norm[i] = static_cast<float>(norm);
      if (norm > 0) {
        const float inverse = static_cast<float>(1.0 / norm);
        for (Index c = 0; c < d_helper; ++c) q[c] *= inverse;
      } else {
        outcomes_.flags[row0 + i] |= zero_norm;
      }
    }
  }

  /// The block's rows `left` (block x d_helper) times the normalised overlapping helper rows,
  /// panel by panel of the overlap, into the cosine block: the cosines for the normalised
  /// queries, a pursuit's correlations for its residuals.
  void form_cosines(const float* left, const block_buffers& buffers) const {
    const Index n_overlap = plan_.n_overlap;
    const Index d_helper = plan_.d_helper;
    const Eigen::Map<const row_major_matrix> queries(left, plan_.blocks.rows, d_helper);
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* h = panels_.helper.data() + p0 * d_helper;
      if (!plan_.resident) {
        gather_helper_panel(helper_, overlap_, scan_.inverse_norm, p0, pn, buffers.panel);
        h = buffers.panel;
      }
      strided_map(buffers.cosines + p0, plan_.blocks.rows, pn, Eigen::OuterStride<>(n_overlap)).noalias() =
          queries * Eigen::Map<const row_major_matrix>(h, pn, d_helper).transpose();
    }
  }

  /// Row i of the block (missing position `row`): its weights, flags and effective neighbours.
  /// A dense policy leaves a row of weights up to a factor, scale[i], applied to the (shorter)
  /// output row in finish_rows.
  void weigh_row(Index row, Index i, const block_buffers& buffers) const {
    const Index n_overlap = plan_.n_overlap;
    float* const cosines = buffers.cosines + i * n_overlap;
    std::uint8_t& flag = outcomes_.flags[row];
    weight_sums sums;
    if constexpr (kind == combine_kind::neighbours) {
      float max = 0;
      double sum = 0;
      max_and_sum(cosines, n_overlap, max, sum);
      if (max <= 0) flag |= no_positive;
      if (sum < 0) flag |= negative_sum;
      const Index k_max = plan_.k_max;
      Index& count = buffers.counts[i];
      count = (flag & zero_norm)
                  ? 0
                  : policy_(cosines, n_overlap, buffers.neighbours + i * k_max, buffers.weights + i * k_max);
      if (count == 0 && !(flag & zero_norm)) flag |= fallback;
      const cosine_statistics chosen = statistics_of(buffers.weights + i * k_max, count);
      sums = {chosen.sum_abs, chosen.sum_squares};
      buffers.scale[i] = 1.0f;
    } else {
      const cosine_statistics statistics = statistics_of(cosines, n_overlap);
      if (statistics.max <= 0) flag |= no_positive;
      if (statistics.sum < 0) flag |= negative_sum;
      dense_weights weights;
      if (!(flag & zero_norm)) weights = policy_(cosines, n_overlap, statistics);
      if (!(weights.scale != 0 && std::isfinite(weights.scale)) && !(flag & zero_norm)) flag |= fallback;
      sums = {weights.sum_abs, weights.sum_squares};
      buffers.scale[i] = static_cast<float>(weights.scale);
    }
    record_weights(row, flag, sums);
  }

  /// The normalised overlapping helper row j (the resident panel's, or gathered into `into`
  /// with the same arithmetic).
  const float* atom(Index j, float* into) const {
    const Index d_helper = plan_.d_helper;
    if (plan_.resident) return panels_.helper.data() + j * d_helper;
    load_row(helper_, overlap_.target_ids[j], into);
    for (Index c = 0; c < d_helper; ++c) into[c] *= scan_.inverse_norm[j];
    return into;
  }

  /// Orthogonal matching pursuit for the block (omp_weights). Each row repeatedly picks the
  /// overlapping token most correlated with its residual (ties: the lower index), refits the
  /// coefficients of the chosen rows by least squares (double), and stops after k tokens, when
  /// no correlation exceeds the tolerance, or when the pick is linearly dependent on the chosen.
  /// The correlations of the next step come one of two ways, the same numbers up to rounding:
  ///   - Batch-OMP (Rubinstein, Zibulevsky & Elad 2008), when the plan holds the Gram matrix G
  ///     of the normalised overlapping rows: alpha = alpha0 - G_S x_S, |overlap| x |S| per row
  ///     and step, row by row;
  ///   - otherwise step by step for the whole block: each row's residual q - N_S x_S, then one
  ///     product of the block's residuals with the overlapping rows (|overlap| x d_helper per
  ///     row and step).
  /// Either way a row's arithmetic depends only on the row, so the bits do not depend on the
  /// blocking or the threads.
  void pursue(Index row0, Index m, const block_buffers& buffers) const {
    pursuit_state state(m, plan_);
    for (Index i = 0; i < m; ++i) {
      std::uint8_t& flag = outcomes_.flags[row0 + i];
      float max = 0;
      double sum = 0;
      max_and_sum(buffers.cosines + i * plan_.n_overlap, plan_.n_overlap, max, sum);
      if (max <= 0) flag |= no_positive;
      if (sum < 0) flag |= negative_sum;
      buffers.counts[i] = 0;
      state.active[std::size_t(i)] = !(flag & zero_norm);
    }
    if (plan_.gram)
      pursue_with_gram(m, buffers, state);
    else
      pursue_by_products(m, buffers, state);
    // The coefficients of the raw rows: x_s ||h_t|| / ||h_s||.
    for (Index i = 0; i < m; ++i) {
      const Index row = row0 + i;
      std::uint8_t& flag = outcomes_.flags[row];
      float* const weight = buffers.weights + i * plan_.k_max;
      const Index* const chosen = buffers.neighbours + i * plan_.k_max;
      const Index count = buffers.counts[i];
      const double* const coefficient = state.coefficients(i);
      for (Index s = 0; s < count; ++s)
        weight[s] = static_cast<float>(coefficient[s] * buffers.query_norm[i] * scan_.inverse_norm[chosen[s]]);
      buffers.scale[i] = 1.0f;
      if (count == 0 && !(flag & zero_norm)) flag |= fallback;
      const cosine_statistics statistics = statistics_of(weight, count);
      record_weights(row, flag, {statistics.sum_abs, statistics.sum_squares});
    }
  }

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

  /// Row i's next pick from its correlations: the largest |correlation| (over independent
  /// lanes, vectorised), then its first index; the chosen rows are zeroed first (never twice).
  /// Returns -1 when nothing exceeds the tolerance.
  Index pick(float* correlation, const Index* chosen, Index count) const {
    const Index n_overlap = plan_.n_overlap;
    for (Index s = 0; s < count; ++s) correlation[chosen[s]] = 0;
    const float best_value = max_abs_of(correlation, n_overlap);
    if (!(double(best_value) > policy_.tolerance)) return -1;
    Index best = 0;
    while (best + 1 < n_overlap && std::abs(correlation[best]) != best_value) ++best;
    return best;
  }

  /// Adds overlap row `best` to row i's chosen rows and refits the coefficients: the new row of
  /// the chosen rows' Gram matrix and the new right-hand side (double, from the rows), then the
  /// Cholesky factor from scratch (k is small) and two triangular solves. Returns false, adding
  /// nothing, when `best` lies in the span of the chosen rows.
  bool extend_fit(Index i, Index best, const block_buffers& buffers, pursuit_state& state) const {
    const Index d_helper = plan_.d_helper;
    const Index k_max = state.k_max;
    Index* const chosen = buffers.neighbours + i * k_max;
    Index& count = buffers.counts[i];
    const float* q = buffers.queries + i * d_helper;
    const float* a = atom(best, state.atom.data());
    double* const g = state.gram(i);
    double* const r = state.rhs(i);
    double* const coefficient = state.coefficients(i);
    double* const factor = state.factor.data();
    double* const y = state.y.data();
    for (Index s = 0; s < count; ++s) {
      const float* b = atom(chosen[s], state.other.data());
      double dot = 0;
      for (Index col = 0; col < d_helper; ++col) dot += double(a[col]) * b[col];
      g[count * k_max + s] = dot;
    }
    double self = 0, projection = 0;
    for (Index col = 0; col < d_helper; ++col) {
      self += double(a[col]) * a[col];
      projection += double(a[col]) * q[col];
    }
    g[count * k_max + count] = self;
    r[count] = projection;
    const Index size = count + 1;
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
    chosen[count] = best;
    count = size;
    for (Index row = 0; row < size; ++row) {  // L y = rhs, L^T x = y
      double value = r[row];
      for (Index l = 0; l < row; ++l) value -= factor[row * k_max + l] * y[l];
      y[row] = value / factor[row * k_max + row];
    }
    for (Index row = size - 1; row >= 0; --row) {
      double value = y[row];
      for (Index l = row + 1; l < size; ++l) value -= factor[l * k_max + row] * coefficient[l];
      coefficient[row] = value / factor[row * k_max + row];
    }
    return true;
  }

  /// Batch-OMP, row by row: the cosines are the first correlations (alpha0, kept); after each
  /// fit alpha = alpha0 - sum_s x_s G_{chosen s} (rows of G, in the order chosen).
  void pursue_with_gram(Index m, const block_buffers& buffers, pursuit_state& state) const {
    const Index n_overlap = plan_.n_overlap;
    const Index k_max = plan_.k_max;
    using vector_map = Eigen::Map<Eigen::VectorXf>;
    using const_vector_map = Eigen::Map<const Eigen::VectorXf>;
    vector_map alpha(buffers.correlations, n_overlap);
    for (Index i = 0; i < m; ++i) {
      if (!state.active[std::size_t(i)]) continue;
      const const_vector_map alpha0(buffers.cosines + i * n_overlap, n_overlap);
      const Index* const chosen = buffers.neighbours + i * k_max;
      const double* const coefficient = state.coefficients(i);
      alpha = alpha0;
      for (Index step = 0; step < k_max; ++step) {
        const Index best = pick(alpha.data(), chosen, buffers.counts[i]);
        if (best < 0 || !extend_fit(i, best, buffers, state)) break;
        if (buffers.counts[i] == k_max) break;
        alpha = alpha0;
        for (Index s = 0; s < buffers.counts[i]; ++s)
          alpha.noalias() -= static_cast<float>(coefficient[s]) *
                             const_vector_map(panels_.gram.data() + chosen[s] * n_overlap, n_overlap);
      }
    }
  }

  /// Step by step for the whole block: every active row picks and refits, updates its residual
  /// q - sum_s x_s n_s; then one product of the block's residuals (zero for rows that stopped,
  /// and for the padding) with the overlapping rows gives the next correlations.
  void pursue_by_products(Index m, const block_buffers& buffers, pursuit_state& state) const {
    const Index n_overlap = plan_.n_overlap;
    const Index d_helper = plan_.d_helper;
    const Index k_max = plan_.k_max;
    std::vector<double> sum(static_cast<std::size_t>(d_helper));
    matrix_map(buffers.residuals, plan_.blocks.rows, d_helper).setZero();
    for (Index step = 0; step < k_max; ++step) {
      bool any = false;
      for (Index i = 0; i < m; ++i) {
        if (!state.active[std::size_t(i)]) continue;
        const Index* const chosen = buffers.neighbours + i * k_max;
        const Index best = pick(buffers.cosines + i * n_overlap, chosen, buffers.counts[i]);
        if (best < 0 || !extend_fit(i, best, buffers, state) || buffers.counts[i] == k_max) {
          state.active[std::size_t(i)] = false;
          continue;
        }
        const double* const coefficient = state.coefficients(i);
        const float* q = buffers.queries + i * d_helper;
        float* const residual = buffers.residuals + i * d_helper;
        std::fill(sum.begin(), sum.end(), 0.0);
        for (Index s = 0; s < buffers.counts[i]; ++s) {
          const float* b = atom(chosen[s], state.other.data());
          for (Index col = 0; col < d_helper; ++col) sum[std::size_t(col)] += coefficient[s] * b[col];
        }
        for (Index col = 0; col < d_helper; ++col) residual[col] = static_cast<float>(q[col] - sum[std::size_t(col)]);
        any = true;
      }
      if (!any) break;
      for (Index i = 0; i < m; ++i)
        if (!state.active[std::size_t(i)])
          std::fill(buffers.residuals + i * d_helper, buffers.residuals + (i + 1) * d_helper, 0.0f);
      form_cosines(buffers.residuals, buffers);
    }
  }

  /// A row's effective neighbours and inflation, from the sums of its final weights.
  void record_weights(Index row, std::uint8_t& flag, const weight_sums& sums) const {
    if (flag & (zero_norm | fallback))
      outcomes_.effective_neighbours[row] = double(plan_.n_overlap);
    else
      outcomes_.effective_neighbours[row] = sums.sum_squares > 0 ? 1.0 / sums.sum_squares : 0.0;
    if (sums.sum_abs > 2) flag |= inflated;
  }

  /// The block's output rows for source p, unscaled, into the accumulator.
  void combine(std::size_t p, Index m, const block_buffers& buffers) const {
    if constexpr (kind == combine_kind::neighbours)
      combine_neighbours(p, m, buffers);
    else if constexpr (kind == combine_kind::projected)
      combine_projected(p, buffers);
    else
      combine_dense(p, buffers);
  }

  /// sum_k w_k a_{neighbour k}, reading only the chosen source rows.
  void combine_neighbours(std::size_t p, Index m, const block_buffers& buffers) const {
    const input_view& source = pairs_[p].source;
    const Index d = source.cols;
    float* const source_row = buffers.source_row;
    for (Index i = 0; i < m; ++i) {
      float* out = buffers.accumulator + i * d;
      std::fill(out, out + d, 0.0f);
      const Index* neighbour = buffers.neighbours + i * plan_.k_max;
      const float* weight = buffers.weights + i * plan_.k_max;
      for (Index k = 0; k < buffers.counts[i]; ++k) {
        load_row(source, overlap_.source_ids[neighbour[k]], source_row);
        for (Index c = 0; c < d; ++c) out[c] += weight[k] * source_row[c];
      }
    }
  }

  /// The normalised queries times P.
  void combine_projected(std::size_t p, const block_buffers& buffers) const {
    const Index d = pairs_[p].source.cols;
    matrix_map(buffers.accumulator, plan_.blocks.rows, d).noalias() =
        matrix_map(buffers.queries, plan_.blocks.rows, plan_.d_helper) *
        Eigen::Map<const row_major_matrix>(panels_.projection[p].data(), plan_.d_helper, d);
  }

  /// The weights times the overlapping source rows, panel by panel.
  void combine_dense(std::size_t p, const block_buffers& buffers) const {
    const input_view& source = pairs_[p].source;
    const Index d = source.cols;
    const Index n_overlap = plan_.n_overlap;
    matrix_map result(buffers.accumulator, plan_.blocks.rows, d);
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* a = panels_.source[p].data() + p0 * d;
      if (!plan_.resident) {
        gather_rows(source, overlap_.source_ids.data() + p0, pn, buffers.panel);
        a = buffers.panel;
      }
      const auto weights = strided_map(buffers.cosines + p0, plan_.blocks.rows, pn, Eigen::OuterStride<>(n_overlap));
      const auto values = Eigen::Map<const row_major_matrix>(a, pn, d);
      if (p0 == 0)
        result.noalias() = weights * values;
      else
        result.noalias() += weights * values;
    }
  }

  /// Scales each output row (or replaces it with the mean where the row fell back), stores it.
  void finish_rows(std::size_t p, Index row0, Index m, const block_buffers& buffers) const {
    const Index d = pairs_[p].source.cols;
    const std::vector<float>& mean = scan_.means[p];
    for (Index i = 0; i < m; ++i) {
      float* out = buffers.accumulator + i * d;
      const float scale = buffers.scale[i];
      if (outcomes_.flags[row0 + i] & (zero_norm | fallback))
        std::copy(mean.begin(), mean.end(), out);
      else if (scale != 1.0f)
        for (Index c = 0; c < d; ++c) out[c] *= scale;
      store_row(pairs_[p].output, missing_[row0 + i], out);
      if (p == 0) outcomes_.output_norm[row0 + i] = row_norm(out, d);
    }
  }

  const std::vector<source_output>& pairs_;
  const input_view& helper_;
  const vocabulary_overlap& overlap_;
  const std::vector<Index>& missing_;
  const Policy& policy_;
  const synthesis_plan& plan_;
  const overlap_scan& scan_;
  const overlap_panels& panels_;
  row_outcomes& outcomes_;  // each block writes only its own rows
};

// ---------------------------------------------------------------------------------------------
// Summarise.

/// The counts and statistics of the rows a token names; padding rows are only counted.
inline void summarise_rows(const row_outcomes& outcomes, synthesis_report& report) {
  std::vector<double> effective, output_norm;
  effective.reserve(outcomes.flags.size());
  output_norm.reserve(outcomes.flags.size());
  for (std::size_t i = 0; i < outcomes.flags.size(); ++i) {
    const std::uint8_t flag = outcomes.flags[i];
    if (flag & padding) {
      ++report.padding_rows;
      continue;
    }
    report.zero_norm_rows += (flag & zero_norm) != 0;
    report.fallback_rows += (flag & fallback) != 0;
    report.no_positive_rows += (flag & no_positive) != 0;
    report.inflated_rows += (flag & inflated) != 0;
    report.negative_sum_rows += (flag & negative_sum) != 0;
    effective.push_back(outcomes.effective_neighbours[i]);
    output_norm.push_back(outcomes.output_norm[i]);
  }
  if (effective.empty()) return;  // padding only
  report.effective_neighbours_min = *std::min_element(effective.begin(), effective.end());
  report.effective_neighbours_max = *std::max_element(effective.begin(), effective.end());
  report.effective_neighbours_median = median(effective);
  report.max_output_row_norm = *std::max_element(output_norm.begin(), output_norm.end());
  report.median_output_row_norm = median(std::move(output_norm));
}

// ---------------------------------------------------------------------------------------------
// The whole synthesis, phase by phase.

template <class Policy>
synthesis_report synthesize(const std::vector<source_output>& pairs, const input_view& helper,
                            const vocabulary_overlap& overlap, const Policy& policy, const synthesis_options& options,
                            const char* context) {
  constexpr combine_kind kind = combine_kind_of<Policy>();
  validate_shapes(pairs, helper, overlap, context);
  const rows_to_write rows = select_rows(overlap, options, helper.rows, context);
  const int threads = resolve_threads(options.threads);
  screen_inputs(pairs, helper, overlap, rows.missing, threads, context);

  const overlap_scan scan = scan_overlap(pairs, helper, overlap, rows, threads);
  synthesis_report report;
  report.overlap = overlap.size();
  report.median_source_row_norm = scan.median_source_row_norm;
  report.copied_rows = rows.copy_end - rows.copy_begin;
  report.synthesized_rows = Index(rows.missing.size());
  if (rows.missing.empty()) return report;

  const synthesis_plan plan = plan_synthesis(policy, pairs, helper.cols, overlap.size(), Index(rows.missing.size()),
                                             threads, options.tile_bytes);
  overlap_panels panels(pairs.size());
  if (plan.resident) gather_resident_panels<kind>(panels, pairs, helper, overlap, scan.inverse_norm, threads);
  if constexpr (kind == combine_kind::projected)
    compute_projections(panels, pairs, helper, overlap, scan.inverse_norm, plan.resident, threads);
  if (plan.gram) compute_gram(panels, helper, overlap, scan.inverse_norm, plan.resident, threads);

  std::vector<std::uint8_t> flags(rows.missing.size(), 0);
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (rows.padding[i]) flags[i] = padding;
  row_outcomes outcomes{std::move(flags), std::vector<double>(rows.missing.size(), 0.0),
                        std::vector<double>(rows.missing.size(), 0.0)};
  {
    const block_engine<Policy> engine(pairs, helper, overlap, rows.missing, policy, plan, scan, panels, outcomes);
    std::vector<block_scratch> workers(static_cast<std::size_t>(threads));
    std::mutex progress_mutex;
    Index rows_done = 0;
    parallel_for(plan.blocks.count, threads, [&](Index b, int worker) {
      const Index m = engine.run(b, workers[static_cast<std::size_t>(worker)]);
      if (options.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        rows_done += m;
        options.progress(rows_done, plan.n_missing);
      }
    });
  }  // the blocks' scratch (most of the tile budget) is freed before the summary's vectors
  summarise_rows(outcomes, report);
  return report;
}

/// The pairs of a synthesis: (source, output), and the untied head's if there is one.
template <class Source, class Output>
std::vector<source_output> pairs_of(const Source& source, Output&& output) {
  return {{input_view::from(make_view(source)), output_view::from(make_view(output))}};
}
template <class Source, class Output, class SourceHead, class OutputHead>
std::vector<source_output> pairs_of(const Source& source, Output&& output,
                                    const untied_head<SourceHead, OutputHead>& head) {
  return {{input_view::from(make_view(source)), output_view::from(make_view(output))},
          {input_view::from(make_view(head.source_head)), output_view::from(make_view(head.output_head)), "source_head",
           "output_head"}};
}
template <class Source, class Output>
std::vector<source_output> pairs_of(const Source& source, Output&& output, const matrix_pairs& more) {
  std::vector<source_output> pairs{{input_view::from(make_view(source)), output_view::from(make_view(output))}};
  for (const matrix_pair& pair : more)
    pairs.push_back({pair.source(), pair.output(), pair.name() + " source", pair.name() + " output"});
  return pairs;
}

/// The entry points' one path: views made once, the policy (or the one a `weighting` holds)
/// checked and dispatched by visit_weighting.
template <class Helper, class Policy>
synthesis_report run_synthesis(const std::vector<source_output>& pairs, const Helper& helper,
                               const vocabulary_overlap& overlap, const Policy& policy,
                               const synthesis_options& options, const char* context) {
  const input_view helper_view = input_view::from(make_view(helper));
  return visit_weighting(policy,
                         [&](const auto& p) { return synthesize(pairs, helper_view, overlap, p, options, context); });
}

/// What may stand after `output` besides a policy: an untied head or matrix_pairs.
template <class T>
struct is_more_outputs : std::false_type {};
template <class S, class O>
struct is_more_outputs<untied_head<S, O>> : std::true_type {};
template <>
struct is_more_outputs<matrix_pairs> : std::true_type {};

}  // namespace detail

/// Writes target rows of `output`: overlapping rows copied from `source` (eq. 2), missing rows
/// synthesised from it with `policy` (eq. 3-4).
///
/// @param[in]  source   #source_rows by d_source: the large source model's embeddings (or
///                      output head)
/// @param[in]  helper   #target_rows by d_helper: the helper (small target-language) model's
///                      input embeddings
/// @param[in]  overlap  from intersect_vocabularies, with target ids < #target_rows and
///                      source ids < #source_rows
/// @param[out] output   #target_rows by d_source, caller-owned; rows outside the overlap and
///                      missing lists, or outside the row range, are not touched
/// @param[in]  policy   weighting policy (weights.hpp), or a clp::weighting chosen at run time;
///                      paper_weights is eq. 4 as published (negative cosine sums included)
/// @param[in]  options  threads, tile budget, row range, progress
/// Matrices may be of any type make_view accepts, with elements float, double, Eigen::half or
/// Eigen::bfloat16; computation is float32.
/// @throws clp::error on mismatched shapes, ids outside a matrix, NaN or infinite inputs
template <class Policy = paper_weights, class Source, class Helper, class Output,
          class = std::enable_if_t<!detail::is_more_outputs<Policy>::value>>
synthesis_report synthesize_rows(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                                 Output&& output, const Policy& policy = {}, const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, std::forward<Output>(output)), helper, overlap, policy, options,
                               "clp::synthesize_rows");
}

/// As above, for a model with an untied output head, named by `head` (see untied_head): the
/// head's missing rows get the same weights (computed once) applied to the source head's rows.
template <class Policy = paper_weights, class Source, class Helper, class Output, class SourceHead, class OutputHead>
synthesis_report synthesize_rows(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                                 Output&& output, const untied_head<SourceHead, OutputHead>& head,
                                 const Policy& policy = {}, const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, std::forward<Output>(output), head), helper, overlap, policy,
                               options, "clp::synthesize_rows");
}

/// As above, for any number of further matrices (see matrix_pair): each pair's missing rows get
/// the same weights (computed once) applied to its source's rows. The report describes `output`.
template <class Policy = paper_weights, class Source, class Helper, class Output>
synthesis_report synthesize_rows(const Source& source, const Helper& helper, const vocabulary_overlap& overlap,
                                 Output&& output, const matrix_pairs& more, const Policy& policy = {},
                                 const synthesis_options& options = {}) {
  return detail::run_synthesis(detail::pairs_of(source, std::forward<Output>(output), more), helper, overlap, policy,
                               options, "clp::synthesize_rows");
}

}  // namespace clp
