// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the one parallel pass over the overlapping rows, panel by panel, that
// gives what the rest of the synthesis needs to know about the overlap (the helper rows'
// norms, each source's mean row, the fallback). It writes nothing: the copies of eq. 2 are
// made block by block with the synthesised rows around them (<clp/synthesize.hpp>).
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/vocabulary_overlap.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace clp::detail {

/// What the rest of the synthesis needs to know about the overlap.
struct overlap_scan {
  std::vector<float> inverse_norm;        ///< 1 / ||helper row|| per overlap entry (0 for a zero row)
  std::vector<std::vector<float>> means;  ///< per source: the mean of its overlapping rows
  double median_source_row_norm = 0;      ///< of the first source's overlapping rows
  /// per source, the norm of each overlapping row (the neighbour norms' mean reads them)
  std::vector<std::vector<double>> source_norms;
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
/// row) and the norms of its overlapping rows.
inline overlap_scan scan_overlap(const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                 const vocabulary_overlap& overlap, int threads) {
  const Index n_overlap = overlap.size();
  const Index n_panels = ceil_div(n_overlap, panel_rows);
  const Index widest = std::max(helper.cols(), widest_source(pairs));
  overlap_scan scan;
  scan.inverse_norm.resize(static_cast<std::size_t>(n_overlap));
  scan.source_norms.assign(pairs.size(), std::vector<double>(static_cast<std::size_t>(n_overlap)));
  std::vector<std::vector<double>> panel_sums(pairs.size());
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panel_sums[p].assign(static_cast<std::size_t>(n_panels * pairs[p].source.cols()), 0.0);
  std::vector<std::vector<float>> row_buffers(static_cast<std::size_t>(threads),
                                              std::vector<float>(static_cast<std::size_t>(widest)));
  parallel_for(n_panels, threads, [&](Index panel, int worker) {
    float* const row = row_buffers[static_cast<std::size_t>(worker)].data();
    const Index p0 = panel * panel_rows;
    const Index p1 = std::min(n_overlap, p0 + panel_rows);
    for (Index j = p0; j < p1; ++j) {
      load_row(helper, overlap.target_ids[j], row);
      const double norm = row_norm(row, helper.cols());
      scan.inverse_norm[j] = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    }
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const source_output& pair = pairs[p];
      const Index d = pair.source.cols();
      double* const sum = panel_sums[p].data() + panel * d;
      for (Index j = p0; j < p1; ++j) {
        load_row(pair.source, overlap.source_ids[j], row);
        for (Index c = 0; c < d; ++c) sum[c] += row[c];
        scan.source_norms[p][j] = row_norm(row, d);
      }
    }
  });
  if (!pairs.empty()) scan.median_source_row_norm = median(scan.source_norms[0]);
  for (std::size_t p = 0; p < pairs.size(); ++p)
    scan.means.push_back(mean_of_panels(panel_sums[p], pairs[p].source.cols(), n_panels, n_overlap));
  return scan;
}

}  // namespace clp::detail
