// SPDX-License-Identifier: MIT
//
// bench_synthesis: times clp::synthesize_rows on synthetic embeddings shaped like real
// transfers, and (with --gemm) this build's best float32 matrix-product rate, so that the
// synthesis rate can be read against what the machine can do at all.
//
// Inputs follow the distribution of the NumPy peer's synth_inputs (../shared/peers/
// clp_reference.py): source rows N(0, 1) plus 0.5 times one shared N(0, 1) row, helper rows
// N(0, 1) plus 1.0 times another shared row (anisotropic, as trained embeddings are, so
// cosine sums stay positive); target ids 0..overlap-1 overlap, target t <-> source
// (t * 7919) % source_vocab, source_vocab = target_vocab. The random stream differs from
// NumPy's; the distribution is the same.
//
// Built twice (see CMakeLists.txt): bench_synthesis hands Eigen's float products to OpenBLAS,
// bench_synthesis_eigen uses Eigen's own kernels.
//
// Output: human-readable lines, then one "RESULT key=value ..." line for scripts.

#include <clp/clp.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_support.hpp"

namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using namespace clp_bench;

struct shape {
  clp::Index target_vocab = 8000, overlap = 2000, helper_dim = 256, source_dim = 1024;
};

struct settings {
  shape dims;
  std::string shape_name = "custom";
  int threads = 0;
  double tile_mb = 0;  // 0: the library's default
  std::string weighting = "paper";
  clp::Index k = 0;  // 0: the policy's default (10 for top-k and softmax, 8 for omp)
  float temperature = 0.1f;
  double max_gram_mb = -1;  // omp: omp_weights::max_gram_bytes in MiB (< 0: the library's default)
  int repeats = 3;
  std::uint64_t seed = 0;
  bool gemm = false;
  clp::Index gemm_size = 4096;
  clp::Index product_rows = 0, product_cols = 0, product_depth = 0;  // --similarity-product M N K
  bool verify = true;
};

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "bench_synthesis: %s\n\n", problem.c_str());
  std::fprintf(stderr,
               "usage: bench_synthesis [--shape small|gpt2-xl|bloom-7b1-de]\n"
               "                       [--target-vocab N] [--overlap N] [--helper-dim N] [--source-dim N]\n"
               "                       [--threads T] [--tile-mb MB] [--weighting "
               "paper|paper-guarded|clamped|top-k|softmax|sparsemax|omp]\n"
               "                       [--k K] [--temperature T] [--max-gram-mb MB] [--repeats R] [--seed S]\n"
               "                       [--no-verify]\n"
               "       bench_synthesis --similarity-product M N K [--threads T] [--repeats R]\n"
               "       bench_synthesis --gemm [--size N] [--threads T] [--repeats R]\n"
               "Threads 0 (the default) means all hardware threads. Times are the median of the repeats;\n"
               "inputs are generated (and the output allocated and touched) outside the timing.\n");
  std::exit(2);
}

long long parse_int(const std::string& flag, const char* text) { return parse_integer(flag, text, usage); }

