// What an accepted vocabulary must satisfy, for the tokenizer.json and vocab.json targets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "fuzz_support.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"

namespace clp_fuzz {

inline void check_vocabulary(const clp_transfer::io::token_vocabulary& vocabulary) {
  if (vocabulary.ids.empty()) finding("an empty vocabulary was accepted");
  std::int64_t highest = -1;
  std::unordered_set<std::int64_t> seen;
  for (const auto& [token, id] : vocabulary.ids) {
    if (id < 0) finding("negative id accepted", token);
    if (!seen.insert(id).second) finding("one id for two tokens", token);
    highest = std::max(highest, id);
  }
  // highest + 1 must be an int64 too: an id of INT64_MAX is a finding, not an overflow here.
  if (highest == INT64_MAX || vocabulary.size != highest + 1) finding("size is not the highest id + 1");
}

}  // namespace clp_fuzz
