// SPDX-License-Identifier: MIT
//
// bench_bf16: does a BF16 similarity product pay?
//
// The top-k weighting spends its only large product, the similarity product, on the cosines of
// each block of missing rows with the overlapping rows (the default weighting, least_squares_map,
// forms the same product for its rows' norms). Every measurement of that work runs the engine
// (clp::synthesize_rows with clp::top_k_weights) or the public hook clp::similarity_product as
// the program's bf16 product implements it (onednn/bf16_product.hpp); nothing here forms cosines,
// selects or rescores the engine's way.
//
//   --gemm       the hardware's 4096^3 ceilings: float32 (Eigen + OpenBLAS, as the programs are
//                built) and bf16 x bf16 -> float32 (oneDNN), all threads.
//   --speed      the engine's top-k path on synthetic rows, float32 (no synthesis_options::
//                product) against the bf16 product. The source has one column, so the
//                combination reads one float per neighbour: the time is the product, each row's
//                selection and, on the bf16 path, preparing the overlap and the float32
//                rescoring. The hook is watched from outside (observed_product): its seconds
//                inside the engine, the block height the engine asks for, the bounds. Also the
//                hook alone, one block at a time on oneDNN's own threads.
//   --agreement  two real model folders, read as clp-transfer reads them and matched by bytes: how
//                often each missing row's top-k neighbours and top_k_weights differ between the
//                raw bf16 product (the hook's prepare and multiply, before rescoring) and the
//                engine's float32 choice, between the engine's bf16 (rescored) and float32
//                choices, and (--float64) each against a float64 referee of this program's own.
//
// The engine hands out no row's neighbours, so --agreement reads them back through a policy
// (one_rank_of_top_k) that keeps the r-th of top_k_weights' k neighbours with its cosine as the
// weight: on a source whose row j is (j, 1) the engine writes (cosine * j, cosine), neighbour and
// cosine exactly. k syntheses per path give all k.
//
// Output: human-readable lines, then "RESULT key=value ..." lines for scripts. Built only where
// oneDNN (Debian: libdnnl-dev) is found; see CMakeLists.txt and README.md.

#include <clp/clp.hpp>

#include <Eigen/Core>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_support.hpp"
#include "io/embedding_matrix.hpp"
#include "io/embedding_names.hpp"
#include "io/hf_checkpoint.hpp"
#include "onednn/bf16_product.hpp"

namespace {

using clp::Index;
using namespace clp_bench;
using row_major_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using row_major_double = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using bf16 = Eigen::bfloat16;

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
  bool float64 = false;
  // all
  Index k = 10;
  int threads = 2;
  int repeats = 3;
  double tile_mb = 0;  // 0: the library's default
  std::uint64_t seed = 0;
};

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "bench_bf16: %s\n\n", problem.c_str());
  std::fprintf(stderr,
               "usage: bench_bf16 --gemm [--size N] [--threads T] [--repeats R]\n"
               "       bench_bf16 --speed [--shape gpt2-xl|llama2-qwen3-exact|llama2-qwen3-bytes]\n"
               "                  [--missing M] [--overlap N] [--dim D] [--k K] [--threads T] [--repeats R]\n"
               "                  [--tile-mb MB] [--seed S]\n"
               "       bench_bf16 --agreement --source DIR --helper DIR [--match bytes|exact] [--k K]\n"
               "                  [--float64] [--threads T] [--tile-mb MB]\n"
               "Threads default to 2 (this machine's cores); times are the median of the repeats.\n");
  std::exit(2);
}

long long parse_int(const std::string& flag, const char* text) { return parse_integer(flag, text, usage); }

/// Missing rows x overlap x helper width: GPT2-XL (the benchmarks' synthetic shape), and a
/// Llama-2-7B source given Qwen3's vocabulary through a 151,680 x 1,024 helper, matched
/// exactly or by bytes (clp-transfer's default).
void set_shape(settings& s, const std::string& name) {
  s.shape_name = name;
  if (name == "gpt2-xl")
    s.missing = 38044, s.overlap = 12213, s.dim = 768;
  else if (name == "llama2-qwen3-exact")
    s.missing = 141114, s.overlap = 10566, s.dim = 1024;
  else if (name == "llama2-qwen3-bytes")
    s.missing = 122443, s.overlap = 29237, s.dim = 1024;
  else
    usage("unknown shape '" + name + "'");
}

settings parse(int argc, char** argv) {
  settings s;
  Index threads = s.threads, repeats = s.repeats, seed = 0;
  const std::pair<const char*, Index*> integers[] = {
      {"--missing", &s.missing}, {"--overlap", &s.overlap}, {"--dim", &s.dim}, {"--size", &s.gemm_size}, {"--k", &s.k},
      {"--threads", &threads},   {"--repeats", &repeats},   {"--seed", &seed}};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(flag + " expects a value");
      return argv[++i];
    };
    const auto integer = std::find_if(std::begin(integers), std::end(integers),
                                      [&](const std::pair<const char*, Index*>& o) { return flag == o.first; });
    if (integer != std::end(integers))
      *integer->second = parse_int(flag, value());
    else if (flag == "--gemm" || flag == "--speed" || flag == "--agreement")
      s.mode = flag.substr(2);
    else if (flag == "--shape")
      set_shape(s, value());
    else if (flag == "--source" || flag == "--helper")
      (flag == "--source" ? s.source : s.helper) = value();
    else if (flag == "--match") {
      const std::string name = value();
      if (name != "bytes" && name != "exact") usage("--match must be bytes or exact, not '" + name + "'");
      s.match = name == "bytes" ? clp::token_match::bytes : clp::token_match::exact;
    } else if (flag == "--float64")
      s.float64 = true;
    else if (flag == "--tile-mb")
      s.tile_mb = std::strtod(value(), nullptr);
    else
      usage(flag == "--help" || flag == "-h" ? "" : "unknown option '" + flag + "'");
  }
  s.threads = int(threads), s.repeats = int(repeats), s.seed = std::uint64_t(seed);
  if (s.mode.empty()) usage("give --gemm, --speed or --agreement");
  if (s.threads < 1 || s.repeats < 1 || s.gemm_size < 1 || s.k < 1 || s.tile_mb < 0)
    usage("invalid --threads, --repeats, --size, --k or --tile-mb");
  if (s.missing < 1 || s.overlap < s.k || s.dim < 1) usage("need --missing >= 1, --overlap >= k and --dim >= 1");
  if (s.mode == "agreement" && (s.source.empty() || s.helper.empty())) usage("--agreement needs --source and --helper");
  return s;
}

