// SPDX-License-Identifier: MIT
// clp/finite.hpp: the NaN and infinity screen, against a plain loop.

#include <clp/adapters/eigen.hpp>
#include <clp/finite.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace {

/// The oracle: the first non-finite element in `rows` order, then column order.
template <class M>
std::optional<clp::matrix_position> first_bad(const M& m, const std::vector<clp::Index>& rows) {
  for (clp::Index r : rows)
    for (clp::Index c = 0; c < m.cols(); ++c)
      if (!std::isfinite(static_cast<float>(m(r, c)))) return clp::matrix_position{r, c};
  return std::nullopt;
}

}  // namespace

TEST_CASE("find_non_finite: the first NaN or infinity in row-list order, for any thread count and layout") {
  Eigen::MatrixXd m = Eigen::MatrixXd::Ones(3000, 7);  // column-major, more rows than one chunk
  m(2500, 3) = std::numeric_limits<double>::quiet_NaN();
  m(1200, 6) = 1e300;  // finite as a double, infinite as float32
  m(1200, 2) = -std::numeric_limits<double>::infinity();
  std::vector<clp::Index> all(3000);
  for (clp::Index r = 0; r < 3000; ++r) all[std::size_t(r)] = r;
  const std::vector<clp::Index> backwards{2999, 2500, 1200, 7};
  for (int threads : {1, 2, 5}) {
    const auto whole = clp::find_non_finite(m, threads);
    REQUIRE(whole);
    CHECK(whole->row == 1200);
    CHECK(whole->column == 2);
    const auto listed = clp::find_non_finite(m, backwards, threads);
    REQUIRE(listed);
    CHECK(listed->row == first_bad(m, backwards)->row);
    CHECK(listed->column == first_bad(m, backwards)->column);
  }
  CHECK(!clp::find_non_finite(m, std::vector<clp::Index>{0, 1, 2999}));
  // A view whose element type is a run-time value is screened the same way.
  const clp::matrix_view<const void> untyped = clp::make_view(m);
  const auto seen = clp::find_non_finite(untyped, backwards, 2);
  REQUIRE(seen);
  CHECK(seen->row == first_bad(m, backwards)->row);
  const Eigen::MatrixXf clean = Eigen::MatrixXf::Zero(4, 2);
  CHECK(!clp::find_non_finite(clean));
}
