// --threads and --tile-mb, as `transfer` and `similarity` both take them: how the library's
// kernels run (clp::execution_options), never what they compute.
#pragma once

#include <clp/execution.hpp>

#include <cstddef>
#include <string>

#include "errors.hpp"
#include "library_names.hpp"

namespace clp_transfer {

struct execution_arguments {
  int threads = 0;  ///< 0: all cores
  double tile_mb = double(clp::default_tile_bytes >> 20);

  /// Throws clp::invalid_argument naming the option for a value out of range.
  void check() const {
    if (threads < 0)
      throw clp::invalid_argument(option_facts("--threads"),
                                  "must be 0 (all cores) or more, not " + std::to_string(threads));
    if (!(tile_mb > 0) || !(tile_mb <= 1 << 20))
      throw clp::invalid_argument(option_facts("--tile-mb"), "must be positive and at most 1048576 (1 TiB)");
  }

  clp::execution_options options() const { return {threads, static_cast<std::size_t>(tile_mb * double(1 << 20))}; }
};

}  // namespace clp_transfer
