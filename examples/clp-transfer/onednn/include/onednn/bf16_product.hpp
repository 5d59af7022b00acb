// The bf16 similarity product of `clp-transfer` (built only with oneDNN): each block's
// normalised helper rows rounded to bf16 and multiplied by the overlap's, rounded once and
// reordered into the layout oneDNN's matmul asks for, accumulating in float32; every row's bound
// from the rows' own bf16 residuals (clp::bf16_cosine_bound). The library rescores each row's
// candidates in float32 (<clp/similarity_product.hpp>).
#pragma once

#include <clp/element_type.hpp>
#include <clp/similarity_product.hpp>

#include <Eigen/Core>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace clp_transfer {

using clp::Index;

/// Why oneDNN cannot run a fast bf16 matmul here; empty when it can. oneDNN 2.x has bf16
/// kernels for AVX-512 without bf16 instructions too, but they emulate the products and lose
/// to float32: only avx512_bf16 (Cooper Lake, Zen 4 and later) or AMX count.
inline std::string onednn_bf16_unavailable_reason() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx) return "";
  return "this CPU has neither avx512_bf16 nor AMX";
}

/// ||x|| (`widened` null) or ||widened - x||, in double; `x` and `widened` hold `d` floats each.
inline double bf16_norm_of(const float* x, const float* widened, Index d) {
  double sum = 0;
  for (Index c = 0; c < d; ++c) {
    const double e = widened ? double(widened[c]) - double(x[c]) : double(x[c]);
    sum += e * e;
  }
  return std::sqrt(sum);
}

/// The bf16 product prepared for one overlap: the overlap rounded once; one matmul per block
/// height; per-worker buffers.
class onednn_bf16_prepared final : public clp::prepared_similarity {
 public:
  onednn_bf16_prepared(const float* rows, Index n, Index d, Index block, int threads) : n_(n), d_(d), block_(block) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    std::vector<Eigen::bfloat16> rounded(std::size_t(n * d));
    clp::from_float32(rows, n * d, rounded.data());
    std::vector<float> widened(static_cast<std::size_t>(d));
    for (Index j = 0; j < n; ++j) {
      clp::to_float32(rounded.data() + j * d, d, widened.data());
      overlap_norm_ = std::max(overlap_norm_, bf16_norm_of(rows + j * d, nullptr, d));
      overlap_residual_ = std::max(overlap_residual_, bf16_norm_of(rows + j * d, widened.data(), d));
    }
    primitive_desc_ = describe(block);
    primitive_ = dnnl::matmul(primitive_desc_);
    dnnl::memory user({{d, n}, dt::bf16, tag::ba}, engine_, rounded.data());
    weights_ = dnnl::memory(primitive_desc_.weights_desc(), engine_);
    dnnl::stream stream(engine_);
    dnnl::reorder(user, weights_).execute(stream, user, weights_);
    stream.wait();
    workers_.resize(std::size_t(threads));
  }

  std::string implementation() const { return primitive_desc_.impl_info_str(); }

  void multiply(const float* queries, Index rows, float* cosines, float* bound, int worker) const override {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    buffers& w = workers_[std::size_t(worker)];
    w.queries.resize(std::size_t(rows * d_));
    w.widened.resize(std::size_t(d_));
    clp::from_float32(queries, rows * d_, w.queries.data());
    for (Index i = 0; i < rows; ++i) {
      clp::to_float32(w.queries.data() + i * d_, d_, w.widened.data());
      bound[i] = clp::bf16_cosine_bound(bf16_norm_of(queries + i * d_, nullptr, d_),
                                        bf16_norm_of(queries + i * d_, w.widened.data(), d_), overlap_norm_,
                                        overlap_residual_, d_);
    }
    // Every block has the same height but a caller may pass another: then a matmul of its own.
    const dnnl::matmul::primitive_desc pd = rows == block_ ? primitive_desc_ : describe(rows);
    const dnnl::matmul primitive = rows == block_ ? primitive_ : dnnl::matmul(pd);
    w.scratchpad.resize(pd.scratchpad_desc().get_size() + 64);
    dnnl::stream stream(engine_);
    dnnl::memory a({{rows, d_}, dt::bf16, tag::ab}, engine_, w.queries.data());
    dnnl::memory c({{rows, n_}, dt::f32, tag::ab}, engine_, cosines);
    dnnl::memory scratchpad(pd.scratchpad_desc(), engine_, w.scratchpad.data());
    primitive.execute(
        stream,
        {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
  }

 private:
  struct buffers {
    std::vector<Eigen::bfloat16> queries;
    std::vector<float> widened;
    std::vector<std::byte> scratchpad;
  };

  /// C (rows x n, f32) = A (rows x d, bf16) B^T, the weights in the layout the kernel picks;
  /// each worker brings its own scratchpad, so workers run the primitive at once.
  dnnl::matmul::primitive_desc describe(Index rows) const {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::memory::desc a({rows, d_}, dt::bf16, tag::ab), b({d_, n_}, dt::bf16, tag::any),
        c({rows, n_}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine_);
  }

  Index n_, d_, block_;
  double overlap_norm_ = 0, overlap_residual_ = 0;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::matmul::primitive_desc primitive_desc_;
  dnnl::matmul primitive_;
  dnnl::memory weights_;
  mutable std::vector<buffers> workers_;
};

class onednn_bf16_product final : public clp::similarity_product {
 public:
  std::string name() const override { return "bf16 (oneDNN)"; }

  /// The overlap rounded once (onednn_bf16_prepared).
  using ready = onednn_bf16_prepared;

  std::unique_ptr<clp::prepared_similarity> prepare(const float* rows, Index n, Index d, Index max_block_rows,
                                                    int threads) const override {
    return std::make_unique<ready>(rows, n, d, max_block_rows, threads);
  }
};

}  // namespace clp_transfer
