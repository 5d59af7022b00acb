// SPDX-License-Identifier: MIT
// clp/adapters/torch.hpp: torch::Tensor in and out. Every dtype and every layout a trainer holds
// (contiguous, transposed, narrowed, a parameter and its .data()) against the double-precision
// oracle, and bit for bit against the same clp::synthesize_rows call through Eigen maps made by hand
// over the same memory; in-place writes into strided views; every refusal; the autograd rules.
//
// One translation unit, and ATen's per-operator headers rather than <torch/torch.h>: libtorch's
// headers are most of this suite's compile time.

#include <ATen/core/Tensor.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

// libtorch's headers bring glog's CHECK macros (an abort on failure); doctest's CHECK must be
// the one these tests use, so glog's go before doctest defines its own.
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>

#include "support/error_of.hpp"
#include "support/oracle.hpp"

#include <clp/adapters/torch.hpp>
#include <clp/clp.hpp>
#include <clp/finite.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using clp::Index;
using clp_test::error_of;

namespace {

template <class T>
at::ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return at::kFloat;
  else if constexpr (std::is_same_v<T, double>)
    return at::kDouble;
  else if constexpr (std::is_same_v<T, Eigen::half>)
    return at::kHalf;
  else
    return at::kBFloat16;
}

/// Largest relative row error a dtype's output may have against the oracle: float32 arithmetic
/// (every type is computed in float32), then rounding to the output's type (2^-11 for half, 2^-8
/// for bfloat16), with room for the inputs' own rounding showing up in the cosines.
template <class T>
double tolerance_of() {
  if constexpr (std::is_same_v<T, Eigen::half>)
    return 1e-3;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>)
    return 8e-3;
  else
    return 1e-5;
}

/// The values of a 1-D or 2-D tensor of any layout and dtype, as an oracle matrix (1-D: n by 1).
oracle::matrix matrix_of(const at::Tensor& t) {
  const at::Tensor doubles = t.to(at::kDouble).contiguous();
  oracle::matrix m(doubles.size(0), doubles.dim() == 2 ? doubles.size(1) : 1);
  std::copy(doubles.data_ptr<double>(), doubles.data_ptr<double>() + doubles.numel(), m.values.begin());
  return m;
}

/// m rounded to dtype, as a contiguous tensor of that dtype (a copy: never the oracle's memory).
at::Tensor tensor_of(const oracle::matrix& m, at::ScalarType dtype) {
  auto* values = const_cast<double*>(m.values.data());  // from_blob takes void*; only read here
  return at::from_blob(values, {m.rows, m.cols}, at::kDouble).to(dtype, /*non_blocking=*/false, /*copy=*/true);
}

/// How a matrix lies in memory.
enum class layout { contiguous, transposed, narrowed, narrowed_transposed, parameter };
constexpr layout every_layout[] = {layout::contiguous, layout::transposed, layout::narrowed,
                                   layout::narrowed_transposed, layout::parameter};

const char* name_of(layout l) {
  switch (l) {
    case layout::contiguous:
      return "contiguous";
    case layout::transposed:
      return "transposed (column-major)";
    case layout::narrowed:
      return "narrowed (row-major, padded)";
    case layout::narrowed_transposed:
      return "narrowed and transposed (column-major, padded)";
    case layout::parameter:
      break;
  }
  return "parameter (requires grad; an output goes through .data())";
}

constexpr double sentinel = -768.0;  // exact in every dtype, bfloat16 included

/// A tensor handed to the library and the contiguous tensor that owns its memory (with a
/// border of sentinels around the narrowed layouts, which no write may touch).
struct laid_out {
  at::Tensor owner;
  at::Tensor tensor;
};

