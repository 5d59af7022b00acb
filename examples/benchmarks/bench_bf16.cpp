// SPDX-License-Identifier: MIT
//
// bench_bf16: does a BF16 similarity product pay?
//
// The top-k weighting (the program's default) spends its only large product on the cosines
// C = Q N^T of each block of missing rows: Q the block's normalised helper rows (480 x d),
// N the normalised overlapping helper rows (|overlap| x d). This program measures
//
//   --gemm       the 4096^3 ceilings: float32 (Eigen + OpenBLAS, as the programs are built)
//                and bf16 x bf16 -> float32 (oneDNN), all threads;
//   --speed      that product over all blocks, as synthesize.hpp runs it (blocks of at most 480
//                rows, each worker a single-threaded float32 product panel by panel of 512
//                overlap rows), against oneDNN bf16 x bf16 -> f32 matmuls of the same blocks
//                (Q converted to bf16 per block inside the timing; N converted once, outside
//                the timing and, in a second figure, inside it);
//   --agreement  for two real model folders (the program's own vocabulary matching and
//                embedding reader), how often each missing row's top-k neighbours and top-k
//                weights differ between float32 cosines and cosines from bf16-rounded
//                normalised rows with float accumulation (optionally both against float64).
//
// Where this oneDNN has no bf16 matmul for the CPU (oneDNN 2.x needs AVX-512 for bf16), --gemm
// and --speed time float32 alone and say why, and --agreement emulates the bf16 product
// (--emulate forces that): the bf16-rounded rows widened back and multiplied in float32. A
// product of two bf16 values is exact in float32, so this is the bf16 product up to the order
// of the float32 sums.
//
// Output: human-readable lines, then "RESULT key=value ..." lines for scripts.
//
// Built only when oneDNN (Debian: libdnnl-dev) is found; see CMakeLists.txt and README.md.

#include <clp/clp.hpp>

#include <Eigen/Core>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_support.hpp"
#include "embedding.hpp"
#include "hf_checkpoint.hpp"
#include "io/hf_model.hpp"
#include "token_matching.hpp"

namespace {

using clp::Index;
using namespace clp_bench;
using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using strided_map = Eigen::Map<row_major_matrix, 0, Eigen::OuterStride<>>;
using bf16 = Eigen::bfloat16;
using row_major_double = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The shapes synthesize.hpp's engine gives its products (clp::synthesis_options documents them):
// overlap panels of 512 rows, blocks of missing rows a multiple of 48 rows tall, at most 480
// when the overlap's panels are shared. The products below are this program's own, shaped so.
constexpr Index panel_rows = 512, block_quantum = 48, engine_max_block = 480;

/// Rows per block and number of blocks.
struct block_plan {
  Index rows = block_quantum, count = 0;
};

/// Blocks for n_rows rows on `threads` workers, as the engine evens them out: at most max_rows
/// tall (a multiple of block_quantum), and a multiple of `threads` blocks of equal height where
/// the rows allow.
block_plan even_blocks(Index n_rows, Index max_rows, int threads) {
  const auto ceil_div = [](Index n, Index d) { return (n + d - 1) / d; };
  const auto round_up = [&](Index n, Index step) { return ceil_div(n, step) * step; };
  if (n_rows <= 0) return {};
  Index rows = std::max(block_quantum, max_rows / block_quantum * block_quantum);
  const Index blocks = std::min(round_up(ceil_div(n_rows, rows), threads), ceil_div(n_rows, block_quantum));
  rows = round_up(ceil_div(n_rows, blocks), block_quantum);
  return {rows, ceil_div(n_rows, rows)};
}

/// ||row||, summed in double.
double row_norm(const float* row, Index n) { return Eigen::Map<const Eigen::VectorXf>(row, n).cast<double>().norm(); }

struct settings {
  std::string mode;
  // --speed
  std::string shape_name = "custom";
  Index missing = 38044, overlap = 12213, dim = 768;
  // --gemm
  Index gemm_size = 4096;
  // --agreement
  std::filesystem::path source, helper;
  clp::token_match match = clp::token_match::bytes;
  bool match_given = false;
  Index k = 10;
  bool float64 = false;
  /// Cosines from bf16-rounded rows multiplied in float32 instead of oneDNN's bf16 product
  /// (automatic where oneDNN has no bf16 matmul for this CPU).
  bool emulate = false;
  /// bf16 filter + float32 rescoring: candidates within this of the k-th bf16 cosine;
  /// negative: twice the error bound of bf16 cosines (error_bound below).
  double margin = -1;
  // all
  int threads = 2;
  int repeats = 3;
  Index block = engine_max_block;
  std::uint64_t seed = 0;
};

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "bench_bf16: %s\n\n", problem.c_str());
  std::fprintf(stderr,
               "usage: bench_bf16 --gemm [--size N] [--threads T] [--repeats R]\n"
               "       bench_bf16 --speed [--shape gpt2-xl|llama2-qwen3-exact|llama2-qwen3-bytes]\n"
               "                  [--missing M] [--overlap N] [--dim D] [--threads T] [--repeats R] [--block B]\n"
               "       bench_bf16 --agreement --source DIR --helper DIR [--match bytes|exact] [--k K]\n"
               "                  [--float64] [--emulate] [--margin M (default: each row's bound, see row_margin)]\n"
               "                  [--threads T]\n"
               "Threads default to 2 (this machine's cores); times are the median of the repeats.\n");
  std::exit(2);
}