double parse_double(const std::string& flag, const char* text) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0') usage(flag + " expects a number, got '" + text + "'");
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
    else if (flag == "--shape") {
      s.shape_name = value();
      if (s.shape_name == "small")
        s.dims = {8000, 2000, 256, 1024};
      else if (s.shape_name == "gpt2-xl")
        s.dims = {50257, 12213, 768, 1600};
      else if (s.shape_name == "bloom-7b1-de")
        s.dims = {50257, 13930, 2048, 4096};
      else
        usage("unknown shape '" + s.shape_name + "'");
    } else if (flag == "--target-vocab")
      s.dims.target_vocab = parse_int(flag, value());
    else if (flag == "--overlap")
      s.dims.overlap = parse_int(flag, value());
    else if (flag == "--helper-dim")
      s.dims.helper_dim = parse_int(flag, value());
    else if (flag == "--source-dim")
      s.dims.source_dim = parse_int(flag, value());
    else if (flag == "--threads")
      s.threads = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--tile-mb")
      s.tile_mb = parse_double(flag, value());
    else if (flag == "--weighting")
      s.weighting = value();
    else if (flag == "--k")
      s.k = parse_int(flag, value());
    else if (flag == "--temperature")
      s.temperature = static_cast<float>(parse_double(flag, value()));
    else if (flag == "--max-gram-mb")
      s.max_gram_mb = parse_double(flag, value());
    else if (flag == "--repeats")
      s.repeats = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--seed")
      s.seed = static_cast<std::uint64_t>(parse_int(flag, value()));
    else if (flag == "--no-verify")
      s.verify = false;
    else if (flag == "--gemm")
      s.gemm = true;
    else if (flag == "--size")
      s.gemm_size = parse_int(flag, value());
    else if (flag == "--similarity-product") {
      s.product_rows = parse_int(flag, value());
      s.product_cols = parse_int(flag, value());
      s.product_depth = parse_int(flag, value());
    } else
      usage("unknown option '" + flag + "'");
  }
  const shape& d = s.dims;
  if (d.target_vocab < 2 || d.overlap < 1 || d.overlap >= d.target_vocab || d.helper_dim < 1 || d.source_dim < 1)
    usage("need 1 <= overlap < target-vocab and positive dimensions");
  if (s.threads < 0 || s.repeats < 1 || s.tile_mb < 0 || s.gemm_size < 1)
    usage("invalid --threads, --repeats, --tile-mb or --size");
  return s;
}

int hardware_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#endif
}

// rows x cols, row-major: N(0, 1) + scale * one shared N(0, 1) row (bench_support.hpp's
// counter-based streams, so rows fill in parallel).
row_major anisotropic(clp::Index rows, clp::Index cols, float scale, std::uint64_t seed, std::uint64_t stream) {
  std::vector<float> shared(static_cast<std::size_t>(cols));
  fill_standard_normal(shared.data(), cols, stream_key(seed, stream, ~std::uint64_t(0)));
  row_major m(rows, cols);
#pragma omp parallel for schedule(static)
  for (clp::Index r = 0; r < rows; ++r) {
    float* row = m.data() + r * cols;
    fill_standard_normal(row, cols, stream_key(seed, stream, std::uint64_t(r)));
    for (clp::Index c = 0; c < cols; ++c) row[c] += scale * shared[std::size_t(c)];
  }
  return m;
}

// --- the ceilings: plain products on all threads, nothing of the library.
// The similarity product of a synthesis alone, the floor of its float32 path: M missing rows
// times N overlapping rows, depth K (d_helper), C = Q N^T in row blocks of 960 (the whole
// M x N matrix would not fit), each block one BLAS call on all threads. Content is irrelevant.
int run_similarity_product(const settings& s) {
  const int threads = s.threads > 0 ? s.threads : hardware_threads();
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  const clp::Index m = s.product_rows, n = s.product_cols, k = s.product_depth, block = 960;
  const row_major queries = row_major::Random(block, k), overlap = row_major::Random(n, k);
  row_major c(block, n);
  c.noalias() = queries * overlap.transpose();  // warm-up
  double best = 1e300;
  for (int r = 0; r < s.repeats; ++r) {
    const auto start = clock_type::now();
    for (clp::Index row = 0; row < m; row += block) {
      const clp::Index rows = std::min(block, m - row);
      c.topRows(rows).noalias() = queries.topRows(rows) * overlap.transpose();
    }
    best = std::min(best, seconds_since(start));
  }
  const double gflops = 2.0 * double(m) * double(n) * double(k) / best / 1e9;
  std::printf(
      "similarity product %lld x %lld x %lld float32 in blocks of %lld rows, %d threads, %s: best %.3f s, "
      "%.1f GFLOP/s (check %g)\n",
      (long long)m, (long long)n, (long long)k, (long long)block, threads, blas_backend().c_str(), best, gflops,
      double(c(0, 0)));
  std::printf("RESULT mode=similarity-product backend=%s threads=%d m=%lld n=%lld k=%lld seconds=%.6f gflops=%.2f\n",
              blas_backend().c_str(), threads, (long long)m, (long long)n, (long long)k, best, gflops);
  return 0;
}

