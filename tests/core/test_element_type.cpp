// SPDX-License-Identifier: MIT
// clp/element_type.hpp: the element types as types and as a run-time value, the dispatch on
// the run-time value, and the conversions to and from float32.

#include "fixtures.hpp"

#include <clp/element_type.hpp>
#include <clp/synthesize.hpp>
// after a public header (internal_header_check.hpp)
#include <clp/detail/matrices/rows.hpp>

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

TEST_CASE("element_type: names, sizes and the type of each element type") {
  static_assert(clp::is_scalar_v<float> && clp::is_scalar_v<double> && clp::is_scalar_v<Eigen::half> &&
                clp::is_scalar_v<Eigen::bfloat16>);
  static_assert(!clp::is_scalar_v<int> && !clp::is_scalar_v<long double>);
  static_assert(clp::element_type_of<float>() == clp::element_type::float32);
  static_assert(clp::element_type_of<const double>() == clp::element_type::float64);
  CHECK(clp::element_type_name(clp::element_type_of<const Eigen::half>()) == std::string("float16"));
  CHECK(clp::element_type_name(clp::element_type::bfloat16) == std::string("bfloat16"));
  CHECK(clp::element_size(clp::element_type::float64) == 8);
  CHECK(clp::element_size(clp::element_type::float32) == 4);
  CHECK(clp::element_size(clp::element_type::float16) == 2);
  CHECK(clp::element_size(clp::element_type::bfloat16) == 2);
}

TEST_CASE("visit_element_type: f meets the pointer type each run-time value names") {
  for (clp::element_type type : {clp::element_type::float32, clp::element_type::float64, clp::element_type::float16,
                                 clp::element_type::bfloat16}) {
    const auto [same, size] = clp::visit_element_type(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      return std::pair<bool, std::size_t>(clp::element_type_of<T>() == type, sizeof(T));
    });
    CHECK(same);
    CHECK(size == clp::element_size(type));
  }
}

TEST_CASE("to_float32 and from_float32 on bfloat16: bit for bit Eigen's scalar conversions") {
  // Every bfloat16 pattern widens to what Eigen's conversion gives (NaNs included, by bits).
  std::vector<Eigen::bfloat16> all(65536);
  for (std::uint32_t bits = 0; bits < 65536; ++bits)
    all[bits] = Eigen::numext::bit_cast<Eigen::bfloat16>(std::uint16_t(bits));
  std::vector<float> wide(all.size());
  clp::to_float32(all.data(), clp::Index(all.size()), wide.data());
  std::size_t widen_mismatches = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    widen_mismatches += Eigen::numext::bit_cast<std::uint32_t>(wide[i]) !=
                        Eigen::numext::bit_cast<std::uint32_t>(static_cast<float>(all[i]));
  CHECK(widen_mismatches == 0);
  // Narrowing: every upper half with lower halves at and around the rounding tie, so every
  // exponent, both signs, infinities, NaNs (quiet and signalling) and subnormals are met.
  std::vector<float> floats;
  for (std::uint32_t high = 0; high < 65536; ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      floats.push_back(Eigen::numext::bit_cast<float>((high << 16) | low));
  std::vector<Eigen::bfloat16> narrow(floats.size());
  clp::from_float32(floats.data(), clp::Index(floats.size()), narrow.data());
  std::size_t narrow_mismatches = 0;
  for (std::size_t i = 0; i < floats.size(); ++i)
    narrow_mismatches += narrow[i].value != Eigen::bfloat16(floats[i]).value;
  CHECK(narrow_mismatches == 0);
}

TEST_CASE("to_float32 and from_float32: float is copied, half and double as Eigen converts them") {
  const std::vector<float> floats{0.0f, -1.5f, 3.1415927f, 65504.0f, 1e-8f, -INFINITY};
  const clp::Index n = clp::Index(floats.size());
  std::vector<float> copied(floats.size());
  clp::from_float32(floats.data(), n, copied.data());
  CHECK(copied == floats);
  std::vector<Eigen::half> halves(floats.size());
  clp::from_float32(floats.data(), n, halves.data());
  std::vector<double> doubles(floats.size());
  clp::from_float32(floats.data(), n, doubles.data());
  std::vector<float> back(floats.size());
  clp::to_float32(halves.data(), n, back.data());
  for (std::size_t i = 0; i < floats.size(); ++i) {
    CHECK(halves[i] == Eigen::half(floats[i]));
    CHECK(back[i] == static_cast<float>(Eigen::half(floats[i])));
    CHECK(doubles[i] == double(floats[i]));
  }
  const std::vector<double> wide{0.1, 1e300, -2.5};
  clp::to_float32(wide.data(), 3, back.data());
  CHECK(back[0] == 0.1f);
  CHECK(std::isinf(back[1]));
  CHECK(back[2] == -2.5f);
  // n = 0 touches nothing (and may see null pointers).
  clp::to_float32(static_cast<const float*>(nullptr), 0, static_cast<float*>(nullptr));
  clp::from_float32(static_cast<const float*>(nullptr), 0, static_cast<Eigen::bfloat16*>(nullptr));
}

TEST_CASE_TEMPLATE("add_scaled_row: out += w * row, every element converted, against a double loop", T, float, double,
                   Eigen::half, Eigen::bfloat16) {
  // Widths around a cache line of T (64 bytes), row- and column-major, with and without a next
  // row to ask for: the line-by-line walk must add every column once.
  for (clp::Index d : {clp::Index(1), clp::Index(7), clp::Index(32), clp::Index(33), clp::Index(100)}) {
    const clp::Index rows = 3;
    std::vector<T> values(static_cast<std::size_t>(rows * d));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = T(float(std::sin(double(i) * 0.7)) * 4.0f);
    for (const auto order : {clp::storage_order::row_major, clp::storage_order::column_major}) {
      const clp::matrix_view<const void> view = clp::matrix_view<const T>(values.data(), rows, d, order);
      for (clp::Index next : {clp::Index(-1), clp::Index(2)}) {
        std::vector<float> out(static_cast<std::size_t>(d));
        for (clp::Index c = 0; c < d; ++c) out[std::size_t(c)] = 0.5f * float(c);
        const float w = 0.375f;
        clp::detail::add_scaled_row(view, 1, w, out.data(), next);
        for (clp::Index c = 0; c < d; ++c) {
          const T element =
              order == clp::storage_order::row_major ? values[std::size_t(d + c)] : values[std::size_t(c * rows + 1)];
          const double want = 0.5 * double(c) + double(w) * double(static_cast<float>(element));
          CHECK(double(out[std::size_t(c)]) == doctest::Approx(want).epsilon(1e-6));
        }
      }
    }
  }
}