long long parse_int(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0') usage(flag + " expects an integer, got '" + text + "'");
  return value;
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(flag + " expects a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h")
      usage("");
    else if (flag == "--gemm" || flag == "--speed" || flag == "--agreement")
      s.mode = flag.substr(2);
    else if (flag == "--shape") {
      s.shape_name = value();
      // Missing rows x overlap x helper width: GPT2-XL (the benchmarks' synthetic shape), and a
      // Llama-2-7B source given Qwen3's vocabulary through a 151,680 x 1,024 helper, matched
      // exactly or by bytes (clp-transfer's default).
      if (s.shape_name == "gpt2-xl")
        s.missing = 38044, s.overlap = 12213, s.dim = 768;
      else if (s.shape_name == "llama2-qwen3-exact")
        s.missing = 141114, s.overlap = 10566, s.dim = 1024;
      else if (s.shape_name == "llama2-qwen3-bytes")
        s.missing = 122443, s.overlap = 29237, s.dim = 1024;
      else
        usage("unknown shape '" + s.shape_name + "'");
    } else if (flag == "--missing")
      s.missing = parse_int(flag, value());
    else if (flag == "--overlap")
      s.overlap = parse_int(flag, value());
    else if (flag == "--dim")
      s.dim = parse_int(flag, value());
    else if (flag == "--size")
      s.gemm_size = parse_int(flag, value());
    else if (flag == "--source")
      s.source = value();
    else if (flag == "--helper")
      s.helper = value();
    else if (flag == "--match") {
      const std::string name = value();
      if (name != "bytes" && name != "exact") usage("--match must be bytes or exact, not '" + name + "'");
      s.match = name == "bytes" ? clp::token_match::bytes : clp::token_match::exact;
      s.match_given = true;
    } else if (flag == "--k")
      s.k = parse_int(flag, value());
    else if (flag == "--float64")
      s.float64 = true;
    else if (flag == "--emulate")
      s.emulate = true;
    else if (flag == "--margin")
      s.margin = std::strtod(value(), nullptr);
    else if (flag == "--threads")
      s.threads = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--repeats")
      s.repeats = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--block")
      s.block = parse_int(flag, value());
    else if (flag == "--seed")
      s.seed = static_cast<std::uint64_t>(parse_int(flag, value()));
    else
      usage("unknown option '" + flag + "'");
  }
  if (s.mode.empty()) usage("give --gemm, --speed or --agreement");
  if (s.threads < 1 || s.repeats < 1 || s.gemm_size < 1 || s.k < 1)
    usage("invalid --threads, --repeats, --size or --k");
  if (s.missing < 1 || s.overlap < 1 || s.dim < 1) usage("--missing, --overlap and --dim must be positive");
  if (s.block < block_quantum || s.block % block_quantum) usage("--block must be a positive multiple of 48");
  if (s.mode == "agreement" && (s.source.empty() || s.helper.empty())) usage("--agreement needs --source and --helper");
  return s;
}

/// ||bf16(x) - x||, the rounding residual of n floats.
double rounding_residual(const float* x, const bf16* rounded, Index n) {
  double sum = 0;
  for (Index i = 0; i < n; ++i) {
    const double e = double(static_cast<float>(rounded[i])) - double(x[i]);
    sum += e * e;
  }
  return std::sqrt(sum);
}

/// The rescoring margin of one query row. With q, n unit rows and their bf16 roundings
/// q + dq, n + dn (||dq|| = r_q, every ||dn|| <= r_n; at most 2^-8 each, as bf16 keeps 8
/// significant bits), |(q + dq).(n + dn) - q.n| = |dq.n + (q + dq).dn| <= r_q + (1 + r_q) r_n;
/// the float sums of d terms (bf16 products are exact in float) and the float32 cosine itself
/// add at most d 2^-24 each. Every row of the float32 top k then has a bf16 cosine within
/// twice that bound of the k-th largest bf16 cosine: rescoring every row within the margin
/// finds the float32 top k (up to float32's own rounding). --margin M fixes it instead.
double row_margin(const settings& s, double r_q, double r_n, Index d) {
  if (s.margin >= 0) return s.margin;
  return 2.0 * (r_q + (1.0 + r_q) * r_n + 2.0 * double(d) * 0x1.0p-24);
}

// The bfloat16 conversions are the library's (clp::from_float32, clp::to_float32): bit for bit
// Eigen's, vectorised.
void narrow_bf16(const float* src, Index n, bf16* dst) { clp::from_float32(src, n, dst); }
void widen_bf16(const bf16* src, Index n, float* dst) { clp::to_float32(src, n, dst); }

// --- random inputs: as bench_synthesis draws helper rows (N(0, 1) plus one shared N(0, 1)
// row), normalised. Counter-based streams (bench_support.hpp), so rows fill in parallel.

// rows x cols, row-major, each row of unit norm (scaled as synthesize.hpp scales them).
row_major_matrix normalised_rows(Index rows, Index cols, std::uint64_t seed, std::uint64_t stream, int threads) {
  std::vector<float> shared(static_cast<std::size_t>(cols));
  fill_standard_normal(shared.data(), cols, stream_key(seed, 0, ~std::uint64_t(0)));
  row_major_matrix m(rows, cols);
  clp::parallel_for(rows, threads, [&](Index r, int) {
    float* row = m.data() + r * cols;
    fill_standard_normal(row, cols, stream_key(seed, stream, std::uint64_t(r)));
    for (Index c = 0; c < cols; ++c) row[c] += shared[std::size_t(c)];
    const float inverse = static_cast<float>(1.0 / row_norm(row, cols));
    for (Index c = 0; c < cols; ++c) row[c] *= inverse;
  });
  return m;
}

// --- the float32 cosine block exactly as synthesize.hpp's form_cosines forms it: the block's
// rows (block x d) times the overlap rows, panel by panel, into a row-major block x n_overlap.
void float_cosines(const float* queries, Index block, const float* overlap_rows, Index n_overlap, Index d,
                   float* cosines) {
  const Eigen::Map<const row_major_matrix> q(queries, block, d);
  for (Index p0 = 0; p0 < n_overlap; p0 += panel_rows) {
    const Index pn = std::min(panel_rows, n_overlap - p0);
    strided_map(cosines + p0, block, pn, Eigen::OuterStride<>(n_overlap)).noalias() =
        q * Eigen::Map<const row_major_matrix>(overlap_rows + p0 * d, pn, d).transpose();
  }
}

/// The instruction set oneDNN dispatches to on this CPU, by oneDNN's name for it.
std::string cpu_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa_" + std::to_string(int(dnnl::get_effective_cpu_isa()));
  }
}

// --- oneDNN: C (m x n, f32, row-major) = A (m x k, bf16, row-major) B^T, B n x k bf16
// row-major (so the weights are k x n in "ba" order), the weights reordered once into the
// layout the implementation asks for.
struct bf16_matmul {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory weights;  // in pd.weights_desc()
  Index m = 0, n = 0, k = 0;

  bf16_matmul(Index m_, Index n_, Index k_) : m(m_), n(n_), k(k_) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a({m, k}, dt::bf16, tag::ab);
    const dnnl::memory::desc b({k, n}, dt::bf16, tag::any);
    const dnnl::memory::desc c({m, n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    // Each worker passes its own scratchpad, so workers can run the primitive at once.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
    primitive = dnnl::matmul(pd);
  }

  std::string implementation() const { return pd.impl_info_str(); }
  std::size_t scratchpad_bytes() const { return pd.scratchpad_desc().get_size(); }

  /// B (n x k, row-major bf16) into the implementation's weight layout.
  void set_weights(const bf16* b) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory user({{k, n}, dt::bf16, tag::ba}, engine, const_cast<bf16*>(b));
    weights = dnnl::memory(pd.weights_desc(), engine);
    dnnl::stream stream(engine);
    dnnl::reorder(user, weights).execute(stream, user, weights);
    stream.wait();
  }