/// The engine's options: threads, tile budget, and the similarity product (null: float32).
clp::synthesis_options engine_options(const settings& s, std::shared_ptr<const clp::similarity_product> product) {
  clp::synthesis_options options;
  options.threads = s.threads;
  if (s.tile_mb > 0) options.tile_bytes = static_cast<std::size_t>(s.tile_mb * 1024 * 1024);
  options.product = std::move(product);
  return options;
}

/// The engine's workers run their own products: BLAS single-threaded inside them; oneDNN's
/// threads, where it runs outside them, an OpenMP team of `threads`.
void set_threads(int threads) {
  set_blas_threads(1);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
}

/// Each row scaled to unit norm (its norm summed in double); a zero row stays zero.
template <class Matrix>
void normalise_rows(Matrix& m, int threads) {
  clp::parallel_for(m.rows(), threads, [&](Index r, int) {
    const double norm = m.row(r).template cast<double>().norm();
    if (norm > 0) m.row(r) *= static_cast<typename Matrix::Scalar>(1.0 / norm);
  });
}

/// The instruction set oneDNN dispatches to on this CPU, by oneDNN's name for it.
std::string cpu_isa_name() {
  using isa = dnnl::cpu_isa;
  const std::pair<isa, const char*> names[] = {{isa::avx2, "avx2"},
                                               {isa::avx2_vnni, "avx2_vnni"},
                                               {isa::avx512_core, "avx512_core"},
                                               {isa::avx512_core_vnni, "avx512_core_vnni"},
                                               {isa::avx512_core_bf16, "avx512_core_bf16"},
                                               {isa::avx512_core_amx, "avx512_core_amx"}};
  for (const auto& [value, name] : names)
    if (value == dnnl::get_effective_cpu_isa()) return name;
  return "isa_" + std::to_string(int(dnnl::get_effective_cpu_isa()));
}

/// Says once why the bf16 product may be slow or missing here (see onednn/bf16_product.hpp).
void say_bf16_support() {
  const std::string reason = clp_transfer::onednn_bf16_unavailable_reason();
  if (!reason.empty()) std::printf("bf16: %s; oneDNN emulates bf16 or has no bf16 matmul\n", reason.c_str());
}

// --- --gemm: the hardware's ceilings, nothing of the engine

/// C (n x n, float32) = A B^T for bf16 A, B (n x n, row-major) through oneDNN's matmul, B
/// reordered once into the layout the kernel picks.
struct bf16_gemm {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory a, weights, c;

