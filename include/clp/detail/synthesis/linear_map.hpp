// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the least-squares map from the helper's space to a source's, fitted on
// the overlap (weighting_input::linear_map, least_squares_map). With H_o the overlap's raw
// helper rows and A_o a source's overlapping rows,
//     W = (H_o^T H_o + lambda I)^-1 H_o^T A_o,     e_t = h_t W,
// which is eq. 3 with the weights w_t = h_t (H_o^T H_o + lambda I)^-1 H_o^T, never formed.
//
// One pass over the overlap, panel by panel in panel order, sums the d_helper x d_helper Gram
// matrix G = H_o^T H_o and, per source, B = H_o^T A_o, in double. G is factorised once,
// G = V diag(s) V^T; per source C = V^T B, and for every lambda
//     W = V diag(1 / (s + lambda)) C,
//     RSS(lambda) = ||A_o||^2 - sum_i ||C_i||^2 / s_i * (1 - (lambda / (s_i + lambda))^2),
//     df(lambda)  = sum_i s_i / (s_i + lambda),
//     GCV(lambda) = n RSS / (n - df)^2          (Golub, Heath & Wahba 1979),
// so choosing lambda per source over a log grid costs O(d_helper) per grid point. Every
// product is split into fixed column chunks, one task each, and summed in panel order: the
// map's bits do not depend on the thread count.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/config.hpp>
#include <clp/detail/kernels/reductions.hpp>
#include <clp/detail/kernels/scratch_buffer.hpp>
#include <clp/detail/kernels/tiling.hpp>
#include <clp/detail/matrices/rows.hpp>
#include <clp/detail/synthesis/block_context.hpp>
#include <clp/detail/synthesis/overlap_moments.hpp>
#include <clp/detail/synthesis/row_outcomes.hpp>
#include <clp/detail/synthesis/synthesis_inputs.hpp>
#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>
#include <clp/parallel.hpp>
#include <clp/vocabulary_overlap.hpp>
#include <clp/weights.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace clp::detail {

/// Columns per task in the map's products.
inline constexpr Index map_chunk_cols = 64;
/// Columns per task in the moments' float32 products: wide enough that each task's product is
/// a GEMM of good shape (its packed left operand is read by all of them).
inline constexpr Index moment_chunk_cols = 512;
/// An eigenvalue of G at or below this share of the largest counts as zero.
inline constexpr double map_rank_tolerance = 1e-10;
/// The grid GCV searches: lambda = 10^(e / 4) * trace(G) / d_helper for e in [first, last].
inline constexpr int map_grid_first = -24, map_grid_last = 8;

/// target += left^T right, column chunk by column chunk, one task each.
CLP_DECL void add_transposed_product(double_matrix& target, const double_matrix& left, const double_matrix& right,
                                     int threads);

/// The lower triangle of gram += h^T h for one panel, in double: column chunk by column chunk,
/// one task each, the rows from the chunk's first on. The Gram matrix decides the map's rank, so
/// its null space must be exact to double's round-off, which float32 products would not keep.
/// @param[in] h  #panel rows by gram.rows()
CLP_DECL void add_panel_gram(double_matrix& gram, const double_matrix& h, int threads);

/// target += left^T right for one panel: float32 products, column chunk by column chunk (one
/// task each, into the worker's own `products`), each added to the double target.
/// @param[in] left   #panel rows by target.rows(), row-major
/// @param[in] right  #panel rows by target.cols(), row-major
CLP_DECL void add_panel_product(double_matrix& target, const float* left, const float* right, Index panel,
                                std::vector<Eigen::MatrixXf>& products, int threads);

/// sum_squares += ||rows||^2 and sums += the column sums of n rows of d floats, in double, on
/// every worker: each row's square and each column chunk's sums on one task, added in row order
/// (the bits do not depend on the thread count).
CLP_DECL void add_row_sums(const float* rows, Index n, Index d, double& sum_squares, Eigen::VectorXd& sums,
                           int threads);

/// gather_rows on every worker, a stretch of the rows per task.
CLP_DECL void gather_rows_on_workers(const matrix_view<const void>& v, const Index* ids, Index n, float* dst,
                                     int threads);

/// G, B, ||A_o||^2 and the column sums, panel by panel of the overlap (panel_rows rows each, in
/// order). G is double throughout (its lower triangle, mirrored at the end). B's products are
/// float32 within a panel and double across panels: each entry of a panel's product is a sum of
/// at most panel_rows products of float32 elements, exact to about 1e-6 of its terms'
/// magnitudes, at float32's speed. The sums of squares and column sums are double throughout.
CLP_DECL overlap_moments sum_overlap_moments(const std::vector<source_output>& pairs,
                                             const matrix_view<const void>& helper, const vocabulary_overlap& overlap,
                                             int threads);

/// `left` = `whole` less `part` (moments of an overlap less those of some of its entries): the
/// moments of the entries left, in `left`'s memory when it has the sizes already.
CLP_DECL void moments_without(overlap_moments& left, const overlap_moments& whole, const overlap_moments& part);

/// G's eigendecomposition and the scale lambda is relative to.
struct gram_factors {
  Eigen::VectorXd eigenvalues;  ///< ascending, negatives (round-off) set to 0
  double_matrix eigenvectors;
  double mean_eigenvalue = 0;  ///< trace(G) / d_helper
  Index rank = 0;
};

CLP_DECL gram_factors factorise_gram(const double_matrix& gram);

/// RSS and df at lambda, from the eigenvalues and each component's energy ||C_i||^2.
CLP_DECL void residual_and_df(const gram_factors& f, const Eigen::VectorXd& energy, double sum_squares, double lambda,
                              double& rss, double& df);

/// The lambda of the grid with the least GCV (ties: the larger lambda).
CLP_DECL double choose_lambda(const gram_factors& f, const Eigen::VectorXd& energy, double sum_squares, Index n);

/// Source p's map W into `into` (row-major float d_helper x d), and what the fit came to.
CLP_DECL least_squares_fit fit_one_map(const gram_factors& f, const overlap_moments& m, std::size_t p, Index n,
                                       double relative_lambda, float* into, int threads);

/// Every source's map, into the panels' projections, from the overlap's moments (or `given`,
/// the same moments summed another way: an evaluation's kept overlap as the whole less the
/// held-out rows); refuses lambda = 0 on a singular G and a helper whose overlapping rows are all
/// zero before anything is written.
CLP_DECL std::vector<least_squares_fit> fit_linear_maps(std::vector<scratch_buffer<float>>& maps,
                                                        const std::vector<source_output>& pairs,
                                                        const matrix_view<const void>& helper,
                                                        const vocabulary_overlap& overlap, double relative_lambda,
                                                        int threads, const char* context,
                                                        const overlap_moments* given = nullptr);

/// A block's row scales for the map: each row's output is ||h_t|| times its normalised query
/// times W. A map forms no weights, so a row counts as using the whole overlap.
CLP_DECL void weigh_by_query_norms(const block_context& context, block_rows rows, const block_buffers& buffers);

/// A map has no weights to sum, so an inflated row is judged by its output instead: more than
/// this many times the median norm of the overlapping source rows (the program's warning line).
inline constexpr double map_inflated_norm_ratio = 4;

}  // namespace clp::detail

// The bodies; with CLP_SEPARATE_COMPILATION, compiled once by <clp/impl/src.hpp>.
#ifndef CLP_SEPARATE_COMPILATION
#include <clp/detail/synthesis/linear_map-inl.hpp>
#endif