  /// C = A B^T; `scratchpad` holds scratchpad_bytes().
  void run(const bf16* a, float* c, void* scratchpad) const {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::stream stream(engine);
    dnnl::memory am({{m, k}, dt::bf16, tag::ab}, engine, const_cast<bf16*>(a));
    dnnl::memory cm({{m, n}, dt::f32, tag::ab}, engine, c);
    dnnl::memory sm(pd.scratchpad_desc(), engine, scratchpad);
    primitive.execute(stream,
                      {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, cm}, {DNNL_ARG_SCRATCHPAD, sm}});
    stream.wait();
  }
};

/// The oneDNN primitive for C (m x n) = A (m x k) B^T in bf16, or none where this oneDNN has
/// no bf16 matmul for this CPU (oneDNN 2.x: bf16 needs AVX-512; the reason is printed once).
std::unique_ptr<bf16_matmul> make_bf16_matmul(Index m, Index n, Index k) {
  try {
    return std::make_unique<bf16_matmul>(m, n, k);
  } catch (const dnnl::error& e) {
    static bool said = false;
    if (!said) {
      const dnnl_version_t* v = dnnl_version();
      std::printf("bf16: oneDNN %d.%d.%d has no bf16 matmul on this CPU (%s; its bf16 kernels need AVX-512): %s\n",
                  v->major, v->minor, v->patch, cpu_isa_name().c_str(), e.what());
      said = true;
    }
    return nullptr;
  }
}

// --- --gemm

int run_gemm(const settings& s) {
  const Index n = s.gemm_size;
  const double flop = 2.0 * double(n) * double(n) * double(n);
  const int tries = std::max(s.repeats, 3);

  set_blas_threads(s.threads);
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  c.noalias() = a * b;  // warm-up
  double best_f32 = 1e300;
  for (int r = 0; r < tries; ++r) {
    const auto start = clock_type::now();
    c.noalias() = a * b;
    best_f32 = std::min(best_f32, seconds_since(start));
  }

  std::printf("gemm %lld^3, %d threads: float32 (%s) best %.4f s = %.1f GFLOP/s\n", (long long)n, s.threads,
              blas_backend().c_str(), best_f32, flop / best_f32 / 1e9);

  // oneDNN's own threads: an OpenMP team of s.threads.
#ifdef _OPENMP
  omp_set_num_threads(s.threads);
#endif
  const std::unique_ptr<bf16_matmul> product = make_bf16_matmul(n, n, n);
  double best_bf16 = 0;
  if (product) {
    std::vector<bf16> a16(std::size_t(n * n)), b16(std::size_t(n * n));
    narrow_bf16(a.data(), n * n, a16.data());
    narrow_bf16(b.data(), n * n, b16.data());
    product->set_weights(b16.data());
    std::vector<float> c32(std::size_t(n * n));
    std::vector<std::byte> scratchpad(product->scratchpad_bytes() + 64);
    product->run(a16.data(), c32.data(), scratchpad.data());  // warm-up
    best_bf16 = 1e300;
    for (int r = 0; r < tries; ++r) {
      const auto start = clock_type::now();
      product->run(a16.data(), c32.data(), scratchpad.data());
      best_bf16 = std::min(best_bf16, seconds_since(start));
    }
    std::printf("gemm %lld^3, %d threads: bf16 (oneDNN %s) best %.4f s = %.1f GFLOP/s\n", (long long)n, s.threads,
                product->implementation().c_str(), best_bf16, flop / best_bf16 / 1e9);
  }
  std::printf(
      "RESULT mode=gemm size=%lld threads=%d isa=%s f32_backend=%s f32_seconds=%.6f f32_gflops=%.2f bf16_impl=%s "
      "bf16_seconds=%.6f bf16_gflops=%.2f\n",
      (long long)n, s.threads, cpu_isa_name().c_str(), blas_backend().c_str(), best_f32, flop / best_f32 / 1e9,
      product ? product->implementation().c_str() : "none", best_bf16, product ? flop / best_bf16 / 1e9 : 0.0);
  return 0;
}

// --- --speed

struct timed {
  double seconds = 0, cores_busy = 0;
};

template <class Run>
timed time_repeats(int repeats, Run run) {
  std::vector<double> times;
  double wall = 0;
  const double cpu_start = cpu_seconds();
  for (int r = 0; r < repeats; ++r) {
    const auto start = clock_type::now();
    run();
    times.push_back(seconds_since(start));
    wall += times.back();
  }
  return {median(times), (cpu_seconds() - cpu_start) / wall};
}

/// The library's two cuts (clp/similarity_product.hpp) on one row of bf16 cosines c16: the
/// row's top k by bf16 cosine (top[0..count)) recomputed as float32 dots of the normalised
/// rows, R the smallest of them; then every other overlap row whose bf16 cosine is within half
/// the margin (one bound) of R, recomputed too. Leaves the candidates in ids (ascending, so the
/// library's tie order holds) and their float32 cosines in values.
void rescore_candidates(const float* query, const row_major_matrix& overlap_rows, const float* c16, const Index* top,
                        Index count, double margin, std::vector<Index>& ids, std::vector<float>& values) {
  const Index n = overlap_rows.rows(), d = overlap_rows.cols();
  const Eigen::Map<const Eigen::VectorXf> q(query, d);
  auto rescored = [&](Index j) { return q.dot(Eigen::Map<const Eigen::VectorXf>(overlap_rows.data() + j * d, d)); };
  std::vector<std::pair<Index, float>> best;  // the top k, ascending, with their float32 cosines
  float smallest = std::numeric_limits<float>::infinity();
  for (Index r = 0; r < count; ++r) {
    best.emplace_back(top[r], rescored(top[r]));
    smallest = std::min(smallest, best.back().second);
  }
  std::sort(best.begin(), best.end());
  const float threshold = smallest - static_cast<float>(margin / 2);
  ids.clear();
  values.clear();
  for (Index j = 0, r = 0; j < n; ++j) {
    const bool in_top = r < count && best[std::size_t(r)].first == j;
    if (!in_top && !(c16[j] >= threshold)) continue;
    ids.push_back(j);
    values.push_back(in_top ? best[std::size_t(r++)].second : rescored(j));
  }
}

