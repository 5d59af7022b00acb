// `clp-transfer overlap A B`: the paper's Table 1 for two tokenizers, matched by bytes or by
// string (--match), with how many tokens matched each way.
#pragma once

#include <clp/error.hpp>
#include <clp/vocabulary.hpp>

#include <cstdio>
#include <filesystem>
#include <future>
#include <string>

#include <nlohmann/json.hpp>

#include "token_matching.hpp"

namespace clp::program {

inline void run_overlap(const std::filesystem::path& a, const std::filesystem::path& b, bool json,
                        const match_arguments& match = {}) {
  // B is read on a thread of its own meanwhile. A's error, when both fail, is the one reported
  // (the future's destructor waits for B first).
  std::future<tokenizer_reading> reading_b = std::async(std::launch::async, [&b] { return read_tokenizer(b); });
  const tokenizer_reading ta = read_tokenizer(a);
  const tokenizer_reading tb = reading_b.get();
  // A is the paper's source: the share of A is Table 1's normalisation. An empty overlap is a
  // result here, not an error.
  clp::intersect_options options;
  options.allow_empty_overlap = true;
  const token_matching matching = [&] {
    try {
      return match_tokens(ta, tb, match, options);
    } catch (const io::error&) {
      throw;  // names its file already
    } catch (const clp::error& e) {
      throw io::error(a.string() + " and " + b.string() + ": " + e.what());
    }
  }();
  print_matching_warnings(matching);
  const vocabulary_overlap& overlap = matching.overlap;
  const auto shared = static_cast<std::size_t>(overlap.size());
  const double share_a = overlap.share_of_source();
  const double share_b = overlap.share_of_target();
  if (json) {
    nlohmann::ordered_json out;
    out["a"] = a.string();
    out["b"] = b.string();
    out["a_vocab_size"] = overlap.source_vocab_size;
    out["b_vocab_size"] = overlap.target_vocab_size;
    out["overlap"] = shared;
    out["overlap_share_of_a"] = share_a;
    out["overlap_share_of_b"] = share_b;
    out["match"] = match_name(matching.used);
    out["exact_matches"] = overlap.exact_matches;
    out["byte_matches"] = overlap.byte_matches;
    out["shared_strings"] = overlap.shared_strings;
    out["a_spelling"] = spelling_description(matching.source_spelling);
    out["b_spelling"] = spelling_description(matching.helper_spelling);
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("A  %-40s %8td tokens\n", a.c_str(), overlap.source_vocab_size);
  std::printf("B  %-40s %8td tokens\n", b.c_str(), overlap.target_vocab_size);
  std::printf("A ∩ B %46zu tokens = %.2f%% of A (the paper's Table 1), %.2f%% of B\n", shared, 100 * share_a,
              100 * share_b);
  std::printf(
      "   matched %s: %td the same string, %td other strings with the same bytes; %td strings shared "
      "(A %s, B %s)\n",
      matching.used == clp::token_match::bytes ? "by bytes" : "exactly", overlap.exact_matches, overlap.byte_matches,
      overlap.shared_strings, spelling_description(matching.source_spelling).c_str(),
      spelling_description(matching.helper_spelling).c_str());
}

}  // namespace clp::program
