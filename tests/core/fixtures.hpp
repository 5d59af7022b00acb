// SPDX-License-Identifier: MIT
#pragma once

// Shared test fixtures: the matrix layouts every algorithm is run over (each built from the same
// oracle::matrix), element conversions, and comparisons against the oracle.

// GCC 12 at -O3 -march=native on AVX-512 (the release preset here) reports a false "may be used
// uninitialized" inside Eigen 3.4's own float GEMM packing (ptranspose -> _mm512_undefined_ps).
// Include this header first, so the pragma covers Eigen's headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "support/error_of.hpp"
#include "support/oracle.hpp"

#include <clp/adapters/xtensor.hpp>
#include <clp/clp.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fixtures {

using clp::Index;

template <class T>
T to_scalar(double x) {
  if constexpr (std::is_same_v<T, double>)
    return x;
  else
    return T(static_cast<float>(x));
}

template <class T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, double>)
    return x;
  else
    return double(static_cast<float>(x));
}

/// m with every value rounded to T (what the library reads from a T matrix).
template <class T>
oracle::matrix rounded(const oracle::matrix& m) {
  oracle::matrix r = m;
  for (double& x : r.values) x = to_double(to_scalar<T>(x));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Layouts. Each holds a rows x cols matrix of T, built from an oracle::matrix (or filled with
// one value), exposes get() — the object handed to the algorithms — and at(r, c).

/// Eigen::Matrix, row-major.
template <class T>
struct eigen_row_major {
  using scalar = T;
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m;
  eigen_row_major(Index rows, Index cols, double fill) : m(rows, cols) { m.setConstant(to_scalar<T>(fill)); }
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& get() { return m; }
  double at(Index r, Index c) const { return to_double(m(r, c)); }
  void set(Index r, Index c, double x) { m(r, c) = to_scalar<T>(x); }
};

/// Eigen::Matrix, column-major.
template <class T>
struct eigen_col_major {
  using scalar = T;
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> m;
  eigen_col_major(Index rows, Index cols, double fill) : m(rows, cols) { m.setConstant(to_scalar<T>(fill)); }
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>& get() { return m; }
  double at(Index r, Index c) const { return to_double(m(r, c)); }
  void set(Index r, Index c, double x) { m(r, c) = to_scalar<T>(x); }
};

/// An Eigen block inside a larger row-major matrix: outer stride cols + 5, offset (1, 2).
/// The border is filled with a sentinel that must survive every algorithm.
template <class T>
struct eigen_block {
  using scalar = T;
  static constexpr double border = -777.0;
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> big;
  Index rows, cols;
  eigen_block(Index r, Index c, double fill) : big(r + 3, c + 5), rows(r), cols(c) {
    big.setConstant(to_scalar<T>(border));
    get().setConstant(to_scalar<T>(fill));
  }
  auto get() { return big.block(1, 2, rows, cols); }
  double at(Index r, Index c) const { return to_double(big(r + 1, c + 2)); }
  void set(Index r, Index c, double x) { big(r + 1, c + 2) = to_scalar<T>(x); }
  bool border_intact() const {
    for (Index r = 0; r < big.rows(); ++r)
      for (Index c = 0; c < big.cols(); ++c) {
        const bool inside = r >= 1 && r < rows + 1 && c >= 2 && c < cols + 2;
        if (!inside && to_double(big(r, c)) != border) return false;
      }
    return true;
  }
};

/// xt::xtensor<T, 2>, row-major.
template <class T>
struct xtensor_matrix {
  using scalar = T;
  xt::xtensor<T, 2> m;
  xtensor_matrix(Index rows, Index cols, double fill)
      : m(std::array<std::size_t, 2>{std::size_t(rows), std::size_t(cols)}, to_scalar<T>(fill)) {}
  xt::xtensor<T, 2>& get() { return m; }
  double at(Index r, Index c) const { return to_double(m(std::size_t(r), std::size_t(c))); }
  void set(Index r, Index c, double x) { m(std::size_t(r), std::size_t(c)) = to_scalar<T>(x); }
};

/// A raw column-major buffer with padding (outer stride rows + 7), seen through clp::matrix_view.
template <class T>
struct raw_buffer {
  using scalar = T;
  static constexpr Index padding = 7;
  std::vector<T> buffer;
  Index rows, cols;
  raw_buffer(Index r, Index c, double fill)
      : buffer(std::size_t((r + padding) * c), to_scalar<T>(fill)), rows(r), cols(c) {}
  clp::matrix_view<T> get() { return {buffer.data(), rows, cols, rows + padding, clp::storage_order::column_major}; }
  double at(Index r, Index c) const { return to_double(buffer[std::size_t(c * (rows + padding) + r)]); }
  void set(Index r, Index c, double x) { buffer[std::size_t(c * (rows + padding) + r)] = to_scalar<T>(x); }
};

/// A layout L holding the values of m.
template <class L>
L make(const oracle::matrix& m) {
  L l(m.rows, m.cols, 0.0);
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c) l.set(r, c, m(r, c));
  return l;
}

/// The values of a layout, as doubles.
template <class L>
oracle::matrix values_of(const L& l, Index rows, Index cols) {
  oracle::matrix m(rows, cols);
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) m(r, c) = l.at(r, c);
  return m;
}