/// The --speed inputs, and each worker's buffers, made and touched outside the timings.
struct speed_setup {
  /// A worker's block of queries (zero past the last missing row, as the engine pads) and its
  /// cosine block.
  struct worker {
    std::vector<float> queries, cosines;
    std::vector<bf16> queries16;
    std::vector<std::byte> scratchpad;
  };

  const settings& s;
  Index d, n, missing;
  block_plan plan;
  row_major_matrix queries, overlap;
  std::vector<worker> workers;
  double flop;

  explicit speed_setup(const settings& settings_)
      : s(settings_),
        d(s.dim),
        n(s.overlap),
        missing(s.missing),
        plan(even_blocks(missing, s.block, s.threads)),
        workers(static_cast<std::size_t>(s.threads)),
        flop(2.0 * double(missing) * double(n) * double(d)) {
    const auto generate_start = clock_type::now();
    queries = normalised_rows(missing, d, s.seed, 1, s.threads);
    overlap = normalised_rows(n, d, s.seed, 2, s.threads);
    std::printf(
        "shape %s: %lld missing x %lld overlap x d %lld; %lld blocks of %lld rows, %d workers; inputs in %.1f s\n",
        s.shape_name.c_str(), (long long)missing, (long long)n, (long long)d, (long long)plan.count,
        (long long)plan.rows, s.threads, seconds_since(generate_start));
    for (worker& w : workers) {
      w.queries.assign(std::size_t(plan.rows * d), 0.0f);
      w.cosines.assign(std::size_t(plan.rows * n), 0.0f);
      w.queries16.assign(std::size_t(plan.rows * d), bf16{});
    }
  }

  /// Rows of block b.
  Index rows_of(Index b) const { return std::min(plan.rows, missing - b * plan.rows); }

  void load_block(Index b, worker& w) const {
    const Index m = rows_of(b);
    std::memcpy(w.queries.data(), queries.data() + b * plan.rows * d, sizeof(float) * std::size_t(m * d));
    std::fill(w.queries.begin() + m * d, w.queries.end(), 0.0f);
  }

  void print_line(const char* what, const timed& t) const {
    std::printf("  %-44s %9.3f s  %7.1f GFLOP/s  (cores busy %.2f)\n", what, t.seconds, flop / t.seconds / 1e9,
                t.cores_busy);
  }
};

/// float32, as the engine: each worker's products single-threaded; `selected` with each row's
/// top k too (as the top-k weighting follows the product), to compare with the rescoring.
struct float32_speeds {
  timed product, selected;
};

float32_speeds time_float32(speed_setup& x) {
  const Index k = std::min<Index>(x.s.k, 64);
  set_blas_threads(1);
  auto blocks = [&](bool select) {
    clp::parallel_for(x.plan.count, x.s.threads, [&](Index b, int id) {
      speed_setup::worker& w = x.workers[std::size_t(id)];
      x.load_block(b, w);
      float_cosines(w.queries.data(), x.plan.rows, x.overlap.data(), x.n, x.d, w.cosines.data());
      if (!select) return;
      Index chosen[64];
      for (Index i = 0; i < x.rows_of(b); ++i) clp::select_top_k(w.cosines.data() + i * x.n, x.n, k, chosen);
    });
  };
  float32_speeds t;
  t.product = time_repeats(x.s.repeats, [&] { blocks(false); });
  t.selected = time_repeats(x.s.repeats, [&] { blocks(true); });
  return t;
}

struct bf16_speeds {
  timed product, with_n, outer, rescored;
  double convert_seconds = 0, overlap_residual = 0, candidates_per_row = 0, margin = 0;
};

/// Row i of worker w's block, after the bf16 product: its candidates rescored with the
/// library's two cuts (rescore_candidates), their cosines written back: the extra work that
/// keeps float32's top k. Adds the row's candidates and margin to the sums given.
void rescore_row(const speed_setup& x, speed_setup::worker& w, Index i, double overlap_residual, double& candidates,
                 double& margins, std::vector<Index>& ids, std::vector<float>& values) {
  const Index k = std::min<Index>(x.s.k, 64), n = x.n, d = x.d;
  float* c = w.cosines.data() + i * n;
  Index chosen[64];
  const Index count = clp::select_top_k(c, n, k, chosen);
  const double margin =
      row_margin(x.s, rounding_residual(w.queries.data() + i * d, w.queries16.data() + i * d, d), overlap_residual, d);
  margins += margin;
  rescore_candidates(w.queries.data() + i * d, x.overlap, c, chosen, count, margin, ids, values);
  for (std::size_t r = 0; r < ids.size(); ++r) c[ids[r]] = values[r];
  candidates += double(ids.size());
}

/// bf16: one primitive for the block shape; N converted once (or inside the timing); with the
/// rescoring (rescore_row; the float32 route's own top-k pass is not timed, so this overstates
/// the extra cost by one selection per row); and one block at a time on oneDNN's own threads,
/// how the library could call it if nested calls were slow.
bf16_speeds time_bf16(speed_setup& x, bf16_matmul& product) {
  const int threads = x.s.threads;
  for (speed_setup::worker& w : x.workers) w.scratchpad.assign(product.scratchpad_bytes() + 64, std::byte{0});
  std::vector<bf16> overlap16(std::size_t(x.n * x.d));
  auto convert_overlap = [&] {
    clp::parallel_for((x.n + panel_rows - 1) / panel_rows, threads, [&](Index p, int) {
      const Index p0 = p * panel_rows, pn = std::min(panel_rows, x.n - p0);
      narrow_bf16(x.overlap.data() + p0 * x.d, pn * x.d, overlap16.data() + p0 * x.d);
    });
    product.set_weights(overlap16.data());  // oneDNN's reorder, on its own threads
  };
  bf16_speeds t;
  std::vector<double> candidates(static_cast<std::size_t>(threads), 0.0), margins(candidates);
  auto run_block = [&](Index b, speed_setup::worker& w) {
    x.load_block(b, w);
    narrow_bf16(w.queries.data(), x.plan.rows * x.d, w.queries16.data());
    product.run(w.queries16.data(), w.cosines.data(), w.scratchpad.data());
  };
  auto blocks = [&](bool rescore) {
    clp::parallel_for(x.plan.count, threads, [&](Index b, int id) {
      speed_setup::worker& w = x.workers[std::size_t(id)];
      run_block(b, w);
      if (!rescore) return;
      std::vector<Index> ids;
      std::vector<float> values;
      for (Index i = 0; i < x.rows_of(b); ++i)
        rescore_row(x, w, i, t.overlap_residual, candidates[std::size_t(id)], margins[std::size_t(id)], ids, values);
    });
  };
  const auto convert_start = clock_type::now();
  convert_overlap();
  t.convert_seconds = seconds_since(convert_start);
  for (Index j = 0; j < x.n; ++j)
    t.overlap_residual = std::max(
        t.overlap_residual, rounding_residual(x.overlap.data() + j * x.d, overlap16.data() + j * x.d, x.d));
  blocks(false);  // warm-up (first touch of the primitive's buffers)
  t.product = time_repeats(x.s.repeats, [&] { blocks(false); });
  t.with_n = time_repeats(x.s.repeats, [&] {
    convert_overlap();
    blocks(false);
  });
  t.rescored = time_repeats(x.s.repeats, [&] { blocks(true); });
  for (double c : candidates) t.candidates_per_row += c;
  for (double m : margins) t.margin += m;
  t.candidates_per_row /= double(x.s.repeats) * double(x.missing);
  t.margin /= double(x.s.repeats) * double(x.missing);
  t.outer = time_repeats(x.s.repeats, [&] {
    for (Index b = 0; b < x.plan.count; ++b) run_block(b, x.workers[0]);
  });
  return t;
}

