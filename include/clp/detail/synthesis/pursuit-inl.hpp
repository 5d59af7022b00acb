// SPDX-License-Identifier: MIT
#pragma once

// Internal: the bodies of pursuit.hpp that use Eigen's products or solvers, whose contracts
// are there. Included by it in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/pursuit.hpp>

namespace clp::detail {

CLP_DECL float update_correlations(const overlap_panels& panels, const Index* chosen, Index n, const double* factor_row,
                                   double y_n, float* basis, float* alpha, Index n_overlap) {
  constexpr Index chunk = 1024;
  using vector_map = Eigen::Map<Eigen::VectorXf>;
  using const_vector_map = Eigen::Map<const Eigen::VectorXf>;
  const Index* const position = panels.gram_positions;
  const float* const row = panels.gram + (position ? position[chosen[n]] : chosen[n]) * panels.gram_stride;
  const float inverse_diagonal = static_cast<float>(1 / factor_row[n]);
  const float y = static_cast<float>(y_n);
  float top = 0;
  for (Index c0 = 0; c0 < n_overlap; c0 += chunk) {
    const Index cn = std::min(chunk, n_overlap - c0);
    float* const w = basis + n * n_overlap + c0;
    if (position == nullptr) {
      vector_map(w, cn) = const_vector_map(row + c0, cn);
    } else {
      const Index* const p = position + c0;
      for (Index c = 0; c < cn; ++c) w[c] = row[p[c]];
    }
    for (Index s = 0; s < n; ++s)
      vector_map(w, cn).noalias() -=
          static_cast<float>(factor_row[s]) * const_vector_map(basis + s * n_overlap + c0, cn);
    vector_map(w, cn) *= inverse_diagonal;
    float* const a = alpha + c0;
    vector_map(a, cn).noalias() -= y * const_vector_map(w, cn);
    for (Index s = 0; s <= n; ++s)
      if (chosen[s] >= c0 && chosen[s] < c0 + cn) alpha[chosen[s]] = 0;
    top = std::max(top, max_abs_of(a, cn));
  }
  return top;
}

}  // namespace clp::detail
