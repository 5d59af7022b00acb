// SPDX-License-Identifier: MIT
// clp/nearest_neighbours.hpp: the search against the brute-force double oracle, bit-identical
// lists for any thread count and tile budget, the tie rule, its tiling, and its errors.
#include "knn_fixtures.hpp"

#include <clp/adapters/eigen.hpp>
#include <clp/nearest_neighbours.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace knn_fixtures;

TEST_CASE("nearest_neighbours: the double oracle's lists at widths 24 and 40, bit-identical for any threads and tile") {
  for (clp::Index width : {24, 40}) {
    CAPTURE(width);
    const row_major x = random_matrix(700, width, unsigned(width));
    const oracle o(x);
    const clp::Index k = 10;
    const auto ids = all_rows(700);
    const std::vector<clp::Index> reference =
        clp::nearest_neighbours(x, ids, clp::knn_options{k, 1, std::size_t(64) << 20});
    clp::Index ambiguous = 0;
    for (clp::Index v = 0; v < 700; ++v) {
      check_neighbours(o, v, reference.data() + v * k, k);
      ambiguous += o.ambiguous(v, k);
    }
    CHECK(ambiguous < 10);
    // Bit-identical neighbour lists for any thread count and tile budget (one block of 48 rows
    // per task up to a single block for all rows).
    for (std::size_t tile : {std::size_t(1), std::size_t(300) << 10, std::size_t(1) << 20, std::size_t(256) << 20})
      for (int threads : {1, 2, 3}) {
        CAPTURE(tile);
        CAPTURE(threads);
        CHECK(clp::nearest_neighbours(x, ids, clp::knn_options{k, threads, tile}) == reference);
      }
  }
}

TEST_CASE("nearest_neighbours: ties go to the lower row id, across panels and blocks") {
  // One-hot rows: every cosine is exactly 0 or 1, whatever the summation order.
  const clp::Index n = 1100;
  row_major x = row_major::Zero(n, 3);
  for (clp::Index r = 0; r < n; ++r) x(r, r % 3 == 2 ? 1 : 0) = 1.0f;  // ids 2, 5, 8, ... point along axis 1
  x.row(7).setZero();                                                  // a zero-norm row
  const std::vector<clp::Index> queries{0, 1, 1099, 2, 7, 1000};
  for (std::size_t tile : {std::size_t(1), std::size_t(64) << 20})
    for (int threads : {1, 3}) {
      const auto nb = clp::nearest_neighbours(x, queries, clp::knn_options{4, threads, tile});
      CHECK(std::vector<clp::Index>(nb.begin() + 0, nb.begin() + 4) == std::vector<clp::Index>{1, 3, 4, 6});
      CHECK(std::vector<clp::Index>(nb.begin() + 4, nb.begin() + 8) == std::vector<clp::Index>{0, 3, 4, 6});
      CHECK(std::vector<clp::Index>(nb.begin() + 8, nb.begin() + 12) == std::vector<clp::Index>{0, 1, 3, 4});
      CHECK(std::vector<clp::Index>(nb.begin() + 12, nb.begin() + 16) == std::vector<clp::Index>{5, 8, 11, 14});
      // The zero row: cosine 0 with everyone, so the lowest ids of the cosine-0 rows come after
      // nothing better; every row ties at 0.
      CHECK(std::vector<clp::Index>(nb.begin() + 16, nb.begin() + 20) == std::vector<clp::Index>{0, 1, 2, 3});
      // Other rows see the zero row at cosine 0, behind all rows of their own axis.
      CHECK(std::vector<clp::Index>(nb.begin() + 20, nb.begin() + 24) == std::vector<clp::Index>{0, 1, 3, 4});
    }
}

TEST_CASE("knn_tiling: blocks of a multiple of 48 rows, evened out over the workers, 512-row panels") {
  const clp::tiling small = clp::knn_tiling(700, 24, clp::knn_options{10, 2, std::size_t(1)});
  CHECK(small.block_rows == 48);  // no budget: the smallest block
  CHECK(small.blocks == 15);
  CHECK(small.panel_rows == 512);
  const clp::tiling large = clp::knn_tiling(700, 24, clp::knn_options{10, 2, std::size_t(256) << 20});
  CHECK(large.block_rows % 48 == 0);
  CHECK(large.blocks % 2 == 0);  // one block each for two workers
  CHECK(large.blocks * large.block_rows >= 700);
  CHECK((large.blocks - 1) * large.block_rows < 700);
}

TEST_CASE("nearest_neighbours: errors name the argument") {
  const row_major x = random_matrix(20, 4, 51);
  const auto k = thrown<clp::invalid_argument>([&] { clp::nearest_neighbours(x, {0}, clp::knn_options{20}); });
  REQUIRE(k);
  CHECK(k->facts().context == "clp::nearest_neighbours");
  CHECK(k->facts().argument == "k");
  CHECK(error_of([&] {
          clp::nearest_neighbours(x, {0, 20}, clp::knn_options{3});
        }) == "clp::nearest_neighbours: 'queries' id 20 at position 1 is outside the 20 rows");
  CHECK(error_of([&] { clp::nearest_neighbours(row_major(0, 4), {0}); }) ==
        "clp::nearest_neighbours: 'x' is empty (0 x 4)");
  row_major bad = x;
  bad(17, 2) = -std::numeric_limits<float>::infinity();
  const auto infinite = thrown<clp::non_finite_input>([&] { clp::nearest_neighbours(bad, {0}, clp::knn_options{3}); });
  REQUIRE(infinite);
  CHECK(infinite->facts().argument == "x");
  CHECK(infinite->facts().row == 17);
  CHECK(infinite->facts().column == 2);
  // A matrix whose element type is a run-time value is searched like any other.
  const clp::matrix_view<const void> untyped = clp::make_view(x);
  CHECK(clp::nearest_neighbours(untyped, {0, 5}, clp::knn_options{3}) ==
        clp::nearest_neighbours(x, {0, 5}, clp::knn_options{3}));
}