/// The first block both ways, outside the timings: the largest |float32 - bf16| cosine.
double largest_bf16_error(speed_setup& x, bf16_matmul& product) {
  speed_setup::worker& w = x.workers[0];
  x.load_block(0, w);
  float_cosines(w.queries.data(), x.plan.rows, x.overlap.data(), x.n, x.d, w.cosines.data());
  const std::vector<float> reference = w.cosines;
  narrow_bf16(w.queries.data(), x.plan.rows * x.d, w.queries16.data());
  product.run(w.queries16.data(), w.cosines.data(), w.scratchpad.data());
  double worst = 0;
  for (std::size_t i = 0; i < reference.size(); ++i)
    worst = std::max(worst, double(std::abs(reference[i] - w.cosines[i])));
  return worst;
}

void print_speed(const speed_setup& x, const float32_speeds& f32, const bf16_speeds& b, const bf16_matmul& product,
                 double largest_error) {
  const settings& s = x.s;
  std::printf("product C = Q N^T over all blocks (%.1f GFLOP), median of %d:\n", x.flop / 1e9, s.repeats);
  x.print_line(("float32, " + blas_backend() + ", per-worker products").c_str(), f32.product);
  x.print_line("bf16 oneDNN, N converted outside the timing", b.product);
  x.print_line("bf16 oneDNN, N converted inside the timing", b.with_n);
  x.print_line("bf16 oneDNN, one block at a time, all threads", b.outer);
  x.print_line("float32 + each row's top-k selection", f32.selected);
  x.print_line("bf16 + top-k selection + float32 rescoring", b.rescored);
  std::printf(
      "  rescoring: margin %.5f on average (overlap rows' bf16 residual at most %.5f), %.1f candidates per row\n",
      b.margin, b.overlap_residual, b.candidates_per_row);
  std::printf("  N to bf16 + reorder alone: %.3f s; oneDNN implementation %s; speed-up (N outside) %.2fx\n",
              b.convert_seconds, product.implementation().c_str(), f32.product.seconds / b.product.seconds);
  std::printf("  check: block 0, largest |cosine float32 - cosine bf16| %.2e\n", largest_error);
  const double gflop = x.flop / 1e9;
  std::printf(
      "RESULT mode=speed shape=%s missing=%lld overlap=%lld dim=%lld block=%lld blocks=%lld threads=%d repeats=%d "
      "gflop=%.2f f32_backend=%s f32_seconds=%.6f f32_gflops=%.2f f32_cores_busy=%.2f bf16_impl=%s "
      "bf16_seconds=%.6f bf16_gflops=%.2f bf16_cores_busy=%.2f bf16_with_n_seconds=%.6f bf16_with_n_gflops=%.2f "
      "bf16_outer_seconds=%.6f bf16_outer_gflops=%.2f n_convert_seconds=%.6f speedup=%.3f speedup_with_n=%.3f "
      "f32_selected_seconds=%.6f rescored_seconds=%.6f speedup_rescored=%.3f margin=%.5f candidates_per_row=%.2f\n",
      s.shape_name.c_str(), (long long)x.missing, (long long)x.n, (long long)x.d, (long long)x.plan.rows,
      (long long)x.plan.count, s.threads, s.repeats, gflop, blas_backend().c_str(), f32.product.seconds,
      gflop / f32.product.seconds, f32.product.cores_busy, product.implementation().c_str(), b.product.seconds,
      gflop / b.product.seconds, b.product.cores_busy, b.with_n.seconds, gflop / b.with_n.seconds, b.outer.seconds,
      gflop / b.outer.seconds, b.convert_seconds, f32.product.seconds / b.product.seconds,
      f32.product.seconds / b.with_n.seconds, f32.selected.seconds, b.rescored.seconds,
      f32.selected.seconds / b.rescored.seconds, b.margin, b.candidates_per_row);
}

int run_speed(const settings& s) {
  speed_setup x(s);
  const float32_speeds f32 = time_float32(x);
#ifdef _OPENMP
  omp_set_num_threads(s.threads);
#endif
  const std::unique_ptr<bf16_matmul> product = make_bf16_matmul(x.plan.rows, x.n, x.d);
  if (!product) {
    std::printf("product C = Q N^T over all blocks (%.1f GFLOP), median of %d:\n", x.flop / 1e9, s.repeats);
    std::printf("  float32, %s, per-worker products %9.3f s  %7.1f GFLOP/s; with each row's top-k selection %.3f s\n",
                blas_backend().c_str(), f32.product.seconds, x.flop / f32.product.seconds / 1e9, f32.selected.seconds);
    std::printf(
        "RESULT mode=speed shape=%s missing=%lld overlap=%lld dim=%lld isa=%s gflop=%.2f f32_backend=%s "
        "f32_seconds=%.6f f32_gflops=%.2f f32_selected_seconds=%.6f bf16_impl=none\n",
        s.shape_name.c_str(), (long long)x.missing, (long long)x.n, (long long)x.d, cpu_isa_name().c_str(),
        x.flop / 1e9, blas_backend().c_str(), f32.product.seconds, x.flop / f32.product.seconds / 1e9,
        f32.selected.seconds);
    return 0;
  }
  const bf16_speeds b = time_bf16(x, *product);
  print_speed(x, f32, b, *product, largest_bf16_error(x, *product));
  return 0;
}