/// The values of m in dtype, laid out as l. An output of the parameter layout is the
/// parameter's .data(); an input is the parameter itself (reading one needs no guard).
laid_out lay_out(const oracle::matrix& m, at::ScalarType dtype, layout l, bool as_output = false) {
  const at::Tensor values = tensor_of(m, dtype);
  const Index rows = m.rows, cols = m.cols;
  laid_out out;
  switch (l) {
    case layout::contiguous:
      out.owner = values;
      out.tensor = out.owner;
      break;
    case layout::transposed:  // strides (1, rows)
      out.owner = values.t().contiguous();
      out.tensor = out.owner.t();
      break;
    case layout::narrowed:  // strides (cols + 5, 1), from (1, 2)
      out.owner = at::full({rows + 3, cols + 5}, sentinel, at::TensorOptions().dtype(dtype));
      out.tensor = out.owner.narrow(0, 1, rows).narrow(1, 2, cols);
      out.tensor.copy_(values);
      break;
    case layout::narrowed_transposed:  // strides (1, rows + 3), from (1, 2)
      out.owner = at::full({cols + 5, rows + 3}, sentinel, at::TensorOptions().dtype(dtype));
      out.tensor = out.owner.narrow(0, 2, cols).narrow(1, 1, rows).t();
      out.tensor.copy_(values);
      break;
    case layout::parameter:
      out.owner = values;
      out.owner.set_requires_grad(true);
      out.tensor = as_output ? out.owner.data() : out.owner;
      break;
  }
  return out;
}

/// Two tensors hold the same bytes (both contiguous owners of the same shape and dtype).
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && a.is_contiguous() && b.is_contiguous() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

/// How many elements of a tensor are the sentinel.
Index sentinels_in(const at::Tensor& t) {
  const oracle::matrix m = matrix_of(t);
  return Index(std::count(m.values.begin(), m.values.end(), sentinel));
}

/// Calls f with an Eigen::Map over t's memory, made here from t's strides (not by the
/// adapter): row-major when the column stride is 1 (a 1-D tensor is n by 1), else column-major.
template <class T, bool Writable, class F>
void with_eigen_map(const at::Tensor& t, F&& f) {
  using row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using column_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using element = std::conditional_t<Writable, T, const T>;
  auto* data = static_cast<element*>(t.data_ptr());
  const Index rows = t.size(0), cols = t.dim() == 2 ? t.size(1) : 1;
  if (t.dim() == 1 || t.stride(1) == 1) {
    Eigen::Map<std::conditional_t<Writable, row_major, const row_major>, 0, Eigen::OuterStride<>> map(
        data, rows, cols, Eigen::OuterStride<>(t.stride(0)));
    f(map);
  } else {
    Eigen::Map<std::conditional_t<Writable, column_major, const column_major>, 0, Eigen::OuterStride<>> map(
        data, rows, cols, Eigen::OuterStride<>(t.stride(1)));
    f(map);
  }
}