  bf16_gemm(Index n, bf16* a_data, bf16* b_data, float* c_data) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc ad({n, n}, dt::bf16, tag::ab), bd({n, n}, dt::bf16, tag::any),
        cd({n, n}, dt::f32, tag::ab);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), engine);
    primitive = dnnl::matmul(pd);
    a = dnnl::memory(ad, engine, a_data);
    c = dnnl::memory(cd, engine, c_data);
    dnnl::memory user({{n, n}, dt::bf16, tag::ba}, engine, b_data);
    weights = dnnl::memory(pd.weights_desc(), engine);
    dnnl::stream stream(engine);
    dnnl::reorder(user, weights).execute(stream, user, weights);
    stream.wait();
  }

  void run() {
    dnnl::stream stream(engine);
    primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

int run_gemm(const settings& s) {
  const Index n = s.gemm_size;
  const double flop = 2.0 * double(n) * double(n) * double(n);
  const int tries = std::max(s.repeats, 3);
  const double best_f32 = float32_gemm_seconds(n, s.threads, tries);
  std::printf("gemm %lld^3, %d threads: float32 (%s) best %.4f s = %.1f GFLOP/s\n", (long long)n, s.threads,
              blas_backend().c_str(), best_f32, flop / best_f32 / 1e9);
#ifdef _OPENMP
  omp_set_num_threads(s.threads);  // oneDNN's own threads
#endif
  double best_bf16 = 0;
  std::string implementation = "none";
  try {
    const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
    std::vector<bf16> a16(std::size_t(n * n)), b16(std::size_t(n * n));
    clp::from_float32(a.data(), n * n, a16.data());
    clp::from_float32(b.data(), n * n, b16.data());
    std::vector<float> c(std::size_t(n * n));
    bf16_gemm gemm(n, a16.data(), b16.data(), c.data());
    gemm.run();  // warm-up
    best_bf16 = 1e300;
    for (int r = 0; r < tries; ++r) {
      const auto start = clock_type::now();
      gemm.run();
      best_bf16 = std::min(best_bf16, seconds_since(start));
    }
    implementation = gemm.pd.impl_info_str();
    std::printf("gemm %lld^3, %d threads: bf16 (oneDNN %s) best %.4f s = %.1f GFLOP/s\n", (long long)n, s.threads,
                implementation.c_str(), best_bf16, flop / best_bf16 / 1e9);
  } catch (const dnnl::error& e) {
    std::printf("bf16: oneDNN has no bf16 matmul on this CPU (%s): %s\n", cpu_isa_name().c_str(), e.what());
  }
  std::printf(
      "RESULT mode=gemm size=%lld threads=%d isa=%s f32_backend=%s f32_seconds=%.6f f32_gflops=%.2f bf16_impl=%s "
      "bf16_seconds=%.6f bf16_gflops=%.2f\n",
      (long long)n, s.threads, cpu_isa_name().c_str(), blas_backend().c_str(), best_f32, flop / best_f32 / 1e9,
      implementation.c_str(), best_bf16, best_bf16 > 0 ? flop / best_bf16 / 1e9 : 0.0);
  return 0;
}

// --- the bf16 product, watched through the hook

/// The program's bf16 product, passed through unchanged, with what the engine asked of it
/// recorded: the block height, the seconds spent preparing and multiplying (per worker), and the
/// bounds returned for the rows that are not padding.
class observed_product final : public clp::similarity_product {
 public:
  struct worker_tally {
    double seconds = 0, bound_sum = 0;
    Index blocks = 0, rows = 0;
  };
  struct tally {
    Index max_block_rows = 0, preparations = 0;
    double prepare_seconds = 0;
    std::string implementation;
    std::vector<worker_tally> workers;
  };

  std::string name() const override { return inner_.name(); }

  std::unique_ptr<clp::prepared_similarity> prepare(const float* rows, Index n, Index d, Index max_block_rows,
                                                    int threads) const override {
    const auto start = clock_type::now();
    auto ready = inner_.prepare(rows, n, d, max_block_rows, threads);
    seen_.prepare_seconds += seconds_since(start);
    ++seen_.preparations;
    seen_.max_block_rows = max_block_rows;
    if (const auto* onednn = dynamic_cast<const clp_transfer::onednn_bf16_product::ready*>(ready.get()))
      seen_.implementation = onednn->implementation();
    if (seen_.workers.size() < std::size_t(threads)) seen_.workers.resize(std::size_t(threads));
    return std::make_unique<watched>(std::move(ready), d, seen_);
  }

  const tally& seen() const { return seen_; }

 private:
  class watched final : public clp::prepared_similarity {
   public:
    watched(std::unique_ptr<clp::prepared_similarity> inner, Index d, tally& seen)
        : inner_(std::move(inner)), d_(d), seen_(seen) {}

    void multiply(const float* queries, Index rows, float* cosines, float* bound, int worker) const override {
      const auto start = clock_type::now();
      inner_->multiply(queries, rows, cosines, bound, worker);
      worker_tally& own = seen_.workers[std::size_t(worker)];
      own.seconds += seconds_since(start);
      ++own.blocks;
      for (Index i = 0; i < rows; ++i) {
        const float* q = queries + i * d_;
        if (std::all_of(q, q + d_, [](float x) { return x == 0.0f; })) continue;  // padding
        own.bound_sum += bound[i];
        ++own.rows;
      }
    }

   private:
    std::unique_ptr<clp::prepared_similarity> inner_;
    Index d_;
    tally& seen_;
  };

  clp_transfer::onednn_bf16_product inner_;
  mutable tally seen_;
};

/// The sums over the workers of an observed_product's tally.
observed_product::worker_tally total_of(const observed_product::tally& seen) {
  observed_product::worker_tally total;
  for (const observed_product::worker_tally& w : seen.workers) {
    total.seconds += w.seconds;
    total.bound_sum += w.bound_sum;
    total.blocks += w.blocks;
    total.rows += w.rows;
  }
  return total;
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

/// --speed's synthetic transfer: helper rows N(0, 1) plus one shared N(0, 1) row (as
/// bench_synthesis draws them), normalised, the first `overlap` of them overlapping and the
/// rest missing; a source of one N(0, 1) column, so the combination costs next to nothing.
struct speed_inputs {
  row_major_matrix helper, source;
  clp::vocabulary_overlap overlap;

  explicit speed_inputs(const settings& s) {
    const auto start = clock_type::now();
    const Index n = s.overlap, rows = s.overlap + s.missing, d = s.dim;
    std::vector<float> shared(static_cast<std::size_t>(d));
    fill_standard_normal(shared.data(), d, stream_key(s.seed, 0, ~std::uint64_t(0)));
    helper.resize(rows, d);
    source.resize(n, 1);
    clp::parallel_for(rows, s.threads, [&](Index r, int) {
      fill_standard_normal(helper.row(r).data(), d, stream_key(s.seed, 1, std::uint64_t(r)));
      helper.row(r) += Eigen::Map<const Eigen::RowVectorXf>(shared.data(), d);
    });
    normalise_rows(helper, s.threads);
    for (Index j = 0; j < n; ++j) fill_standard_normal(source.data() + j, 1, stream_key(s.seed, 2, std::uint64_t(j)));
    overlap.target_ids.resize(std::size_t(n));
    std::iota(overlap.target_ids.begin(), overlap.target_ids.end(), Index(0));
    overlap.source_ids = overlap.target_ids;
    overlap.missing_ids.resize(std::size_t(s.missing));
    std::iota(overlap.missing_ids.begin(), overlap.missing_ids.end(), n);
    overlap.source_vocab_size = n;
    overlap.target_vocab_size = rows;
    std::printf("shape %s: %lld missing x %lld overlap x d %lld, k %lld, %d workers; inputs in %.1f s\n",
                s.shape_name.c_str(), (long long)s.missing, (long long)n, (long long)d, (long long)s.k, s.threads,
                seconds_since(start));
  }
};

/// One path of the engine's top-k synthesis, `repeats` times: the median time, the last
/// report, and the output (one column).
struct path_run {
  timed time;
  clp::synthesis_report report;
  std::vector<float> output;
};

path_run run_path(const settings& s, const speed_inputs& x, std::shared_ptr<const clp::similarity_product> product) {
  const clp::synthesis_options options = engine_options(s, std::move(product));
  path_run run;
  const Index rows = x.helper.rows();
  run.output.assign(std::size_t(rows), 0.0f);
  run.time = time_repeats(s.repeats, [&] {
    run.report =
        clp::synthesize_rows(x.source, x.helper, x.overlap, clp::matrix_view<float>(run.output.data(), rows, 1),
                             clp::top_k_weights{s.k}, options);
  });
  return run;
}

/// The hook alone, called one block at a time from this thread (oneDNN then runs on its own
/// OpenMP team): how the engine could call it if products nested in its workers were slow.
/// Blocks of the height the engine asked for.
timed time_outer(const settings& s, const speed_inputs& x, Index block) {
  const Index n = s.overlap, d = s.dim;
  const clp_transfer::onednn_bf16_product product{};
  const auto ready = product.prepare(x.helper.data(), n, d, block, 1);
  row_major_matrix queries(block, d);
  std::vector<float> cosines(static_cast<std::size_t>(block * n)), bound(static_cast<std::size_t>(block));
  return time_repeats(s.repeats, [&] {
    for (Index row0 = 0; row0 < s.missing; row0 += block) {
      const Index rows = std::min(block, s.missing - row0);
      queries.topRows(rows) = x.helper.middleRows(n + row0, rows);
      queries.bottomRows(block - rows).setZero();
      ready->multiply(queries.data(), block, cosines.data(), bound.data(), 0);
    }
  });
}

/// Missing rows whose outputs differ by more than rounding. The weights of the two paths differ
/// by float32 rounding (the bf16 path's rescored cosines are rounded once, the float32 product
/// step by step), which moves an output of this source by about 1e-7; a different neighbour
/// moves it by its weight times the difference of two N(0, 1) values.
Index differing_rows(const path_run& a, const path_run& b, const clp::vocabulary_overlap& overlap) {
  Index count = 0;
  for (Index t : overlap.missing_ids) count += std::abs(a.output[std::size_t(t)] - b.output[std::size_t(t)]) > 1e-5f;
  return count;
}

/// A timing line; `flop` 0: no rate, `cores_busy` 0: not measured.
void print_line(const char* what, double seconds, double flop, double cores_busy) {
  std::printf("  %-52s %9.3f s", what, seconds);
  if (flop > 0) std::printf("  %7.1f GFLOP/s", flop / seconds / 1e9);
  if (cores_busy > 0) std::printf("  (cores busy %.2f)", cores_busy);
  std::printf("\n");
}

void print_speed(const settings& s, const path_run& f32, const path_run& b16, const observed_product::tally& seen,
                 const timed& outer, Index differing) {
  const double flop = 2.0 * double(s.missing) * double(s.overlap) * double(s.dim), gflop = flop / 1e9;
  const observed_product::worker_tally total = total_of(seen);
  const double runs = double(std::max<Index>(seen.preparations, 1));
  // The product's share of one synthesis' wall time: its seconds over the workers.
  const double product = total.seconds / runs / double(s.threads), convert = seen.prepare_seconds / runs;
  const double candidates =
      double(b16.report.rescored_candidates) / double(std::max<Index>(b16.report.rescored_rows, 1));
  const double bound = total.bound_sum / double(std::max<Index>(total.rows, 1));
  const Index blocks = Index(double(total.blocks) / runs);
  std::printf("the top-k path of clp::synthesize_rows, one-column source (%.1f GFLOP of cosines), median of %d:\n",
              gflop, s.repeats);
  print_line(("float32 (" + blas_backend() + "): product + selection").c_str(), f32.time.seconds, flop,
             f32.time.cores_busy);
  print_line(("bf16 (oneDNN " + seen.implementation + "): + rescoring").c_str(), b16.time.seconds, flop,
             b16.time.cores_busy);
  print_line("  of which the bf16 product (the hook's multiply)", product, flop, 0);
  print_line("  of which preparing N (rounding, reorder)", convert, 0, 0);
  print_line("bf16 product alone, one block at a time, all threads", outer.seconds, flop, outer.cores_busy);
  std::printf("  blocks of %lld rows, %lld per synthesis; speed-up of the bf16 path %.2fx\n",
              (long long)seen.max_block_rows, (long long)blocks, f32.time.seconds / b16.time.seconds);
  std::printf("  rescoring: %lld rows, %.1f candidates per row; mean bound %.5f\n", (long long)b16.report.rescored_rows,
              candidates, bound);
  std::printf("  check: outputs of the two paths differ beyond rounding in %lld of %lld rows\n", (long long)differing,
              (long long)s.missing);
  std::printf(
      "RESULT mode=speed shape=%s missing=%lld overlap=%lld dim=%lld k=%lld block=%lld blocks=%lld threads=%d "
      "repeats=%d gflop=%.2f f32_backend=%s f32_selected_seconds=%.6f f32_selected_gflops=%.2f f32_cores_busy=%.2f "
      "bf16_impl=%s rescored_seconds=%.6f rescored_gflops=%.2f rescored_cores_busy=%.2f speedup_rescored=%.3f "
      "bf16_seconds=%.6f bf16_gflops=%.2f bf16_with_n_seconds=%.6f bf16_with_n_gflops=%.2f n_convert_seconds=%.6f "
      "bf16_outer_seconds=%.6f bf16_outer_gflops=%.2f rescored_rows=%lld candidates_per_row=%.2f bound_mean=%.5f "
      "outputs_differ=%lld\n",
      s.shape_name.c_str(), (long long)s.missing, (long long)s.overlap, (long long)s.dim, (long long)s.k,
      (long long)seen.max_block_rows, (long long)blocks, s.threads, s.repeats, gflop, blas_backend().c_str(),
      f32.time.seconds, gflop / f32.time.seconds, f32.time.cores_busy, seen.implementation.c_str(), b16.time.seconds,
      gflop / b16.time.seconds, b16.time.cores_busy, f32.time.seconds / b16.time.seconds, product, gflop / product,
      product + convert, gflop / (product + convert), convert, outer.seconds, gflop / outer.seconds,
      (long long)b16.report.rescored_rows, candidates, bound, (long long)differing);
}

int run_speed(const settings& s) {
  const speed_inputs x(s);
  set_threads(s.threads);
  say_bf16_support();
  const path_run f32 = run_path(s, x, nullptr);
  const auto observed = std::make_shared<observed_product>();
  path_run b16;
  try {
    b16 = run_path(s, x, observed);
  } catch (const dnnl::error& e) {
    std::printf("bf16: oneDNN has no bf16 matmul on this CPU (%s): %s\n", cpu_isa_name().c_str(), e.what());
    std::printf(
        "RESULT mode=speed shape=%s missing=%lld overlap=%lld dim=%lld k=%lld isa=%s f32_backend=%s "
        "f32_selected_seconds=%.6f bf16_impl=none\n",
        s.shape_name.c_str(), (long long)s.missing, (long long)s.overlap, (long long)s.dim, (long long)s.k,
        cpu_isa_name().c_str(), blas_backend().c_str(), f32.time.seconds);
    return 0;
  }
  const timed outer = time_outer(s, x, observed->seen().max_block_rows);
  print_speed(s, f32, b16, observed->seen(), outer, differing_rows(f32, b16, x.overlap));
  return 0;
}

// --- --agreement

/// One row's top k overlap positions, best first, with their cosines and top_k_weights'
/// weights (empty where it falls back: no positive cosine).
struct ranking {
  std::vector<Index> ids;
  std::vector<double> cosines, weights;
};

/// A ranking from its ids (best first) and their float cosines, weighed by clp::top_k_weights.
ranking weighed(std::vector<Index> ids, const std::vector<float>& cosines) {
  const Index count = Index(ids.size());
  std::vector<Index> order(static_cast<std::size_t>(count));
  std::vector<float> weight(static_cast<std::size_t>(count));
  const Index pairs = clp::top_k_weights{count}(cosines.data(), count, order.data(), weight.data());
  ranking r{std::move(ids), {cosines.begin(), cosines.end()}, {}};
  if (pairs > 0) r.weights.assign(std::size_t(count), 0.0);
  for (Index i = 0; i < pairs; ++i) r.weights[std::size_t(order[std::size_t(i)])] = weight[std::size_t(i)];
  return r;
}

/// The ranking of a whole row of float cosines: clp::select_top_k's k, weighed.
ranking ranked(const float* row, Index n, Index k) {
  std::vector<Index> ids(static_cast<std::size_t>(k));
  ids.resize(std::size_t(clp::select_top_k(row, n, k, ids.data())));
  std::vector<float> cosines;
  for (Index id : ids) cosines.push_back(row[id]);
  return weighed(std::move(ids), cosines);
}

/// The float64 referee's ranking: the k largest under "larger, then lower index", weighed by
/// top_k_weights' rule (clamped cosines over their sum), all in double.
ranking referee_ranking(const double* row, Index n, Index k) {
  std::vector<Index> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), Index(0));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](Index a, Index b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  ids.resize(std::size_t(k));
  ranking r;
  double sum = 0;
  for (Index id : ids) r.cosines.push_back(row[id]), sum += std::max(row[id], 0.0);
  if (sum > 0)
    for (double c : r.cosines) r.weights.push_back(std::max(c, 0.0) / sum);
  r.ids = std::move(ids);
  return r;
}

