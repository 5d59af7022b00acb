// SPDX-License-Identifier: MIT
// clp/splitmix64.hpp: the generator's sequence against the values published with the reference
// implementation (Vigna's splitmix64.c), for seeds 0 and 1234567.

#include <clp/splitmix64.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace test_splitmix64 {
namespace {

/// The first `count` numbers of SplitMix64 seeded with `seed`, through clp::splitmix64 as its
/// contract says: each number is splitmix64(state), then the state advances by the increment.
std::vector<std::uint64_t> sequence(std::uint64_t seed, int count) {
  std::vector<std::uint64_t> numbers;
  for (std::uint64_t state = seed; int(numbers.size()) < count; state += clp::splitmix64_increment)
    numbers.push_back(clp::splitmix64(state));
  return numbers;
}

}  // namespace

TEST_CASE("splitmix64: the published sequences of seeds 0 and 1234567") {
  CHECK(sequence(0, 4) == std::vector<std::uint64_t>{0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull,
                                                     0x06C45D188009454Full, 0xF88BB8A8724C81ECull});
  CHECK(sequence(1234567, 5) == std::vector<std::uint64_t>{6457827717110365317ull, 3203168211198807973ull,
                                                           9817491932198370423ull, 4593380528125082431ull,
                                                           16408922859458223821ull});
  static_assert(clp::splitmix64(0) == 0xE220A8397B1DCDAFull, "a constant expression, too");
}

}  // namespace test_splitmix64