/// Two Eigen matrices hold the same bytes (bit-identity, NaN payloads and signed zeros included).
template <class M>
bool same_bits(const M& a, const M& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(typename M::Scalar) * std::size_t(a.size())) == 0;
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// max over rows of ||got(t) - want(t)|| / ||want(t)|| (absolute where want(t) is zero).
inline double max_relative_row_error(const oracle::matrix& got, const oracle::matrix& want,
                                     const std::vector<Index>& rows, Index* worst = nullptr) {
  double max_error = 0;
  for (Index t : rows) {
    double diff = 0, ref = 0;
    for (Index c = 0; c < want.cols; ++c) {
      const double d = got(t, c) - want(t, c);
      diff += d * d;
      ref += want(t, c) * want(t, c);
    }
    const double e = ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
    if (!(e <= max_error)) {  // NaN counts as the worst
      max_error = std::isnan(e) ? INFINITY : e;
      if (worst) *worst = t;
    }
  }
  return max_error;
}

/// The message of the clp::error thrown by f, or "" when f throws nothing (tests/support).
using clp_test::error_of;

/// A copy of the Error a call throws, or nullopt (tests/support).
using clp_test::thrown;

/// synthesis_options by field name (the struct grows; positional braces would break).
inline clp::synthesis_options options(int threads, std::size_t tile_bytes, Index first_row = 0, Index last_row = -1) {
  clp::synthesis_options o;
  o.threads = threads;
  o.tile_bytes = tile_bytes;
  o.first_row = first_row;
  o.last_row = last_row;
  return o;
}

/// A vocabulary_overlap from explicit ids (the vocabulary sizes set to the row counts).
inline clp::vocabulary_overlap make_overlap(std::vector<Index> target_ids, std::vector<Index> source_ids,
                                            Index target_rows, Index source_rows) {
  clp::vocabulary_overlap o;
  o.target_ids = std::move(target_ids);
  o.source_ids = std::move(source_ids);
  for (Index t = 0, i = 0; t < target_rows; ++t) {
    if (i < Index(o.target_ids.size()) && o.target_ids[std::size_t(i)] == t)
      ++i;
    else
      o.missing_ids.push_back(t);
  }
  o.source_vocab_size = source_rows;
  o.target_vocab_size = target_rows;
  return o;
}

/// An overlap of `n_overlap` target ids spread over [0, target_rows) (every
/// target_rows / n_overlap-th id, roughly) mapped to a scattered permutation of source ids.
inline clp::vocabulary_overlap spread_overlap(Index n_overlap, Index target_rows, Index source_rows) {
  std::vector<Index> target_ids, source_ids;
  for (Index i = 0; i < n_overlap; ++i) {
    target_ids.push_back(i * target_rows / n_overlap);
    source_ids.push_back((i * 7919 + 13) % source_rows);
  }
  return make_overlap(std::move(target_ids), std::move(source_ids), target_rows, source_rows);
}