/// One rank of top_k_weights' choice (see the top of this file): the rank-th of the k neighbours
/// clp::select_top_k picks, which is what top_k_weights picks by, with its cosine as the weight.
struct one_rank_of_top_k {
  static constexpr clp::weighting_input input = clp::weighting_input::nearest_cosines;
  Index k = 10, rank = 0;

  Index max_neighbours(Index n) const { return clp::top_k_weights{k}.max_neighbours(n); }

  Index operator()(const float* cosines, Index n, Index* neighbour, float* weight) const {
    thread_local std::vector<Index> chosen;
    chosen.resize(std::size_t(k));
    if (clp::select_top_k(cosines, n, k, chosen.data()) <= rank) return 0;
    neighbour[0] = chosen[std::size_t(rank)];
    weight[0] = cosines[neighbour[0]];
    return 1;
  }
};

/// The engine's choice for each of `rows` (target ids): k overlap positions, best first, and
/// the cosines the policy chose them by; a position of -1 where the output could not be read.
struct engine_choice {
  Index k = 0;
  std::vector<Index> ids;
  std::vector<float> cosines;
  clp::synthesis_report report;
  double seconds = 0;

  bool readable(std::size_t row) const {
    return std::none_of(ids.begin() + Index(row) * k, ids.begin() + Index(row + 1) * k, [](Index j) { return j < 0; });
  }
  ranking row(std::size_t row) const {
    const auto first = std::size_t(Index(row) * k), last = first + std::size_t(k);
    return weighed({ids.begin() + Index(first), ids.begin() + Index(last)},
                   {cosines.begin() + Index(first), cosines.begin() + Index(last)});
  }
};

