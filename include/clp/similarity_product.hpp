// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The similarity product, the stage of a synthesis that forms the cosines of each block of
/// missing helper rows with every overlapping helper row (most of a weighting's cost), made by
/// the caller's code: for the weightings that read only a row's largest cosines
/// (`weighting_input::nearest_cosines`: top_k_weights, softmax_weights; and the top-k rows of
/// least_squares_map's neighbour norms), possibly in lower precision, with a stated error
/// bound. Without one (synthesis_options::product null) the library's own product runs, Eigen
/// in float32; nothing here needs a new dependency.
///
/// What the engine does with it, per row (detail/synthesis/rescoring.hpp): it recomputes the cosines of
/// the product's top k (k = the policy's max_neighbours) from the float32 rows (products of
/// floats summed in double, rounded once to float32); R, the smallest of those, is at most the
/// row's k-th largest rescored cosine. It then rescores every other overlap row whose product
/// cosine is at least R - (b + e), b the row's bound and e the rescoring's own, and the policy
/// chooses among these candidates alone, in ascending overlap order. Why nothing is lost: a
/// row below the cut has a rescored cosine below R, so k rows beat it and it is in no top k.
/// The choice is therefore the top k of the rescored cosines whatever the product, its block
/// heights or the thread count. (R is at least T - (b + e), T the product's k-th largest, so
/// a first pass over the row keeps only rows at or above T - 2 (b + e) for the second.)
///
/// What it costs and changes: the rescored cosines are the float32 rounding of the exact dot of
/// the float32 rows, where the library's float32 product rounds each sum step; the two agree
/// to float32's rounding, so a neighbour set can differ from the float32 path's where two
/// cosines are within that rounding of each other, as often as float32 and float64 disagree.
/// The report's negative_sum_rows comes from the product's own cosines (the policies never
/// read the sum); no_positive_rows from the rescored largest cosine. The engine keeps the
/// normalised overlap rows it prepares the product from (n_overlap x d float32) for the whole
/// synthesis, beside the tile budget, to rescore from.
///
/// A bound of 0 for a row means the product's cosines are final for that row: the policy
/// chooses from the whole row as the float32 path does, nothing is rescored (a product that
/// runs the float32 arithmetic gives the float32 path's output bit for bit).

#include <clp/element_type.hpp>

#include <Eigen/Core>

#include <cmath>
#include <memory>
#include <string>

namespace clp {

/// A similarity product made ready for one synthesis: the overlap's rows are its own now.
class prepared_similarity {
 public:
  virtual ~prepared_similarity() = default;

  /// One block's cosines and their bounds. Called from the synthesis' worker threads at once,
  /// each call with its own `worker` in [0, threads) (so per-worker scratch needs no lock).
  /// @param[in]  queries  rows by d, row-major: normalised helper rows (unit norm, or zero)
  /// @param[in]  rows     the block height, a multiple of 48; rows past the block's are zero
  /// @param[out] cosines  rows by n_overlap, row-major: cosines(i, j) ~ queries_i . overlap_j
  /// @param[out] bound    rows: bound[i] >= |cosines(i, j) - queries_i . overlap_j| for every
  ///                      j, the dot exact, of the float32 rows as given; 0: row i is exact
  virtual void multiply(const float* queries, Index rows, float* cosines, float* bound, int worker) const = 0;
};

/// The customisation point: a similarity product, set in synthesis_options::product. Only
/// weightings of input nearest_cosines use it; the others run the float32 product.
class similarity_product {
 public:
  virtual ~similarity_product() = default;

  /// What the report calls it ("bf16 (oneDNN ...)").
  virtual std::string name() const = 0;

  /// Called once per synthesis, before any block.
  /// @param[in] overlap_rows    n_overlap by d, row-major float32: the normalised overlapping
  ///                            helper rows (unit norm, or zero); valid only during the call
  /// @param[in] max_block_rows  the tallest block multiply will be given
  /// @param[in] threads         workers that will call multiply at once
  virtual std::unique_ptr<prepared_similarity> prepare(const float* overlap_rows, Index n_overlap, Index d,
                                                       Index max_block_rows, int threads) const = 0;
};

/// ||bfloat16(x) - x|| for n floats rounded to bfloat16 (to nearest, ties to even), summed in
/// double: the residual that bf16_cosine_bound takes.
inline double bf16_rounding_residual(const float* x, Index n) {
  double sum = 0;
  for (Index i = 0; i < n; ++i) {
    const double e = double(static_cast<float>(Eigen::bfloat16(x[i]))) - double(x[i]);
    sum += e * e;
  }
  return std::sqrt(sum);
}

/// A bound on |q~ . n~ computed in float32 - q . n| for float32 rows q, n of length d, norms at
/// most q_norm and n_norm, rounded to bfloat16 as q~ = q + dq and n~ = n + dn with
/// ||dq|| <= q_residual and ||dn|| <= n_residual, whatever the order of the float32 sums.
///
/// Derivation: q~ . n~ - q . n = dq . n + q~ . dn, so by Cauchy-Schwarz the rounding of the
/// inputs moves the exact dot by at most q_residual n_norm + (q_norm + q_residual) n_residual.
/// A product of two bfloat16 values (8 significant bits each) is exact in float32 (24 bits);
/// summing d such terms in float32, in any order, errs by at most gamma(d) sum_i |q~_i n~_i|
/// <= gamma(d) ||q~|| ||n~|| (gamma(d) = d u / (1 - d u), u = 2^-24). Round to nearest keeps
/// every element's relative error within 2^-9, so for unit rows the whole bound is at most
/// 2^-9 + (1 + 2^-9) 2^-9 + gamma(d) (1 + 2^-9)^2: 3.97e-3 for d = 1024; the rows' own
/// residuals (about 2^-9 / sqrt(3) each) make it about 2.3e-3 in practice. Inputs below
/// float32's normal range that a bf16 unit flushes to zero move a dot by less than d 2^-126,
/// which the last term covers. The result is rounded up.
inline float bf16_cosine_bound(double q_norm, double q_residual, double n_norm, double n_residual, Index d) {
  const double u = 0x1.0p-24;
  const double gamma = double(d) * u / (1.0 - double(d) * u);
  const double inputs = q_residual * n_norm + (q_norm + q_residual) * n_residual;
  const double sums = gamma * (q_norm + q_residual) * (n_norm + n_residual);
  const double bound = (inputs + sums) * (1 + 0x1.0p-20) + double(d) * 0x1.0p-126;
  return std::nextafter(static_cast<float>(bound), 1.0f);
}

}  // namespace clp
