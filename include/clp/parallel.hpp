// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The library's one parallel loop, public so that callers (the programs) run their own
/// row-parallel work the way the kernels do: independent tasks on a fixed number of workers.
/// Which worker runs which task never changes a result when every task writes its own rows,
/// so output is identical for any thread count.
///
/// Under OpenMP the workers are an OpenMP team, so that Eigen (and OpenMP-aware BLAS) run their
/// products single-threaded inside it: a product Eigen parallelises itself would neither share
/// the cores with our workers nor give the same bits for every thread count. Without OpenMP the
/// workers are std::threads and Eigen's products are single-threaded anyway.

#include <clp/element_type.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace clp {

/// The number of workers for a requested count: 0 means every hardware thread.
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
#ifdef _OPENMP
  return std::max(1, omp_get_max_threads());
#else
  return std::max(1u, std::thread::hardware_concurrency());
#endif
}

/// Calls task(t, worker) for t in [0, tasks) on `threads` workers; `worker` is in
/// [0, threads) and lets a task use that worker's scratch. The first exception thrown by a
/// task is rethrown here after all workers stopped.
template <class Task>
void parallel_for(Index tasks, int threads, Task&& task) {
  threads = static_cast<int>(std::max<Index>(1, std::min<Index>(threads, tasks)));
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::atomic<Index> next{0};
  auto work = [&](int worker) {
    for (Index t = next++; t < tasks; t = next++) {
      try {
        task(t, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = tasks;
      }
    }
  };
#ifdef _OPENMP
  // Always a team of at least two: Eigen parallelises a product itself (with blocking that
  // depends on its thread count, hence other bits) unless it runs inside a team of more than
  // one thread. With one worker requested, the second member finds no task and waits.
#pragma omp parallel num_threads(std::max(threads, 2))
  if (omp_get_thread_num() < threads) work(omp_get_thread_num());
#else
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
#endif
  if (failure) std::rethrow_exception(failure);
}

}  // namespace clp