/// k syntheses of the top-k path, rank r in the r-th, on a source whose row j is (j, 1): the
/// output row of a missing token is (cosine * j, cosine) for its rank-r neighbour j.
engine_choice choice_of_engine(const settings& s, const clp::matrix_view<const void>& helper,
                               const clp::vocabulary_overlap& overlap, const std::vector<Index>& rows,
                               std::shared_ptr<const clp::similarity_product> product) {
  const Index n = overlap.size(), k = s.k, target_rows = overlap.target_rows();
  // The overlap as matched, but position j reading source row j: the neighbour choice depends on
  // the helper rows alone, and row j of the source then names position j.
  clp::vocabulary_overlap renumbered = overlap;
  std::iota(renumbered.source_ids.begin(), renumbered.source_ids.end(), Index(0));
  renumbered.source_vocab_size = n;
  row_major_matrix source(n, 2);
  for (Index j = 0; j < n; ++j) source(j, 0) = float(j), source(j, 1) = 1.0f;
  std::vector<float> output(std::size_t(target_rows * 2));
  const clp::synthesis_options options = engine_options(s, std::move(product));
  engine_choice choice{k,
                       std::vector<Index>(rows.size() * std::size_t(k), -1),
                       std::vector<float>(rows.size() * std::size_t(k), 0.0f),
                       {},
                       0};
  const auto start = clock_type::now();
  for (Index rank = 0; rank < k; ++rank) {
    choice.report =
        clp::synthesize_rows(source, helper, renumbered, clp::matrix_view<float>(output.data(), target_rows, 2),
                             one_rank_of_top_k{k, rank}, options);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const float* out = output.data() + rows[i] * 2;
      const long long j = out[1] != 0 ? std::llround(double(out[0]) / double(out[1])) : -1;
      if (j < 0 || j >= n || out[1] * float(j) != out[0]) continue;
      choice.ids[i * std::size_t(k) + std::size_t(rank)] = Index(j);
      choice.cosines[i * std::size_t(k) + std::size_t(rank)] = out[1];
    }
  }
  choice.seconds = seconds_since(start);
  return choice;
}