inline oracle::policy oracle_policy(const clp::weighting& w) {
  return std::visit(
      [](const auto& p) -> oracle::policy {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, clp::paper_weights>)
          return {oracle::kind::paper};
        else if constexpr (std::is_same_v<P, clp::guarded_paper_weights>)
          return {oracle::kind::paper_guarded, 0, 0, p.min_sum_ratio};
        else if constexpr (std::is_same_v<P, clp::clamped_weights>)
          return {oracle::kind::clamped};
        else if constexpr (std::is_same_v<P, clp::top_k_weights>)
          return {oracle::kind::top_k, p.k};
        else if constexpr (std::is_same_v<P, clp::softmax_weights>)
          return {oracle::kind::softmax, p.k, double(p.temperature)};
        else if constexpr (std::is_same_v<P, clp::omp_weights>) {
          oracle::policy o{oracle::kind::omp, p.k};
          o.tolerance = p.tolerance;
          return o;
        } else if constexpr (std::is_same_v<P, clp::least_squares_map>) {
          throw std::logic_error("the least-squares map has its own oracle (oracle::least_squares_map)");
        } else {
          static_assert(std::is_same_v<P, clp::sparsemax_weights>, "a policy the oracle does not know");
          return {oracle::kind::sparsemax};
        }
      },
      w);
}

inline std::string name_of(const clp::weighting& w) {
  static const char* names[] = {"paper",     "clamped",       "top-k", "softmax",
                                "sparsemax", "paper-guarded", "omp",   "least-squares"};
  return names[w.index()];
}

/// One of each policy, with a small k so top-k and softmax differ from the dense policies.
inline std::vector<clp::weighting> every_policy() {
  return {clp::paper_weights{},          clp::clamped_weights{},   clp::top_k_weights{7},
          clp::softmax_weights{7, 0.1f}, clp::sparsemax_weights{}, clp::guarded_paper_weights{}};
}

}  // namespace fixtures

// Vectors print their elements in failed checks.
namespace doctest {
template <class T, class A>
struct StringMaker<std::vector<T, A>> {
  static String convert(const std::vector<T, A>& v) {
    std::string s = "{";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i == 12 && v.size() > 16) {
        s += ", ... (" + std::to_string(v.size()) + " elements)";
        break;
      }
      s += (i ? ", " : "") + std::string(toString(v[i]).c_str());
    }
    return (s + "}").c_str();
  }
};
}  // namespace doctest

TYPE_TO_STRING(fixtures::eigen_row_major<float>);
TYPE_TO_STRING(fixtures::eigen_row_major<double>);
TYPE_TO_STRING(fixtures::eigen_row_major<Eigen::bfloat16>);
TYPE_TO_STRING(fixtures::eigen_col_major<float>);
TYPE_TO_STRING(fixtures::eigen_col_major<double>);
TYPE_TO_STRING(fixtures::eigen_block<float>);
TYPE_TO_STRING(fixtures::eigen_block<double>);
TYPE_TO_STRING(fixtures::xtensor_matrix<float>);
TYPE_TO_STRING(fixtures::xtensor_matrix<double>);
TYPE_TO_STRING(fixtures::raw_buffer<float>);
TYPE_TO_STRING(fixtures::raw_buffer<double>);
TYPE_TO_STRING(fixtures::raw_buffer<Eigen::bfloat16>);

/// Every layout in float and double: the list the algorithm tests run over.
#define CLP_TEST_LAYOUTS                                                                                 \
  fixtures::eigen_row_major<float>, fixtures::eigen_row_major<double>, fixtures::eigen_col_major<float>, \
      fixtures::eigen_col_major<double>, fixtures::eigen_block<float>, fixtures::eigen_block<double>,    \
      fixtures::xtensor_matrix<float>, fixtures::xtensor_matrix<double>, fixtures::raw_buffer<float>,    \
      fixtures::raw_buffer<double>

/// bfloat16 storage, in a row-major Eigen matrix and a padded column-major raw buffer.
#define CLP_TEST_BF16_LAYOUTS fixtures::eigen_row_major<Eigen::bfloat16>, fixtures::raw_buffer<Eigen::bfloat16>