/// max over rows of |got_r - want_r| / |want_r| (Euclidean), over the rows listed.
double max_relative_row_error(const oracle::matrix& got, const oracle::matrix& want, const std::vector<Index>& rows) {
  double worst = 0;
  for (const Index r : rows) {
    double difference = 0, reference = 0;
    for (Index c = 0; c < want.cols; ++c) {
      difference += (got(r, c) - want(r, c)) * (got(r, c) - want(r, c));
      reference += want(r, c) * want(r, c);
    }
    const double error = std::sqrt(reference > 0 ? difference / reference : difference);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

/// A small transfer: 50 source tokens "t0".."t49" (d_source 20), 60 target tokens (d_helper 12):
/// even ids 0..58 are source tokens (in a scrambled order), odd ids are new.
struct problem {
  oracle::matrix source = oracle::random_embeddings(50, 20, 0.5, 211);      ///< #source by d_source
  oracle::matrix helper = oracle::random_embeddings(60, 12, 1.0, 212);      ///< #target by d_helper
  oracle::matrix source_bias = oracle::random_embeddings(50, 1, 0.0, 213);  ///< #source by 1
  clp::vocabulary_overlap overlap;
  clp::synthesis_options options;

  problem() {
    std::vector<std::string> source_vocab, target_vocab;
    for (int i = 0; i < 50; ++i) source_vocab.push_back("t" + std::to_string(i));
    for (int i = 0; i < 60; ++i)
      target_vocab.push_back(i % 2 == 0 ? "t" + std::to_string((i / 2 * 7) % 50) : "new" + std::to_string(i));
    overlap = clp::intersect_vocabularies(source_vocab, target_vocab, {50, 60, {}});
    options.threads = 2;
  }

  /// The oracle's output for the inputs rounded to dtype, and the rows float32 may decide
  /// either way (near-tied k-th neighbours) left out of `rows`.
  oracle::result want(const oracle::matrix& source, at::ScalarType dtype, std::vector<Index>& rows) const {
    oracle::policy top_5;
    top_5.which = oracle::kind::top_k;
    top_5.k = 5;
    oracle::result result =
        oracle::synthesize(matrix_of(tensor_of(helper, dtype)), overlap.target_ids, overlap.source_ids,
                           overlap.missing_ids, matrix_of(tensor_of(source, dtype)), top_5, 1e-4);
    rows.clear();
    for (Index t = 0; t < 60; ++t)
      if (!std::binary_search(result.ambiguous.begin(), result.ambiguous.end(), t)) rows.push_back(t);
    return result;
  }
};

}  // namespace

TEST_CASE_TEMPLATE("torch adapter: every layout of every dtype, against the oracle and bit for bit against Eigen maps",
                   T, float, double, Eigen::half, Eigen::bfloat16) {
  const problem p;
  const at::ScalarType dtype = dtype_of<T>();
  std::vector<Index> rows;
  const oracle::result want = p.want(p.source, dtype, rows);
  REQUIRE(rows.size() > 50);
  const oracle::matrix blank(60, 20, sentinel);

  for (const layout in : every_layout) {
    for (const layout out : every_layout) {
      INFO("inputs " << std::string(name_of(in)) << ", output " << std::string(name_of(out)));
      const laid_out source = lay_out(p.source, dtype, in), helper = lay_out(p.helper, dtype, in);
      laid_out by_torch = lay_out(blank, dtype, out, /*as_output=*/true);
      laid_out by_eigen = lay_out(blank, dtype, out, /*as_output=*/true);

      const clp::synthesis_report report = clp::synthesize_rows(source.tensor, helper.tensor, p.overlap,
                                                                by_torch.tensor, clp::top_k_weights{5}, p.options);
      CHECK(report.copied_rows == 30);
      CHECK(report.synthesized_rows == 30);

      with_eigen_map<T, false>(source.tensor, [&](auto& source_map) {
        with_eigen_map<T, false>(helper.tensor, [&](auto& helper_map) {
          with_eigen_map<T, true>(by_eigen.tensor, [&](auto& output_map) {
            clp::synthesize_rows(source_map, helper_map, p.overlap, output_map, clp::top_k_weights{5}, p.options);
          });
        });
      });

      // The same bytes everywhere in the owning memory: the rows, and the untouched border.
      CHECK(same_bits(by_torch.owner, by_eigen.owner));
      CHECK(sentinels_in(by_torch.owner) == by_torch.owner.numel() - 60 * 20);
      CHECK(max_relative_row_error(matrix_of(by_torch.tensor), want.output, rows) <= tolerance_of<T>());
      // Reading a parameter that requires grad needs no guard, and leaves it as it was.
      if (in == layout::parameter) CHECK(source.tensor.requires_grad());
    }
  }
}

TEST_CASE_TEMPLATE("torch adapter: a 1-D per-token bias is #vocab by 1, written in place into a strided column", T,
                   float, double, Eigen::half, Eigen::bfloat16) {
  const problem p;
  const at::ScalarType dtype = dtype_of<T>();
  std::vector<Index> rows;
  const oracle::result want = p.want(p.source_bias, dtype, rows);

  const at::Tensor source = tensor_of(p.source, dtype), helper = tensor_of(p.helper, dtype);
  const at::Tensor source_bias = tensor_of(p.source_bias, dtype).squeeze(1);  // 1-D, 50 values
  REQUIRE(source_bias.dim() == 1);
  // The outputs' bias: column 1 of a 60 x 3 tensor of sentinels, a 1-D view with stride 3.
  const at::Tensor torch_holder = at::full({60, 3}, sentinel, at::TensorOptions().dtype(dtype));
  const at::Tensor eigen_holder = torch_holder.clone();
  at::Tensor output = at::zeros({60, 20}, at::TensorOptions().dtype(dtype)), eigen_output = output.clone();
  REQUIRE(torch_holder.select(1, 1).stride(0) == 3);

  clp::synthesize_rows(source, helper, p.overlap, output,
                       clp::matrix_pairs{{"bias", source_bias, torch_holder.select(1, 1)}}, clp::top_k_weights{5},
                       p.options);

  with_eigen_map<T, false>(source, [&](auto& source_map) {
    with_eigen_map<T, false>(helper, [&](auto& helper_map) {
      with_eigen_map<T, false>(source_bias, [&](auto& bias_map) {
        with_eigen_map<T, true>(eigen_output, [&](auto& output_map) {
          with_eigen_map<T, true>(eigen_holder.select(1, 1), [&](auto& output_bias_map) {
            clp::synthesize_rows(source_map, helper_map, p.overlap, output_map,
                                 clp::matrix_pairs{{"bias", bias_map, output_bias_map}}, clp::top_k_weights{5},
                                 p.options);
          });
        });
      });
    });
  });

  CHECK(same_bits(torch_holder, eigen_holder));
  CHECK(same_bits(output, eigen_output));
  CHECK(sentinels_in(torch_holder) == 2 * 60);  // columns 0 and 2 untouched
  CHECK(max_relative_row_error(matrix_of(torch_holder.select(1, 1)), want.output, rows) <= tolerance_of<T>());
}

TEST_CASE("torch adapter: what each layout becomes") {
  static_assert(
      std::is_same_v<decltype(clp::make_view(std::declval<const at::Tensor&>())), clp::matrix_view<const void>>,
      "a const tensor is an input");
  static_assert(std::is_same_v<decltype(clp::make_view(std::declval<at::Tensor&>())), clp::matrix_view<void>>,
                "a tensor is an output");
  const at::Tensor m = at::zeros({10, 8});
  const auto* base = static_cast<const float*>(m.data_ptr());
  const auto check = [](const clp::matrix_view<const void>& v, Index rows, Index cols, Index outer,
                        clp::storage_order order, const void* data) {
    CHECK(v.rows() == rows);
    CHECK(v.cols() == cols);
    CHECK(v.outer_stride() == outer);
    CHECK(v.order() == order);
    if (rows * cols > 0) CHECK(v.data() == data);  // libtorch gives an empty tensor no pointer
  };
  using clp::storage_order;
  const auto view_of = [](const at::Tensor& t) { return clp::make_view(t); };
  check(view_of(m), 10, 8, 8, storage_order::row_major, base);
  check(view_of(m.t()), 8, 10, 8, storage_order::column_major, base);
  check(view_of(m.narrow(0, 2, 5)), 5, 8, 8, storage_order::row_major, base + 16);
  check(view_of(m.narrow(1, 3, 4)), 10, 4, 8, storage_order::row_major, base + 3);
  check(view_of(m.narrow(1, 3, 4).t()), 4, 10, 8, storage_order::column_major, base + 3);
  check(view_of(m.select(1, 2)), 10, 1, 8, storage_order::row_major, base + 2);     // 1-D, stride 8
  check(view_of(m.select(0, 2)), 8, 1, 1, storage_order::row_major, base + 16);     // 1-D
  check(view_of(m.narrow(0, 4, 1)), 1, 8, 8, storage_order::row_major, base + 32);  // one row
  check(view_of(m.narrow(0, 4, 1).t()), 8, 1, 1, storage_order::row_major, base + 32);
  check(view_of(m.select(1, 5).unsqueeze(1)), 10, 1, 8, storage_order::row_major, base + 5);
  check(view_of(m.narrow(0, 0, 0)), 0, 8, 8, storage_order::row_major, base);
  // A 1-D slice with a step is still n by 1 (its rows are simply further apart).
  check(view_of(m.select(1, 0).slice(0, 0, 10, 2)), 5, 1, 16, storage_order::row_major, base);

  CHECK(view_of(at::zeros({2, 2}, at::kFloat)).type() == clp::element_type::float32);
  CHECK(view_of(at::zeros({2, 2}, at::kDouble)).type() == clp::element_type::float64);
  CHECK(view_of(at::zeros({2, 2}, at::kHalf)).type() == clp::element_type::float16);
  CHECK(view_of(at::zeros({2, 2}, at::kBFloat16)).type() == clp::element_type::bfloat16);
}

TEST_CASE("torch adapter: the other entry points take tensors too: the NaN screen, the baselines, the k-NN overlap") {
  const problem p;
  // A NaN at (3, 1) of a bfloat16 matrix stored column-major: found where it is.
  const at::Tensor helper = lay_out(p.helper, at::kBFloat16, layout::narrowed_transposed).tensor;
  helper.select(0, 3).select(0, 1).fill_(std::nan(""));
  const std::optional<clp::matrix_position> found = clp::find_non_finite(helper);
  REQUIRE(found.has_value());
  CHECK(found->row == 3);
  CHECK(found->column == 1);
  CHECK_THROWS_AS(clp::synthesize_rows(tensor_of(p.source, at::kFloat), helper, p.overlap, at::zeros({60, 20})),
                  clp::non_finite_input);

  // copy_overlap_rows copies exactly (same dtype), into a transposed float16 output.
  const at::Tensor source = tensor_of(p.source, at::kHalf);
  at::Tensor copied = at::full({20, 60}, sentinel, at::kHalf).t();
  clp::copy_overlap_rows(source, p.overlap, copied);
  for (std::size_t i = 0; i < p.overlap.target_ids.size(); ++i)
    CHECK(copied.select(0, p.overlap.target_ids[i]).equal(source.select(0, p.overlap.source_ids[i])));
  CHECK(sentinels_in(copied) == 30 * 20);  // the missing rows

  // A matrix's k-NN overlap with itself, float64 against its float32 transpose's transpose: 1.
  const at::Tensor embeddings = tensor_of(p.source, at::kDouble);
  CHECK(
      clp::knn_overlap(embeddings, embeddings.to(at::kFloat).t().contiguous().t(), clp::knn_options{5}).mean_overlap ==
      doctest::Approx(1.0));
}

TEST_CASE("torch adapter: what cannot be viewed without a copy is refused, saying why and what to do") {
  using clp::unsupported_layout;
  const auto read = [](const at::Tensor& t) { return [t] { clp::make_view(t); }; };

  // No tensor at all.
  const std::string undefined = error_of<clp::invalid_argument>(read(at::Tensor()));
  CHECK(undefined == "clp::make_view: torch::Tensor is undefined (default-constructed): there is no matrix to view");

  // Another device. This libtorch may have no CUDA, so the device check is driven by a tensor
  // on the meta device (shape and dtype, no memory), which takes the same path as CUDA's.
  const at::Tensor on_meta = at::empty({5, 4}, at::TensorOptions().device(at::kMeta));
  CHECK(error_of<unsupported_layout>(read(on_meta)) ==
        "clp::make_view: torch::Tensor of dtype Float and shape [5, 4] on meta: the library reads and writes CPU "
        "memory only; bring the tensor over with .cpu() (a copy you can see) and, for an output, copy the result "
        "back with tensor.copy_(cpu_result) inside a torch::NoGradGuard scope");
  try {
    read(on_meta)();
    FAIL("no error");
  } catch (const clp::error& e) {
    CHECK(e.kind() == clp::error_kind::unsupported_layout);
    CHECK(e.facts().context == "clp::make_view");
  }

  // Other dtypes.
  CHECK(error_of<unsupported_layout>(read(at::zeros({5, 4}, at::kInt))) ==
        "clp::make_view: torch::Tensor of dtype Int and shape [5, 4] on cpu: the library reads float32, float64, "
        "float16 (Half) and bfloat16 (BFloat16) elements; convert it with .to(torch::kFloat), a copy you can see");
  CHECK(error_of<unsupported_layout>(read(at::zeros({5}, at::kLong))).find("dtype Long") != std::string::npos);
  CHECK(error_of<unsupported_layout>(read(at::zeros({5, 4}, at::kComplexFloat))).find("dtype ComplexFloat") !=
        std::string::npos);

  // Not a strided array, or memory that holds something else than the values.
  CHECK(error_of<unsupported_layout>(read(at::eye(3).to_sparse())).find("has layout Sparse") != std::string::npos);
  CHECK(error_of<unsupported_layout>(read(at::_neg_view(at::eye(3)))).find(".resolve_neg()") != std::string::npos);

  // Not a matrix.
  CHECK(error_of<unsupported_layout>(read(at::zeros({2, 3, 4}))) ==
        "clp::make_view: torch::Tensor of dtype Float and shape [2, 3, 4] on cpu: is 3-D; the library takes a "
        "matrix (#rows by cols) or a 1-D vector of a value per row (#rows by 1): reshape it to 2-D first (.reshape "
        "or .flatten, a view when its strides allow)");
  CHECK(error_of<unsupported_layout>(read(at::scalar_tensor(1.0))).find("is 0-D") != std::string::npos);

  // Strides no strided matrix has: an inner stride other than 1, and rows that overlap.
  CHECK(error_of<unsupported_layout>(read(at::zeros({6, 8}).slice(1, 0, 8, 2))) ==
        "clp::make_view: torch::Tensor of dtype Float and shape [6, 4] on cpu: has strides (8, 2): neither dimension "
        "is contiguous (an inner stride other than 1, a slice with a step), so it cannot be viewed as a matrix; "
        ".contiguous() makes a copy you can see");
  CHECK(error_of<unsupported_layout>(read(at::zeros({1, 4}).expand({5, 4}))).find("its rows overlap") !=
        std::string::npos);
  CHECK(error_of<unsupported_layout>(read(at::zeros({4, 1}).expand({4, 5}))).find("its columns overlap") !=
        std::string::npos);
  CHECK(error_of<unsupported_layout>(read(at::zeros({1}).expand({5}))).find("its rows overlap") != std::string::npos);
}

TEST_CASE("torch adapter: a refused tensor in a transfer writes nothing") {
  const problem p;
  const at::Tensor source = tensor_of(p.source, at::kFloat), helper = tensor_of(p.helper, at::kFloat);
  at::Tensor output = at::full({60, 20}, sentinel);
  // The helper on another device, then a helper whose rows are not contiguous either way.
  const at::Tensor on_meta = at::empty({60, 12}, at::TensorOptions().device(at::kMeta));
  CHECK_THROWS_AS(clp::synthesize_rows(source, on_meta, p.overlap, output, clp::top_k_weights{5}),
                  clp::unsupported_layout);
  CHECK_THROWS_AS(clp::synthesize_rows(source, at::zeros({60, 24}).slice(1, 0, 24, 2), p.overlap, output),
                  clp::unsupported_layout);
  CHECK(sentinels_in(output) == 60 * 20);
}

TEST_CASE("torch adapter: writing a tensor autograd tracks follows PyTorch's rule for in-place operations") {
  const problem p;
  const at::Tensor source = tensor_of(p.source, at::kFloat), helper = tensor_of(p.helper, at::kFloat);
  at::Tensor parameter = at::zeros({60, 20});
  parameter.set_requires_grad(true);
  REQUIRE(c10::GradMode::is_enabled());

  // Gradient mode on: the parameter, and a view of it (a non-leaf that requires grad), are refused.
  const std::string refused =
      error_of<clp::invalid_argument>([&] { clp::synthesize_rows(source, helper, p.overlap, parameter); });
  CHECK(refused ==
        "clp::make_view: torch::Tensor of dtype Float and shape [60, 20] on cpu requires grad and gradient mode is "
        "on: writing it in place would change it behind autograd's back (PyTorch refuses in-place operations on a "
        "leaf that requires grad for the same reason); write it inside a torch::NoGradGuard scope, as "
        "torch::nn::init does");
  CHECK(error_of<clp::invalid_argument>([&] {
          clp::synthesize_rows(source, helper, p.overlap, parameter.narrow(1, 0, 20));
        }).find("requires grad") != std::string::npos);
  CHECK(matrix_of(parameter).values == oracle::matrix(60, 20).values);  // nothing written

  // Inside torch::NoGradGuard (c10::NoGradGuard) it is written, and its version counter moves,
  // as an in-place operation moves it.
  const auto version = parameter._version();
  {
    const c10::NoGradGuard no_grad;
    clp::synthesize_rows(source, helper, p.overlap, parameter, clp::top_k_weights{5});
  }
  CHECK(parameter._version() > version);
  CHECK(parameter.requires_grad());
  CHECK(sentinels_in(parameter) == 0);
  CHECK(matrix_of(parameter).values != oracle::matrix(60, 20).values);

  // .detach() shares the counter (the write is seen); .data() has its own (PyTorch's rule: it is
  // how one hides a write from autograd). Neither requires grad, so neither needs the guard.
  const auto before_detach = parameter._version();
  clp::synthesize_rows(source, helper, p.overlap, parameter.detach(), clp::top_k_weights{5});
  CHECK(parameter._version() > before_detach);
  const auto before_data = parameter._version();
  clp::synthesize_rows(source, helper, p.overlap, parameter.data(), clp::top_k_weights{5});
  CHECK(parameter._version() == before_data);
}

TEST_CASE("torch adapter: a backward pass through values saved before the write fails instead of lying") {
  const problem p;
  const at::Tensor source = tensor_of(p.source, at::kFloat), helper = tensor_of(p.helper, at::kFloat);
  at::Tensor parameter = at::ones({60, 20});
  parameter.set_requires_grad(true);
  const at::Tensor loss = parameter.mul(parameter).sum();  // saves `parameter` for its gradient
  {
    const c10::NoGradGuard no_grad;
    clp::synthesize_rows(source, helper, p.overlap, parameter, clp::top_k_weights{5});
  }
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("modified by an inplace operation"), c10::Error);
}

TEST_CASE("torch adapter: an inference tensor is written inside c10::InferenceMode only, as PyTorch's rule says") {
  const problem p;
  const at::Tensor source = tensor_of(p.source, at::kFloat), helper = tensor_of(p.helper, at::kFloat);
  at::Tensor output;
  {
    const c10::InferenceMode inference;
    output = at::zeros({60, 20});
  }
  REQUIRE(output.is_inference());
  CHECK(error_of<clp::invalid_argument>([&] {
          clp::synthesize_rows(source, helper, p.overlap, output);
        }).find("is an inference tensor and inference mode is off") != std::string::npos);
  {
    const c10::InferenceMode inference;
    clp::synthesize_rows(source, helper, p.overlap, output, clp::top_k_weights{5});
  }
  CHECK(matrix_of(output).values != oracle::matrix(60, 20).values);
  // Reading one is always allowed.
  at::Tensor copy = at::zeros({60, 20});
  clp::copy_overlap_rows(output, p.overlap, copy);
}