int run_gemm(const settings& s) {
  const int threads = s.threads > 0 ? s.threads : hardware_threads();
  const clp::Index n = s.gemm_size;
  const double best = float32_gemm_seconds(n, threads, std::max(s.repeats, 3));
  const double gflops = 2.0 * double(n) * double(n) * double(n) / best / 1e9;
  std::printf("gemm %lldx%lldx%lld float32, %d threads, %s: best %.4f s, %.1f GFLOP/s\n", (long long)n, (long long)n,
              (long long)n, threads, blas_backend().c_str(), best, gflops);
  std::printf("RESULT mode=gemm backend=%s threads=%d size=%lld seconds=%.6f gflops=%.2f\n", blas_backend().c_str(),
              threads, (long long)n, best, gflops);
  return 0;
}

// Relative error of a few output rows against a double-precision evaluation of eq. 3-4, in
// plain loops (independent of the library's blocking and of Eigen's kernels).
double verify_paper(const row_major& helper, const row_major& source, const row_major& output,
                    const clp::vocabulary_overlap& overlap) {
  const std::vector<clp::Index>& missing = overlap.missing_ids;
  const clp::Index n = overlap.size(), dh = helper.cols(), ds = source.cols();
  auto norm = [](const float* row, clp::Index cols) {
    double sum = 0;
    for (clp::Index c = 0; c < cols; ++c) sum += double(row[c]) * row[c];
    return std::sqrt(sum);
  };
  double worst = 0;
  for (clp::Index t : {missing.front(), missing[missing.size() / 2], missing.back()}) {
    const float* q = helper.data() + t * dh;
    const double q_norm = norm(q, dh);
    std::vector<double> weight(static_cast<std::size_t>(n));
    double sum = 0;
    for (clp::Index j = 0; j < n; ++j) {
      const float* h = helper.data() + overlap.target_ids[std::size_t(j)] * dh;
      double dot = 0;
      for (clp::Index c = 0; c < dh; ++c) dot += double(q[c]) * h[c];
      weight[std::size_t(j)] = dot / (q_norm * norm(h, dh));
      sum += weight[std::size_t(j)];
    }
    std::vector<double> expected(static_cast<std::size_t>(ds), 0.0);
    for (clp::Index j = 0; j < n; ++j) {
      const float* a = source.data() + overlap.source_ids[std::size_t(j)] * ds;
      for (clp::Index c = 0; c < ds; ++c) expected[std::size_t(c)] += weight[std::size_t(j)] / sum * a[c];
    }
    double difference = 0, reference = 0;
    const float* out = output.data() + t * ds;
    for (clp::Index c = 0; c < ds; ++c) {
      const double e = expected[std::size_t(c)];
      difference += (out[c] - e) * (out[c] - e);
      reference += e * e;
    }
    worst = std::max(worst, std::sqrt(difference / reference));
  }
  return worst;
}