// --- --agreement

/// The k largest of values[0..n) under "larger, then lower index" (the library's order, see
/// clp::select_top_k), descending, for any element type.
template <class T>
Index top_k_of(const T* values, Index n, Index k, Index* out) {
  k = std::min(k, n);
  std::vector<std::pair<T, Index>> best;  // sorted, best first
  best.reserve(std::size_t(k) + 1);
  for (Index j = 0; j < n; ++j) {
    if (Index(best.size()) == k && !(values[j] > best.back().first)) continue;
    auto at = std::upper_bound(best.begin(), best.end(), values[j],
                               [](T v, const std::pair<T, Index>& e) { return v > e.first; });
    best.insert(at, {values[j], j});
    if (Index(best.size()) > k) best.pop_back();
  }
  for (Index i = 0; i < Index(best.size()); ++i) out[i] = best[std::size_t(i)].second;
  return Index(best.size());
}

/// top_k_weights' rule (clamped cosines of the k, renormalised; none positive: no weights).
template <class T>
std::vector<double> top_k_weights_of(const T* cosines, const Index* chosen, Index count) {
  std::vector<double> w(std::size_t(count), 0.0);
  double sum = 0;
  for (Index i = 0; i < count; ++i) sum += std::max(double(cosines[chosen[i]]), 0.0);
  if (!(sum > 0)) return {};
  for (Index i = 0; i < count; ++i) w[std::size_t(i)] = std::max(double(cosines[chosen[i]]), 0.0) / sum;
  return w;
}

/// How two rankings of the same rows compare.
struct comparison {
  Index rows = 0, set_differs = 0, first_differs = 0;
  double shared = 0;                        // sum over rows of |A ∩ B| / k
  double weight_l1 = 0, weight_l1_max = 0;  // sum_j |w_A - w_B| over the union
  double cosine_abs_max = 0, cosine_square_sum = 0;
  double cosine_count = 0;

  void add(const comparison& o) {
    rows += o.rows;
    set_differs += o.set_differs;
    first_differs += o.first_differs;
    shared += o.shared;
    weight_l1 += o.weight_l1;
    weight_l1_max = std::max(weight_l1_max, o.weight_l1_max);
    cosine_abs_max = std::max(cosine_abs_max, o.cosine_abs_max);
    cosine_square_sum += o.cosine_square_sum;
    cosine_count += o.cosine_count;
  }
};

struct ranked_row {
  std::vector<Index> chosen;
  std::vector<double> weights;
};

void compare_rows(comparison& c, const ranked_row& a, const ranked_row& b, Index k) {
  ++c.rows;
  std::vector<Index> sa = a.chosen, sb = b.chosen;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  std::vector<Index> common;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(common));
  if (common.size() != sa.size() || sa.size() != sb.size()) ++c.set_differs;
  if (a.chosen.empty() != b.chosen.empty() || (!a.chosen.empty() && a.chosen[0] != b.chosen[0])) ++c.first_differs;
  c.shared += double(common.size()) / double(k);  // the overlap holds at least k rows
  // Weights as maps id -> weight over the union.
  double l1 = 0;
  auto weight = [](const ranked_row& r, Index id) {
    for (std::size_t i = 0; i < r.chosen.size(); ++i)
      if (r.chosen[i] == id) return r.weights.empty() ? 0.0 : r.weights[i];
    return 0.0;
  };
  for (Index id : a.chosen) l1 += std::abs(weight(a, id) - weight(b, id));
  for (Index id : b.chosen)
    if (std::find(a.chosen.begin(), a.chosen.end(), id) == a.chosen.end()) l1 += std::abs(weight(b, id));
  c.weight_l1 += l1;
  c.weight_l1_max = std::max(c.weight_l1_max, l1);
}

template <class A, class B>
void compare_cosines(comparison& c, const A* a, const B* b, Index n) {
  for (Index j = 0; j < n; ++j) {
    const double e = double(a[j]) - double(b[j]);
    c.cosine_abs_max = std::max(c.cosine_abs_max, std::abs(e));
    c.cosine_square_sum += e * e;
  }
  c.cosine_count += double(n);
}

void print_comparison(const char* name, const comparison& c, Index k, const std::string& tag) {
  const double rows = double(std::max<Index>(c.rows, 1));
  // Rescored rankings keep no cosine row of their own: no cosine error to report.
  char cosine_error[96] = "", cosine_fields[96] = "";
  if (c.cosine_count > 0) {
    const double rms = std::sqrt(c.cosine_square_sum / c.cosine_count);
    std::snprintf(cosine_error, sizeof cosine_error, "; cosine error max %.2e rms %.2e", c.cosine_abs_max, rms);
    std::snprintf(cosine_fields, sizeof cosine_fields, " cosine_err_max=%.3e cosine_err_rms=%.3e", c.cosine_abs_max,
                  rms);
  }
  std::printf(
      "  %-16s top-%lld set differs %6.3f%% of rows, mean |intersection|/k %.5f, first neighbour differs %6.3f%%; "
      "top-k weights L1 mean %.2e max %.2e%s\n",
      name, (long long)k, 100.0 * double(c.set_differs) / rows, c.shared / rows, 100.0 * double(c.first_differs) / rows,
      c.weight_l1 / rows, c.weight_l1_max, cosine_error);
  std::printf(
      "RESULT mode=agreement %s pair=%s k=%lld rows=%lld set_differs_pct=%.4f mean_shared=%.6f first_differs_pct=%.4f "
      "weight_l1_mean=%.3e weight_l1_max=%.3e%s\n",
      tag.c_str(), name, (long long)k, (long long)c.rows, 100.0 * double(c.set_differs) / rows, c.shared / rows,
      100.0 * double(c.first_differs) / rows, c.weight_l1 / rows, c.weight_l1_max, cosine_fields);
}

