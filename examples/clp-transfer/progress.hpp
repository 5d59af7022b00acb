// Progress on stderr: a redrawn bar with ETA when stderr is a terminal, one plain line per
// phase otherwise (logs stay readable), nothing with --quiet.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include "library_names.hpp"

namespace clp_transfer {

class progress_reporter {
 public:
  explicit progress_reporter(bool quiet) : quiet_(quiet), terminal_(!quiet && ::isatty(STDERR_FILENO)) {}

  /// Starts a phase; returns its start time.
  void begin(const std::string& phase) {
    phase_ = phase;
    start_ = clock::now();
    last_draw_ = start_;
    if (!quiet_ && !terminal_) std::fprintf(stderr, "clp-transfer: %s ...\n", phase_.c_str());
  }

  /// done of total units finished (bytes, rows); redraws at most ten times a second.
  void update(double done, double total) {
    if (!terminal_ || total <= 0) return;
    const auto now = clock::now();
    if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const double elapsed = seconds_since(start_);
    const double fraction = done / total;
    const int width = 30, filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, ' ');
    const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
    std::fprintf(stderr, "\r  %-12s [%s] %3.0f%%  ETA %5.1fs", phase_.c_str(), bar.c_str(), 100 * fraction, eta);
    std::fflush(stderr);
  }

  /// Ends the phase; returns its duration in seconds.
  double end() {
    const double elapsed = seconds_since(start_);
    if (terminal_) std::fprintf(stderr, "\r\033[K");
    return elapsed;
  }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

  bool quiet_, terminal_;
  std::string phase_;
  clock::time_point start_, last_draw_;
};

}  // namespace clp_transfer