/// How two rankings of the same rows compare.
struct comparison {
  Index rows = 0, set_differs = 0, first_differs = 0;
  double shared = 0;                        // sum over rows of |A ∩ B| / k
  double weight_l1 = 0, weight_l1_max = 0;  // sum_j |w_A - w_B| over the union
  double cosine_abs_max = 0, cosine_square_sum = 0, cosine_count = 0;

  void add_error(double e) {
    cosine_abs_max = std::max(cosine_abs_max, std::abs(e));
    cosine_square_sum += e * e;
    cosine_count += 1;
  }

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

void compare(comparison& c, const ranking& a, const ranking& b, Index k) {
  ++c.rows;
  std::vector<Index> sa = a.ids, sb = b.ids, common;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(common));
  if (common.size() != sa.size() || sa.size() != sb.size()) ++c.set_differs;
  if (a.ids.empty() != b.ids.empty() || (!a.ids.empty() && a.ids[0] != b.ids[0])) ++c.first_differs;
  c.shared += double(common.size()) / double(k);  // the overlap holds at least k rows
  // Weights as maps id -> weight over the union.
  const auto weight = [](const ranking& r, Index id) {
    for (std::size_t i = 0; i < r.ids.size(); ++i)
      if (r.ids[i] == id) return r.weights.empty() ? 0.0 : r.weights[i];
    return 0.0;
  };
  double l1 = 0;
  for (Index id : a.ids) l1 += std::abs(weight(a, id) - weight(b, id));
  for (Index id : b.ids)
    if (std::find(a.ids.begin(), a.ids.end(), id) == a.ids.end()) l1 += std::abs(weight(b, id));
  c.weight_l1 += l1;
  c.weight_l1_max = std::max(c.weight_l1_max, l1);
}

