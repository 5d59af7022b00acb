// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// SplitMix64 (Steele, Lea & Flood 2014), the library's one source of reproducible random
/// numbers: the held-out splits of clp::evaluate and the draws of clp::random_rows come from
/// it, so they are the same on every platform, compiler and thread count, where the standard
/// distributions are not.

#include <cstdint>

namespace clp {

/// The amount SplitMix64 adds to its state per number: 2^64 divided by the golden ratio.
inline constexpr std::uint64_t splitmix64_increment = 0x9E3779B97F4A7C15ull;

/// SplitMix64's output for the state `x` plus splitmix64_increment: a well-mixed 64-bit hash of
/// `x`, and a bijection. Used two ways:
/// - as a hash, combined with a seed by xor: splitmix64(splitmix64(seed) ^ id);
/// - as the generator: with `state` the seed, each number is splitmix64(state), then
///   state += splitmix64_increment; that is SplitMix64's sequence for that seed.
/// @param[in] x  any value
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += splitmix64_increment;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace clp