int run_synthesis(const settings& s) {
  const shape& d = s.dims;
  const int threads = s.threads > 0 ? s.threads : hardware_threads();
  const double rss_start_mb = peak_rss_mb();

  // Inputs, as the NumPy peer draws them (distribution, not stream).
  const auto generate_start = clock_type::now();
  const row_major source = anisotropic(d.target_vocab, d.source_dim, 0.5f, s.seed, 1);
  const row_major helper = anisotropic(d.target_vocab, d.helper_dim, 1.0f, s.seed, 2);
  clp::vocabulary_overlap overlap;
  overlap.source_vocab_size = overlap.target_vocab_size = d.target_vocab;
  for (clp::Index t = 0; t < d.overlap; ++t) {
    overlap.target_ids.push_back(t);
    overlap.source_ids.push_back((t * 7919) % d.target_vocab);
  }
  for (clp::Index t = d.overlap; t < d.target_vocab; ++t) overlap.missing_ids.push_back(t);
  row_major output = row_major::Zero(d.target_vocab, d.source_dim);  // allocated and touched
  const double generate_seconds = seconds_since(generate_start);

  clp::weighting policy =
      clp::make_weighting(s.weighting, s.k > 0 ? std::optional<clp::Index>(s.k) : std::nullopt, s.temperature);
  if (auto* omp = std::get_if<clp::omp_weights>(&policy); omp && s.max_gram_mb >= 0)
    omp->max_gram_bytes = static_cast<std::size_t>(s.max_gram_mb * 1024 * 1024);
  clp::synthesis_options options;
  options.threads = threads;
  if (s.tile_mb > 0) options.tile_bytes = static_cast<std::size_t>(s.tile_mb * 1024 * 1024);

  std::vector<double> times;
  clp::synthesis_report report;
  const double cpu_start = cpu_seconds();
  for (int r = 0; r < s.repeats; ++r) {
    const auto start = clock_type::now();
    report = clp::synthesize_rows(source, helper, overlap, output, policy, options);
    times.push_back(seconds_since(start));
  }
  const double cpu_per_repeat = (cpu_seconds() - cpu_start) / s.repeats;
  double wall_total = 0;
  for (double t : times) wall_total += t;
  const double cpu_utilisation = cpu_per_repeat * s.repeats / wall_total;
  const double seconds = median(times);
  const double best = *std::min_element(times.begin(), times.end());
  const double n_missing = double(overlap.missing_ids.size());
  const double flop = 2.0 * n_missing * double(d.overlap) * double(d.helper_dim + d.source_dim);
  const double gflops = flop / seconds / 1e9;

  const double data_mb = double(source.size() + helper.size() + output.size()) * sizeof(float) / (1024.0 * 1024.0);
  const double rss_mb = peak_rss_mb();
  const double verify_error = (s.verify && s.weighting == "paper") ? verify_paper(helper, source, output, overlap) : -1;

  std::printf("shape %s: target %lld, overlap %lld, missing %lld, helper dim %lld, source dim %lld\n",
              s.shape_name.c_str(), (long long)d.target_vocab, (long long)d.overlap, (long long)n_missing,
              (long long)d.helper_dim, (long long)d.source_dim);
  std::printf("build %s, %d threads, tile %.0f MiB, weighting %s; inputs generated in %.2f s\n", blas_backend().c_str(),
              threads, double(options.tile_bytes) / (1024.0 * 1024.0), s.weighting.c_str(), generate_seconds);
  std::printf("synthesis: median %.4f s, best %.4f s over %d repeats; %.1f GFLOP/s (dense-equivalent %.1f GFLOP)\n",
              seconds, best, s.repeats, gflops, flop / 1e9);
  std::printf("cpu: %.3f s per repeat, %.2f cores busy on average (of %d threads)\n", cpu_per_repeat, cpu_utilisation,
              threads);
  std::printf("memory: peak RSS %.1f MiB; inputs + output %.1f MiB; extra %.1f MiB (process before inputs %.1f MiB)\n",
              rss_mb, data_mb, rss_mb - data_mb, rss_start_mb);
  std::printf(
      "report: fallback %lld, zero-norm %lld, no-positive %lld, inflated %lld, effective neighbours median %.1f\n",
      (long long)report.fallback_rows, (long long)report.zero_norm_rows, (long long)report.no_positive_rows,
      (long long)report.inflated_rows, report.effective_neighbours_median);
  if (verify_error >= 0) std::printf("check: max relative error of 3 rows vs float64 eq. 3-4: %.2e\n", verify_error);
  std::printf(
      "RESULT mode=synthesis backend=%s shape=%s target_vocab=%lld overlap=%lld helper_dim=%lld source_dim=%lld "
      "threads=%d tile_mb=%.1f weighting=%s repeats=%d seconds=%.6f best_seconds=%.6f gflops=%.2f rss_mb=%.1f "
      "data_mb=%.1f extra_mb=%.1f cpu_seconds=%.6f cores_busy=%.2f verify_error=%.3g\n",
      blas_backend().c_str(), s.shape_name.c_str(), (long long)d.target_vocab, (long long)d.overlap,
      (long long)d.helper_dim, (long long)d.source_dim, threads, double(options.tile_bytes) / (1024.0 * 1024.0),
      s.weighting.c_str(), s.repeats, seconds, best, gflops, rss_mb, data_mb, rss_mb - data_mb, cpu_per_repeat,
      cpu_utilisation, verify_error);
  if (verify_error > 1e-3) {
    std::fprintf(stderr, "bench_synthesis: the output disagrees with the float64 reference\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  try {
    if (s.gemm) return run_gemm(s);
    if (s.product_rows > 0) return run_similarity_product(s);
    // Each synthesis worker runs its own products: OpenBLAS must not start threads of its own.
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    return run_synthesis(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_synthesis: %s\n", e.what());
    return 1;
  }
}