/// Rows `ids` of the helper as float32, normalised as synthesize.hpp normalises them (norm in
/// double, scaled by the float inverse); with `exact`, also normalised in double from the same
/// values.
void read_normalised_rows(const clp_transfer::embedding_matrix& helper, const std::vector<Index>& ids, int threads,
                          row_major_matrix& normalised, row_major_double* exact) {
  const Index d = helper.cols();
  normalised.resize(Index(ids.size()), d);
  if (exact) exact->resize(Index(ids.size()), d);
  helper.visit([&](auto view) {
    clp::parallel_for(Index(ids.size()), threads, [&](Index i, int) {
      float* row = normalised.data() + i * d;
      for (Index c = 0; c < d; ++c) row[c] = static_cast<float>(view(ids[std::size_t(i)], c));
      const double norm = row_norm(row, d);
      if (exact) {
        double* e = exact->data() + i * d;
        double sum = 0;
        for (Index c = 0; c < d; ++c) sum += double(row[c]) * double(row[c]);
        const double inverse = sum > 0 ? 1.0 / std::sqrt(sum) : 0.0;
        for (Index c = 0; c < d; ++c) e[c] = double(row[c]) * inverse;
      }
      const float inverse = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
      for (Index c = 0; c < d; ++c) row[c] *= inverse;
    });
  });
}

/// A worker's buffers and tallies of --agreement.
struct agreement_worker {
  std::vector<float> queries, cosines, cosines16;
  std::vector<bf16> queries16;
  row_major_matrix queries_widened;  // emulation
  row_major_double queries_exact, cosines_exact;
  std::vector<std::byte> scratchpad;
  comparison bf16_vs_f32, f32_vs_f64, bf16_vs_f64, rescored_vs_f32, rescored_vs_f64;
  Index zero_norm = 0;
  double candidates = 0, margin_sum = 0;
  Index candidates_max = 0;

  /// Buffers for blocks of `block` rows against n overlap rows of width d; the product's
  /// scratchpad, or (no product: emulation) the widened queries.
  void allocate(const settings& s, Index block, Index n, Index d, const bf16_matmul* product) {
    queries.assign(std::size_t(block * d), 0.0f);
    cosines.assign(std::size_t(block * n), 0.0f);
    cosines16.assign(std::size_t(block * n), 0.0f);
    queries16.assign(std::size_t(block * d), bf16{});
    if (product)
      scratchpad.assign(product->scratchpad_bytes() + 64, std::byte{0});
    else
      queries_widened.resize(block, d);
    if (s.float64) queries_exact = row_major_double::Zero(block, d), cosines_exact.resize(block, n);
  }

  void add(const agreement_worker& w) {
    bf16_vs_f32.add(w.bf16_vs_f32);
    f32_vs_f64.add(w.f32_vs_f64);
    bf16_vs_f64.add(w.bf16_vs_f64);
    rescored_vs_f32.add(w.rescored_vs_f32);
    rescored_vs_f64.add(w.rescored_vs_f64);
    zero_norm += w.zero_norm;
    candidates += w.candidates;
    margin_sum += w.margin_sum;
    candidates_max = std::max(candidates_max, w.candidates_max);
  }
};

/// A row's top k and their top_k_weights.
template <class T>
ranked_row ranked(const T* cosines, Index n, Index k) {
  ranked_row r;
  r.chosen.resize(std::size_t(k));
  r.chosen.resize(std::size_t(top_k_of(cosines, n, k, r.chosen.data())));
  r.weights = top_k_weights_of(cosines, r.chosen.data(), Index(r.chosen.size()));
  return r;
}

/// Row i of worker w's block, its cosines formed every way: the top k by float32, by bf16, by
/// bf16 rescored in float32 (rescore_candidates) and, with --float64, by float64, compared.
void compare_row(const settings& s, agreement_worker& w, Index i, const row_major_matrix& overlap_rows,
                 double overlap_residual) {
  const Index n = overlap_rows.rows(), d = overlap_rows.cols(), k = s.k;
  const float* c32 = w.cosines.data() + i * n;
  const float* c16 = w.cosines16.data() + i * n;
  const ranked_row r32 = ranked(c32, n, k), r16 = ranked(c16, n, k);
  compare_rows(w.bf16_vs_f32, r16, r32, k);
  compare_cosines(w.bf16_vs_f32, c16, c32, n);
  const double margin =
      row_margin(s, rounding_residual(w.queries.data() + i * d, w.queries16.data() + i * d, d), overlap_residual, d);
  w.margin_sum += margin;
  std::vector<Index> ids;
  std::vector<float> values;
  rescore_candidates(w.queries.data() + i * d, overlap_rows, c16, r16.chosen.data(), Index(r16.chosen.size()), margin,
                     ids, values);
  w.candidates += double(ids.size());
  w.candidates_max = std::max(w.candidates_max, Index(ids.size()));
  std::vector<Index> best(static_cast<std::size_t>(k));
  best.resize(std::size_t(top_k_of(values.data(), Index(values.size()), k, best.data())));
  std::vector<float> full(std::size_t(n), 0.0f);
  ranked_row rescored;
  for (Index b : best) {
    rescored.chosen.push_back(ids[std::size_t(b)]);
    full[std::size_t(ids[std::size_t(b)])] = values[std::size_t(b)];
  }
  rescored.weights = top_k_weights_of(full.data(), rescored.chosen.data(), Index(rescored.chosen.size()));
  compare_rows(w.rescored_vs_f32, rescored, r32, k);
  if (!s.float64) return;
  const double* c64 = w.cosines_exact.data() + i * n;
  const ranked_row r64 = ranked(c64, n, k);
  compare_rows(w.f32_vs_f64, r32, r64, k);
  compare_cosines(w.f32_vs_f64, c32, c64, n);
  compare_rows(w.bf16_vs_f64, r16, r64, k);
  compare_cosines(w.bf16_vs_f64, c16, c64, n);
  compare_rows(w.rescored_vs_f64, rescored, r64, k);
}

void print_agreement(const settings& s, const agreement_worker& all, const std::string& tag, double overlap_residual,
                     Index n) {
  print_comparison("bf16_vs_f32", all.bf16_vs_f32, s.k, tag);
  print_comparison("rescored_vs_f32", all.rescored_vs_f32, s.k, tag);
  if (s.float64) {
    print_comparison("f32_vs_f64", all.f32_vs_f64, s.k, tag);
    print_comparison("bf16_vs_f64", all.bf16_vs_f64, s.k, tag);
    print_comparison("rescored_vs_f64", all.rescored_vs_f64, s.k, tag);
  }
  const double rows_compared = double(std::max<Index>(1, all.bf16_vs_f32.rows));
  const double margin = all.margin_sum / rows_compared, candidates = all.candidates / rows_compared;
  std::printf(
      "  rescoring (margin %.5f on average; overlap rows' bf16 residual at most %.5f): %.1f candidates per row on "
      "average, %lld at most, of %lld\n",
      margin, overlap_residual, candidates, (long long)all.candidates_max, (long long)n);
  std::printf("RESULT mode=rescoring %s margin=%.5f candidates_mean=%.2f candidates_max=%lld\n", tag.c_str(), margin,
              candidates, (long long)all.candidates_max);
}

