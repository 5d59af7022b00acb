// SPDX-License-Identifier: MIT
#pragma once

// Internal: the bodies of overlap_panels.hpp that use Eigen's products or solvers, whose contracts
// are there. Included by it in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/overlap_panels.hpp>

namespace clp::detail {

CLP_DECL void gather_helper_panel(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                  const std::vector<float>& inverse_norm, Index p0, Index pn, float* into) {
  gather_rows(helper, overlap.target_ids.data() + p0, pn, into);
  const Index d = helper.cols();
  for (Index j = 0; j < pn; ++j) {
    float* h = into + j * d;
    for (Index c = 0; c < d; ++c) h[c] *= inverse_norm[p0 + j];
  }
}

CLP_DECL void gather_helper_rows(const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                 const std::vector<float>& inverse_norm, float* into, int threads) {
  const Index n_overlap = overlap.size();
  parallel_for(ceil_div(n_overlap, panel_rows), threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    gather_helper_panel(helper, overlap, inverse_norm, p0, std::min(panel_rows, n_overlap - p0),
                        into + p0 * helper.cols());
  });
}

CLP_DECL void gather_source_panels(overlap_panels& panels, const std::vector<source_output>& pairs,
                                   const vocabulary_overlap& overlap, int threads) {
  const Index n_overlap = overlap.size();
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panels.source[p].reserve(std::size_t(n_overlap * pairs[p].source.cols()));
  parallel_for(ceil_div(n_overlap, panel_rows), threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    for (std::size_t p = 0; p < pairs.size(); ++p)
      gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn,
                  panels.source[p].data() + p0 * pairs[p].source.cols());
  });
}

CLP_DECL void compute_projections(overlap_panels& panels, const std::vector<source_output>& pairs,
                                  const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                  const std::vector<float>& inverse_norm, bool resident, int threads) {
  constexpr Index chunk_cols = 256;
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols();
  scratch_buffer<float> helper_panel, source_panel;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const Index d = pairs[p].source.cols();
    float* const into = panels.projection[p].reserve(std::size_t(d_helper * d));
    for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
      const Index pn = std::min(panel_rows, n_overlap - p0);
      const float* h =
          resident ? panels.helper + p0 * d_helper : helper_panel.reserve(std::size_t(panel_rows * d_helper));
      if (!resident) gather_helper_panel(helper, overlap, inverse_norm, p0, pn, helper_panel.data());
      float* const a = source_panel.reserve(std::size_t(panel_rows * d));
      gather_rows(pairs[p].source, overlap.source_ids.data() + p0, pn, a);
      parallel_for(ceil_div(d, chunk_cols), threads, [&](Index chunk, int) {
        const Index c0 = chunk * chunk_cols;
        const Index cn = std::min(chunk_cols, d - c0);
        strided_map part(into + c0, d_helper, cn, Eigen::OuterStride<>(d));
        const const_matrix_map normalised(h, pn, d_helper);
        const const_strided_map values(a + c0, pn, cn, Eigen::OuterStride<>(d));
        if (p0 == 0)
          part.noalias() = normalised.transpose() * values;
        else
          part.noalias() += normalised.transpose() * values;
      });
    }
  }
}

CLP_DECL void compute_gram(scratch_buffer<float>& storage, const float* resident_rows,
                           const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                           const std::vector<float>& inverse_norm, int threads) {
  const Index n_overlap = overlap.size();
  const Index d_helper = helper.cols();
  const Index n_panels = ceil_div(n_overlap, panel_rows);
  scratch_buffer<float> gathered;
  const float* rows = resident_rows;
  if (rows == nullptr) {
    float* const into = gathered.reserve(std::size_t(n_overlap * d_helper));
    parallel_for(n_panels, threads, [&](Index panel, int) {
      const Index p0 = panel * panel_rows;
      gather_helper_panel(helper, overlap, inverse_norm, p0, std::min(panel_rows, n_overlap - p0),
                          into + p0 * d_helper);
    });
    rows = into;
  }
  float* const gram = storage.reserve(std::size_t(n_overlap * n_overlap));
  const const_matrix_map atoms(rows, n_overlap, d_helper);
  matrix_map all(gram, n_overlap, n_overlap);
  // G is symmetric: each panel of rows is multiplied up to its diagonal block only (half the
  // flops), the costliest panels first; the blocks above the diagonal are then copied across.
  parallel_for(n_panels, threads, [&](Index task, int) {
    const Index p0 = (n_panels - 1 - task) * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    all.block(p0, 0, pn, p0 + pn).noalias() = atoms.middleRows(p0, pn) * atoms.topRows(p0 + pn).transpose();
  });
  parallel_for(n_panels, threads, [&](Index panel, int) {
    const Index p0 = panel * panel_rows;
    const Index pn = std::min(panel_rows, n_overlap - p0);
    for (Index q0 = p0 + pn; q0 < n_overlap; q0 += panel_rows) {
      const Index qn = std::min(panel_rows, n_overlap - q0);
      all.block(p0, q0, pn, qn) = all.block(q0, p0, qn, pn).transpose();
    }
  });
}

CLP_DECL void prepare_job_panels(overlap_panels& panels, const synthesis_plan& plan, combiner combine,
                                 const std::vector<source_output>& pairs, const matrix_view<const void>& helper,
                                 const vocabulary_overlap& overlap, const std::vector<float>& inverse_norm, int threads,
                                 const overlap_panels* same_projections) {
  if (plan.sources_resident && combine == combiner::dense) gather_source_panels(panels, pairs, overlap, threads);
  // A least-squares map's W is fitted before the plan (linear_map.hpp).
  if (combine == combiner::projected && !plan.linear_map && same_projections == nullptr)
    compute_projections(panels, pairs, helper, overlap, inverse_norm, plan.resident, threads);
  panels.projected.clear();
  for (std::size_t p = 0; p < pairs.size(); ++p)
    panels.projected.push_back(same_projections ? same_projections->projected[p] : panels.projection[p].data());
  if (plan.gram && panels.gram == nullptr) {
    compute_gram(panels.gram_storage, plan.resident ? panels.helper : nullptr, helper, overlap, inverse_norm, threads);
    panels.gram = panels.gram_storage.data();
    panels.gram_stride = overlap.size();
    panels.gram_positions = nullptr;
  }
}

}  // namespace clp::detail
