// How a fuzz target's source names its entry point, so that the same source builds two ways:
// CLP_FUZZ_TARGET(name) { ... } is libFuzzer's LLVMFuzzerTestOneInput in a fuzzer binary (one
// target each), and in the replay driver (CLP_FUZZ_REPLAY: every target in one executable,
// replay_main.cpp) a function registered under `name`. Each source puts its entry point and
// helpers in a namespace of its own (fuzz_NAME), so that the replay driver can compile them all
// in one unity unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace clp_fuzz {

using entry_point = int (*)(const std::uint8_t* data, std::size_t size);

/// The replay driver's targets by name.
inline std::map<std::string, entry_point>& targets() {
  static std::map<std::string, entry_point> by_name;
  return by_name;
}

inline bool register_target(const char* name, entry_point entry) { return targets().emplace(name, entry).second; }

}  // namespace clp_fuzz

#ifdef CLP_FUZZ_REPLAY
#define CLP_FUZZ_TARGET(name)                                                                  \
  int one_input(const std::uint8_t* data, std::size_t size);                                   \
  [[maybe_unused]] const bool registered = ::clp_fuzz::register_target(#name, one_input);      \
  int one_input(const std::uint8_t* data, std::size_t size)
#else
#define CLP_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
#endif
