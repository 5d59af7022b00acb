// SPDX-License-Identifier: MIT
//
// bench_knn: times clp::knn_overlap over a whole vocabulary (by default GPT-2's 50,257 tokens
// at widths 768 and 1600, the shapes of GPT-2 small and GPT-2 XL) against the two plain
// similarity products the search needs, #vocab^2 * (d_a + d_b) * 2 flops: floors, plain
// products of pre-normalised rows with no gathering and no selection, timed two ways:
//   blocked:     row blocks and panels of the heights clp::knn_tiling says the search uses;
//   full-width:  each block of 256 rows times all rows at once, one Eigen product per block.
// The target is knn_overlap <= 2x the products. With --check it also verifies, at full size on
// a sample of rows, that the neighbours are bit-identical across thread counts and tile budgets.
//
// Inputs: a = N(0, 1) + 0.5 * one shared N(0, 1) row (anisotropic, like trained embeddings);
// b = [a + N(0, 1), N(0, 1)] (the first d_a columns follow a, the rest are noise), so the
// overlap is well above chance and below one.
//
// Run as: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE bench_knn [options]
// (OpenBLAS picks a slow generic kernel when either is set.)

#include <clp/adapters/eigen.hpp>
#include <clp/knn_overlap.hpp>
#include <clp/nearest_neighbours.hpp>
#include <clp/parallel.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"

namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using clp::Index;
using namespace clp_bench;

struct settings {
  Index vocab = 50257, width_a = 768, width_b = 1600, k = 10;
  int threads = 0;
  double tile_mib = double(clp::default_tile_bytes >> 20);  // the library's default
  bool reference = true;
  bool check = false;
};

[[noreturn]] void usage(const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "bench_knn: %s\n\n", problem.c_str());
  std::fprintf(stderr,
               "usage: bench_knn [--vocab N] [--da D] [--db D] [--k K] [--threads T] [--tile-mib MIB]\n"
               "                 [--no-reference] [--check]\n"
               "Defaults: 50257 tokens, widths 768 and 1600, k 10, all threads, 256 MiB (the library's default).\n");
  std::exit(2);
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto number = [&]() {
      if (i + 1 >= argc) usage(flag + " expects a value");
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0') usage(flag + " expects a number, got '" + argv[i] + "'");
      return v;
    };
    if (flag == "--vocab")
      s.vocab = Index(number());
    else if (flag == "--da")
      s.width_a = Index(number());
    else if (flag == "--db")
      s.width_b = Index(number());
    else if (flag == "--k")
      s.k = Index(number());
    else if (flag == "--threads")
      s.threads = int(number());
    else if (flag == "--tile-mib")
      s.tile_mib = number();
    else if (flag == "--no-reference")
      s.reference = false;
    else if (flag == "--check")
      s.check = true;
    else if (flag == "--help" || flag == "-h")
      usage("");
    else
      usage("unknown option '" + flag + "'");
  }
  if (s.vocab < 2 || s.width_a < 1 || s.width_b < 1 || s.threads < 0 || !(s.tile_mib > 0))
    usage("need vocab >= 2, positive widths and tile, threads >= 0");
  return s;
}

// Wall and CPU seconds of one call.
struct timing {
  double wall = 0, cpu = 0;
  timing& operator+=(const timing& t) {
    wall += t.wall;
    cpu += t.cpu;
    return *this;
  }
};
template <class F>
timing time_of(F&& f) {
  const double cpu0 = cpu_seconds();
  const auto start = clock_type::now();
  f();
  return {seconds_since(start), cpu_seconds() - cpu0};
}

void make_inputs(const settings& s, row_major& a, row_major& b) {
  a.resize(s.vocab, s.width_a);
  b.resize(s.vocab, s.width_b);
  std::vector<float> shared(std::size_t(s.width_a));
  fill_standard_normal(shared.data(), s.width_a, stream_key(0, 1, ~0ull));
  clp::parallel_for(s.vocab, clp::resolve_threads(s.threads), [&](Index r, int) {
    fill_standard_normal(a.row(r).data(), s.width_a, stream_key(0, 2, std::uint64_t(r)));
    for (Index c = 0; c < s.width_a; ++c) a(r, c) += 0.5f * shared[std::size_t(c)];
    fill_standard_normal(b.row(r).data(), s.width_b, stream_key(0, 3, std::uint64_t(r)));
    for (Index c = 0; c < s.width_a; ++c) b(r, c) += a(r, c);
  });
}

row_major normalised(const row_major& x) {
  row_major n = x;
  for (Index r = 0; r < n.rows(); ++r) {
    const double norm = n.row(r).cast<double>().norm();
    if (norm > 0) n.row(r) *= float(1.0 / norm);
  }
  return n;
}

using row_major_map = Eigen::Map<row_major>;

