// SPDX-License-Identifier: MIT
//
// What the benchmark programs share: timing (wall and CPU), the BLAS they run on, and the
// counter-based random streams that fill their inputs in parallel, independent of the thread
// count.
#pragma once

#include <clp/clp.hpp>

#include <Eigen/Core>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

// OpenBLAS controls, resolved at run time: null when the program is not linked to OpenBLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace clp_bench {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The integer `text` given for option `flag`; otherwise calls `fail` (the program's usage,
/// which exits) with what was wrong.
template <class Fail>
long long parse_integer(const std::string& flag, const char* text, Fail fail) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0') fail(flag + " expects an integer, got '" + text + "'");
  return value;
}

/// User + system CPU seconds of the whole process so far: with the wall time, shows how much a
/// measurement was slowed by other processes on the cores (cpu / wall near the thread count
/// means the workers had the cores to themselves).
inline double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

/// Which engine Eigen's float products run on: "openblas:<kernel>", "blas" or "eigen".
inline std::string blas_backend() {
#ifdef CLP_HAVE_BLAS
  if (openblas_get_corename) return std::string("openblas:") + openblas_get_corename();
  return "blas";
#else
  return "eigen";
#endif
}

/// The threads one product call may use, in OpenBLAS (when linked) and in Eigen.
inline void set_blas_threads(int threads) {
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}

/// The best of `tries` n x n x n float32 products on `threads` threads, after one warm-up (page
/// faults, BLAS buffers, thread start): the machine's GEMM ceiling as the programs are built
/// (Eigen, handed to the BLAS where one is linked). Nothing of the library runs.
inline double float32_gemm_seconds(clp::Index n, int threads, int tries) {
  set_blas_threads(threads);
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  c.noalias() = a * b;
  double best = 1e300;
  for (int r = 0; r < tries; ++r) {
    const auto start = clock_type::now();
    c.noalias() = a * b;
    best = std::min(best, seconds_since(start));
  }
  return best;
}

// --- random numbers: a counter-based stream per (seed, stream, row), so rows fill in parallel
// and the result does not depend on the thread count.

/// The next number of the SplitMix64 sequence whose state is `state` (<clp/splitmix64.hpp>).
inline std::uint64_t splitmix64(std::uint64_t& state) {
  const std::uint64_t z = clp::splitmix64(state);
  state += clp::splitmix64_increment;
  return z;
}

/// n standard normal floats (Box-Muller on 53-bit uniforms) from the stream named by key.
inline void fill_standard_normal(float* out, clp::Index n, std::uint64_t key) {
  std::uint64_t state = key;
  splitmix64(state);
  constexpr double two_pi = 6.283185307179586;
  for (clp::Index c = 0; c < n; c += 2) {
    const double u1 = (double(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = double(splitmix64(state) >> 11) * 0x1.0p-53;          // [0, 1)
    const double radius = std::sqrt(-2.0 * std::log(u1));
    out[c] = static_cast<float>(radius * std::cos(two_pi * u2));
    if (c + 1 < n) out[c + 1] = static_cast<float>(radius * std::sin(two_pi * u2));
  }
}

/// The key of row `row` of stream `stream` under `seed`.
inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream, std::uint64_t row) {
  std::uint64_t state = seed * 0x100000001B3ull + stream;
  std::uint64_t key = splitmix64(state);
  state = key ^ (row * 0xD1B54A32D192ED03ull);
  return splitmix64(state);
}

}  // namespace clp_bench