int run_agreement(const settings& s) {
  namespace program = clp_transfer;
  const int threads = s.threads;
  const auto start = clock_type::now();

  // The overlap as clp-transfer transfer makes it: special tokens by role, then --match.
  const program::hf_checkpoint source_model = program::hf_checkpoint::read(s.source);
  const program::hf_checkpoint helper_model = program::hf_checkpoint::read(s.helper);
  const std::string source_name = clp_transfer::io::find_input_embedding(s.source, source_model.weights.tensor_names());
  const std::string helper_name = clp_transfer::io::find_input_embedding(s.helper, helper_model.weights.tensor_names());
  const Index source_rows = Index(source_model.weights.locate(source_name).tensor.shape.at(0));
  const program::embedding_matrix helper = program::embedding_matrix::read(helper_model.weights, helper_name);
  const program::token_matching matching =
      program::match_models(source_model, helper_model, {s.match, s.match_given}, source_rows, helper.rows());
  const clp::vocabulary_overlap& overlap = matching.overlap;

  // The missing rows that are tokens (padding rows carry no neighbours worth comparing).
  std::vector<Index> rows;
  std::set_difference(overlap.missing_ids.begin(), overlap.missing_ids.end(), overlap.unnamed_ids.begin(),
                      overlap.unnamed_ids.end(), std::back_inserter(rows));
  const Index d = helper.cols(), n = overlap.size(), missing = Index(rows.size());
  std::printf(
      "source %s (%lld rows), helper %s (%lld x %lld %s); matched %s: overlap %lld, missing %lld (+ %zu padding)\n",
      s.source.c_str(), (long long)source_rows, s.helper.c_str(), (long long)helper.rows(), (long long)d,
      helper.dtype_name().c_str(), program::match_name(matching.used), (long long)n, (long long)missing,
      overlap.unnamed_ids.size());
  if (n < s.k || missing < 1) {
    std::fprintf(stderr, "bench_bf16: the overlap (%lld) is smaller than k or no row is missing\n", (long long)n);
    return 1;
  }
  row_major_matrix overlap_rows, query_rows;
  row_major_double overlap_exact, query_exact;
  read_normalised_rows(helper, overlap.target_ids, threads, overlap_rows, s.float64 ? &overlap_exact : nullptr);
  read_normalised_rows(helper, rows, threads, query_rows, s.float64 ? &query_exact : nullptr);
  std::vector<bf16> overlap16(std::size_t(n * d));
  narrow_bf16(overlap_rows.data(), n * d, overlap16.data());

  const block_plan plan = even_blocks(missing, s.block, threads);
  const Index block = plan.rows;
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
  set_blas_threads(1);
  // The bf16 product: oneDNN's, or (--emulate, or no bf16 matmul on this CPU) the bf16-rounded
  // rows widened back and multiplied in float32. A product of two bf16 values is exact in
  // float32 (8 + 8 significant bits), so the emulation computes what a bf16 x bf16 -> float32
  // product computes, up to the order of the float32 sums.
  std::unique_ptr<bf16_matmul> product;
  if (!s.emulate) product = make_bf16_matmul(block, n, d);
  row_major_matrix overlap_widened;
  if (product) {
    product->set_weights(overlap16.data());
  } else {
    overlap_widened.resize(n, d);
    widen_bf16(overlap16.data(), n * d, overlap_widened.data());
  }
  const std::string product_name = product ? "oneDNN " + product->implementation() : std::string("emulated");

  std::vector<agreement_worker> workers(static_cast<std::size_t>(threads));
  for (agreement_worker& w : workers) w.allocate(s, block, n, d, product.get());
  double overlap_residual = 0;
  for (Index j = 0; j < n; ++j)
    overlap_residual =
        std::max(overlap_residual, rounding_residual(overlap_rows.data() + j * d, overlap16.data() + j * d, d));
  clp::parallel_for(plan.count, threads, [&](Index b, int id) {
    agreement_worker& w = workers[std::size_t(id)];
    const Index row0 = b * block, m = std::min(block, missing - row0);
    std::memcpy(w.queries.data(), query_rows.data() + row0 * d, sizeof(float) * std::size_t(m * d));
    std::fill(w.queries.begin() + m * d, w.queries.end(), 0.0f);
    float_cosines(w.queries.data(), block, overlap_rows.data(), n, d, w.cosines.data());
    narrow_bf16(w.queries.data(), block * d, w.queries16.data());
    if (product) {
      product->run(w.queries16.data(), w.cosines16.data(), w.scratchpad.data());
    } else {
      widen_bf16(w.queries16.data(), block * d, w.queries_widened.data());
      float_cosines(w.queries_widened.data(), block, overlap_widened.data(), n, d, w.cosines16.data());
    }
    if (s.float64) {
      w.queries_exact.topRows(m) = query_exact.middleRows(row0, m);
      w.cosines_exact.noalias() = w.queries_exact * overlap_exact.transpose();
    }
    for (Index i = 0; i < m; ++i) {
      if (!(query_rows.row(row0 + i).squaredNorm() > 0))
        ++w.zero_norm;  // the engine's zero-norm fallback: no neighbours either way
      else
        compare_row(s, w, i, overlap_rows, overlap_residual);
    }
  });
  agreement_worker all;
  for (const agreement_worker& w : workers) all.add(w);
  std::printf("compared %lld rows (%lld zero-norm rows skipped) in %.1f s; bf16 product: %s\n",
              (long long)all.bf16_vs_f32.rows, (long long)all.zero_norm, seconds_since(start), product_name.c_str());
  const std::string tag = "source=" + s.source.string() + " helper=" + s.helper.string() +
                          " match=" + program::match_name(matching.used) + " overlap=" + std::to_string(n) +
                          " missing=" + std::to_string(missing) + " dim=" + std::to_string(d) +
                          " product=" + (product ? "onednn" : "emulated");
  print_agreement(s, all, tag, overlap_residual, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  try {
    if (s.mode == "gemm") return run_gemm(s);
    if (s.mode == "speed") return run_speed(s);
    return run_agreement(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_bf16: %s\n", e.what());
    return 1;
  }
}