// The products alone with the library's tiling (clp::knn_tiling): row blocks of the library's
// height, times panels of its panel height.
timing blocked_products(const row_major& x, const settings& s, std::size_t tile_bytes) {
  const int threads = clp::resolve_threads(s.threads);
  const clp::tiling cut = clp::knn_tiling(x.rows(), x.cols(), clp::knn_options{s.k, threads, tile_bytes});
  const Index block = cut.block_rows, panel = cut.panel_rows;
  std::vector<row_major> out(std::size_t(threads), row_major(block, panel));
  return time_of([&] {
    clp::parallel_for(cut.blocks, threads, [&](Index b, int worker) {
      const Index rows = std::min(block, x.rows() - b * block);
      for (Index p0 = 0; p0 < x.rows(); p0 += panel) {
        const Index pn = std::min(panel, x.rows() - p0);
        row_major_map(out[std::size_t(worker)].data(), rows, pn).noalias() =
            x.middleRows(b * block, rows) * x.middleRows(p0, pn).transpose();
      }
    });
  });
}

// The products alone, each block of 256 rows times all rows in one product.
timing full_width_products(const row_major& x, const settings& s) {
  const int threads = clp::resolve_threads(s.threads);
  const Index block = 256;
  const Index n_blocks = (x.rows() + block - 1) / block;
  std::vector<row_major> out(std::size_t(threads), row_major(block, x.rows()));
  return time_of([&] {
    clp::parallel_for(n_blocks, threads, [&](Index b, int worker) {
      const Index rows = std::min(block, x.rows() - b * block);
      row_major_map(out[std::size_t(worker)].data(), rows, x.rows()).noalias() =
          x.middleRows(b * block, rows) * x.transpose();
    });
  });
}

void print_timing(const char* what, const timing& t, double flops, const timing* ours) {
  std::printf("%-20s wall %8.2f s  cpu %8.2f s  %7.1f GFLOP/s (wall)", what, t.wall, t.cpu, flops / t.wall / 1e9);
  if (ours) std::printf("  knn_overlap / this: wall %.2f, cpu %.2f", ours->wall / t.wall, ours->cpu / t.cpu);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (openblas_set_num_threads) openblas_set_num_threads(1);  // our blocks are the parallelism
  const settings s = parse(argc, argv);
  const auto tile_bytes = std::size_t(s.tile_mib * 1024 * 1024);
  const int threads = clp::resolve_threads(s.threads);
  std::printf("bench_knn: %td tokens, widths %td and %td, k = %td, %d threads, tile %.0f MiB, %s\n", s.vocab, s.width_a,
              s.width_b, s.k, threads, s.tile_mib, blas_backend().c_str());

  row_major a, b;
  make_inputs(s, a, b);
  const double input_mib = double(a.size() + b.size()) * 4 / (1 << 20);
  std::printf("inputs: %.0f MiB; peak RSS before the run %.0f MiB\n", input_mib, peak_rss_mb());
  const double flops = double(s.vocab) * double(s.vocab) * double(s.width_a + s.width_b) * 2;

  clp::knn_overlap_result result;
  const timing ours = time_of([&] { result = clp::knn_overlap(a, b, clp::knn_options{s.k, s.threads, tile_bytes}); });
  const double rss = peak_rss_mb();
  print_timing("knn_overlap:", ours, flops, nullptr);
  std::printf("mean overlap %.4f (chance %.5f); peak RSS after knn_overlap %.0f MiB (%.0f MiB above the inputs)\n",
              result.mean_overlap, double(s.k) / double(s.vocab - 1), rss, rss - input_mib);

  if (s.reference) {
    const row_major an = normalised(a), bn = normalised(b);
    timing blocked = blocked_products(an, s, tile_bytes);
    blocked += blocked_products(bn, s, tile_bytes);
    print_timing("products, blocked:", blocked, flops, &ours);
    timing full = full_width_products(an, s);
    full += full_width_products(bn, s);
    print_timing("products, full:", full, flops, &ours);
    const double best = std::min(blocked.wall, full.wall), best_cpu = std::min(blocked.cpu, full.cpu);
    std::printf("target knn_overlap <= 2x products: %s (wall %.2fx, cpu %.2fx the faster)\n",
                ours.wall <= 2 * best ? "met" : "MISSED", ours.wall / best, ours.cpu / best_cpu);
  }

  if (s.check) {
    // A sample of rows at full size: neighbours bit-identical for any threads and tile budget,
    // and the sampled overload agrees with the whole-vocabulary run.
    std::vector<clp::Index> sample;
    for (clp::Index v = 0; v < s.vocab; v += 33) sample.push_back(v);
    bool identical = true;
    for (const row_major* x : {&a, &b}) {
      const auto reference = clp::nearest_neighbours(*x, sample, clp::knn_options{s.k, 1, std::size_t(8) << 20});
      for (const auto& [threads, tile] : {std::pair(2, std::size_t(64) << 20), std::pair(3, std::size_t(1) << 30)})
        identical = identical && clp::nearest_neighbours(*x, sample, clp::knn_options{s.k, threads, tile}) == reference;
    }
    const auto sampled = clp::knn_overlap(a, b, sample, clp::knn_options{s.k, s.threads, tile_bytes});
    bool agrees = true;
    for (std::size_t i = 0; i < sample.size(); ++i)
      agrees = agrees && sampled.per_token[i] == result.per_token[std::size_t(sample[i])];
    std::printf(
        "check on %zu rows: neighbours identical across threads 1/2/3 and tiles 8 MiB/64 MiB/1 GiB: %s; "
        "sampled overload agrees: %s\n",
        sample.size(), identical ? "yes" : "NO", agrees ? "yes" : "NO");
    if (!identical || !agrees) return 1;
  }
  return 0;
}