void print_comparison(const char* name, const comparison& c, Index k, const std::string& tag) {
  const double rows = double(std::max<Index>(c.rows, 1));
  // Rankings compared without cosines of their own (the rescored one) report no cosine error.
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

/// What --agreement compares: the overlap as clp-transfer transfer matches the two folders, its
/// missing rows that a token names (padding rows have no neighbours worth comparing), and the
/// helper's rows normalised (in double too, for the referee).
struct agreement_data {
  clp::vocabulary_overlap overlap;
  std::vector<Index> rows;
  row_major_matrix overlap_rows, queries;
  row_major_double overlap_exact, queries_exact;
  std::vector<bool> zero;  // per query row: a zero helper row, which no product weighs
  std::string tag;
};

/// Rows `ids` of the helper as float32, normalised; with `exact`, also in double.
void read_rows(const clp_transfer::embedding_matrix& helper, const std::vector<Index>& ids, int threads,
               row_major_matrix& rows, row_major_double* exact) {
  rows.resize(Index(ids.size()), helper.cols());
  helper.visit([&](auto view) {
    clp::parallel_for(rows.rows(), threads, [&](Index i, int) {
      for (Index c = 0; c < rows.cols(); ++c) rows(i, c) = static_cast<float>(view(ids[std::size_t(i)], c));
    });
  });
  if (exact) {
    *exact = rows.cast<double>();
    normalise_rows(*exact, threads);
  }
  normalise_rows(rows, threads);
}

/// A worker's buffers and tallies of the comparison.
struct agreement_worker {
  row_major_matrix queries, cosines;
  std::vector<float> bound;
  row_major_double queries_exact, cosines_exact;
  comparison bf16_vs_f32, rescored_vs_f32, f32_vs_f64, bf16_vs_f64, rescored_vs_f64;
  double bound_sum = 0;

  void add(const agreement_worker& w) {
    bf16_vs_f32.add(w.bf16_vs_f32);
    rescored_vs_f32.add(w.rescored_vs_f32);
    f32_vs_f64.add(w.f32_vs_f64);
    bf16_vs_f64.add(w.bf16_vs_f64);
    rescored_vs_f64.add(w.rescored_vs_f64);
    bound_sum += w.bound_sum;
  }
};

/// Row i of worker w's block (query `row`), ranked every way and compared: the raw bf16
/// product's cosines, the engine's float32 and rescored choices, and with --float64 the referee.
/// Cosine errors are over the float32 choice's k where the float32 cosines are only known there.
void compare_row(const settings& s, agreement_worker& w, Index i, std::size_t row, const engine_choice& f32,
                 const engine_choice& rescored) {
  const Index n = w.cosines.cols(), k = s.k;
  const float* c16 = w.cosines.row(i).data();
  const ranking r16 = ranked(c16, n, k), r32 = f32.row(row), rr = rescored.row(row);
  compare(w.bf16_vs_f32, r16, r32, k);
  for (std::size_t j = 0; j < r32.ids.size(); ++j) w.bf16_vs_f32.add_error(c16[r32.ids[j]] - r32.cosines[j]);
  compare(w.rescored_vs_f32, rr, r32, k);
  w.bound_sum += w.bound[std::size_t(i)];
  if (!s.float64) return;
  const double* c64 = w.cosines_exact.row(i).data();
  const ranking r64 = referee_ranking(c64, n, k);
  compare(w.f32_vs_f64, r32, r64, k);
  for (std::size_t j = 0; j < r32.ids.size(); ++j) w.f32_vs_f64.add_error(r32.cosines[j] - c64[r32.ids[j]]);
  compare(w.bf16_vs_f64, r16, r64, k);
  for (Index j = 0; j < n; ++j) w.bf16_vs_f64.add_error(double(c16[j]) - c64[j]);
  compare(w.rescored_vs_f64, rr, r64, k);
}

/// The raw bf16 cosines through the hook (prepare, then multiply per block of the engine's
/// height), every usable row compared; returns the workers' sums.
agreement_worker compare_all(const settings& s, const agreement_data& a, const engine_choice& f32,
                             const engine_choice& rescored, Index block) {
  const Index n = a.overlap_rows.rows(), d = a.overlap_rows.cols(), m = Index(a.rows.size());
  const clp_transfer::onednn_bf16_product product{};
  const auto ready = product.prepare(a.overlap_rows.data(), n, d, block, s.threads);
  std::vector<agreement_worker> workers(static_cast<std::size_t>(s.threads));
  for (agreement_worker& w : workers) {
    w.queries.resize(block, d);
    w.cosines.resize(block, n);
    w.bound.resize(std::size_t(block));
    if (s.float64) w.queries_exact.resize(block, d), w.cosines_exact.resize(block, n);
  }
  clp::parallel_for((m + block - 1) / block, s.threads, [&](Index b, int id) {
    agreement_worker& w = workers[std::size_t(id)];
    const Index row0 = b * block, rows = std::min(block, m - row0);
    w.queries.topRows(rows) = a.queries.middleRows(row0, rows);
    w.queries.bottomRows(block - rows).setZero();
    ready->multiply(w.queries.data(), block, w.cosines.data(), w.bound.data(), id);
    if (s.float64) {
      w.queries_exact.topRows(rows) = a.queries_exact.middleRows(row0, rows);
      w.queries_exact.bottomRows(block - rows).setZero();
      w.cosines_exact.noalias() = w.queries_exact * a.overlap_exact.transpose();
    }
    for (Index i = 0; i < rows; ++i) {
      const std::size_t row = std::size_t(row0 + i);
      if (!a.zero[row] && f32.readable(row) && rescored.readable(row)) compare_row(s, w, i, row, f32, rescored);
    }
  });
  agreement_worker all;
  for (const agreement_worker& w : workers) all.add(w);
  return all;
}

void print_agreement(const settings& s, const agreement_data& a, const agreement_worker& all,
                     const engine_choice& rescored) {
  print_comparison("bf16_vs_f32", all.bf16_vs_f32, s.k, a.tag);
  print_comparison("rescored_vs_f32", all.rescored_vs_f32, s.k, a.tag);
  if (s.float64) {
    print_comparison("f32_vs_f64", all.f32_vs_f64, s.k, a.tag);
    print_comparison("bf16_vs_f64", all.bf16_vs_f64, s.k, a.tag);
    print_comparison("rescored_vs_f64", all.rescored_vs_f64, s.k, a.tag);
  }
  const clp::synthesis_report& report = rescored.report;
  const double bound = all.bound_sum / double(std::max<Index>(1, all.bf16_vs_f32.rows));
  const double candidates = double(report.rescored_candidates) / double(std::max<Index>(1, report.rescored_rows));
  std::printf("  rescoring (the engine's report): %lld rows, %.1f candidates per row of %lld; mean bound %.5f\n",
              (long long)report.rescored_rows, candidates, (long long)a.overlap.size(), bound);
  std::printf("RESULT mode=rescoring %s bound_mean=%.5f rescored_rows=%lld candidates_mean=%.2f\n", a.tag.c_str(),
              bound, (long long)report.rescored_rows, candidates);
}

/// The vocabularies of the two folders intersected by the library as --match asks: by bytes where
/// both tokenizers declare a spelling clp::token_bytes reads, else exactly (`used` says which).
/// Special tokens are matched as any other token, not by role as clp-transfer transfer matches
/// them, which moves at most a few rows between the overlap and the missing rows.
clp::vocabulary_overlap match_folders(const settings& s, const clp_transfer::hf_checkpoint& source,
                                      const clp_transfer::hf_checkpoint& helper, Index source_rows, Index helper_rows,
                                      clp::token_match& used) {
  const auto usable = [](const clp_transfer::tokenizer_spelling& spelling) {
    const bool wordpiece = spelling.kind && *spelling.kind == clp::token_spelling::wordpiece;
    return spelling.kind && (!wordpiece || spelling.continuing_prefix == "##");
  };
  clp::intersect_options options;
  options.source_rows = source_rows;
  options.target_rows = helper_rows;
  const bool bytes =
      s.match == clp::token_match::bytes && usable(source.tokenizer.spelling) && usable(helper.tokenizer.spelling);
  used = options.match = bytes ? clp::token_match::bytes : clp::token_match::exact;
  if (bytes) {
    options.source_spelling = *source.tokenizer.spelling.kind;
    options.target_spelling = *helper.tokenizer.spelling.kind;
  }
  return clp::intersect_vocabularies(source.tokenizer.vocabulary.ids, helper.tokenizer.vocabulary.ids, options);
}

const char* match_name(clp::token_match match) { return match == clp::token_match::bytes ? "bytes" : "exact"; }

/// The two folders read and matched (match_folders), and the rows to compare.
agreement_data load_agreement(const settings& s, const clp_transfer::hf_checkpoint& source_model,
                              const clp_transfer::hf_checkpoint& helper_model,
                              const clp_transfer::embedding_matrix& helper) {
  namespace program = clp_transfer;
  const std::string source_name = program::io::find_input_embedding(s.source, source_model.weights.tensor_names());
  const Index source_rows = Index(source_model.weights.locate(source_name).tensor.shape.at(0));
  clp::token_match used = clp::token_match::exact;
  agreement_data a;
  a.overlap = match_folders(s, source_model, helper_model, source_rows, helper.rows(), used);
  std::set_difference(a.overlap.missing_ids.begin(), a.overlap.missing_ids.end(), a.overlap.unnamed_ids.begin(),
                      a.overlap.unnamed_ids.end(), std::back_inserter(a.rows));
  const Index d = helper.cols(), n = a.overlap.size(), missing = Index(a.rows.size());
  std::printf(
      "source %s (%lld rows), helper %s (%lld x %lld %s); matched %s: overlap %lld, missing %lld (+ %zu padding)\n",
      s.source.c_str(), (long long)source_rows, s.helper.c_str(), (long long)helper.rows(), (long long)d,
      helper.dtype_name().c_str(), match_name(used), (long long)n, (long long)missing, a.overlap.unnamed_ids.size());
  read_rows(helper, a.overlap.target_ids, s.threads, a.overlap_rows, s.float64 ? &a.overlap_exact : nullptr);
  read_rows(helper, a.rows, s.threads, a.queries, s.float64 ? &a.queries_exact : nullptr);
  for (Index i = 0; i < missing; ++i) a.zero.push_back(!(a.queries.row(i).squaredNorm() > 0));
  a.tag = "source=" + s.source.string() + " helper=" + s.helper.string() + " match=" + std::string(match_name(used)) +
          " overlap=" + std::to_string(n) + " missing=" + std::to_string(missing) + " dim=" + std::to_string(d) +
          " product=onednn";
  return a;
}

int run_agreement(const settings& s) {
  namespace program = clp_transfer;
  const auto start = clock_type::now();
  set_threads(s.threads);
  say_bf16_support();
  const program::hf_checkpoint source_model = program::hf_checkpoint::read(s.source);
  const program::hf_checkpoint helper_model = program::hf_checkpoint::read(s.helper);
  const program::embedding_matrix helper = program::embedding_matrix::read(
      helper_model.weights, program::io::find_input_embedding(s.helper, helper_model.weights.tensor_names()));
  const agreement_data a = load_agreement(s, source_model, helper_model, helper);
  if (a.overlap.size() < s.k || a.rows.empty()) {
    std::fprintf(stderr, "bench_bf16: the overlap (%lld) is smaller than k or no row is missing\n",
                 (long long)a.overlap.size());
    return 1;
  }
  const engine_choice f32 = choice_of_engine(s, helper.view(), a.overlap, a.rows, nullptr);
  const auto observed = std::make_shared<observed_product>();
  const engine_choice rescored = choice_of_engine(s, helper.view(), a.overlap, a.rows, observed);
  const agreement_worker all = compare_all(s, a, f32, rescored, observed->seen().max_block_rows);
  const Index zero = Index(std::count(a.zero.begin(), a.zero.end(), true));
  std::printf(
      "compared %lld rows (%lld zero-norm rows skipped, %lld unreadable) in %.1f s; the engine's choices: %lld "
      "syntheses each, float32 %.1f s, bf16 %.1f s; bf16 product: oneDNN %s\n",
      (long long)all.bf16_vs_f32.rows, (long long)zero, (long long)(Index(a.rows.size()) - zero - all.bf16_vs_f32.rows),
      seconds_since(start), (long long)s.k, f32.seconds, rescored.seconds, observed->seen().implementation.c_str());
  print_agreement(s, a, all, rescored);
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
