// `clp-transfer overlap A B`: the paper's Table 1 for two tokenizers.
#pragma once

#include <clp/error.hpp>
#include <clp/vocabulary.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "io/hf_model.hpp"

namespace clp::program {

/// The vocabulary of a model folder, a tokenizer.json or a vocab.json.
inline io::token_vocabulary read_any_vocabulary(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) return io::read_vocabulary(path);
  if (!std::filesystem::exists(path)) io::detail::fail(path, "no such file or folder");
  // tokenizer.json files are objects whose "model" is an object; vocab.json files map tokens
  // to integers (and may well contain the token "model").
  std::ifstream in(path);
  const nlohmann::json document = nlohmann::json::parse(in, nullptr, false);
  const bool tokenizer =
      path.filename() == "tokenizer.json" || (path.filename() != "vocab.json" && document.is_object() &&
                                              document.contains("model") && document["model"].is_object());
  return tokenizer ? io::read_tokenizer_json(path) : io::read_vocab_json(path);
}

inline void run_overlap(const std::filesystem::path& a, const std::filesystem::path& b, bool json) {
  const io::token_vocabulary va = read_any_vocabulary(a);
  const io::token_vocabulary vb = read_any_vocabulary(b);
  // A is the paper's source: the share of A is Table 1's normalisation. An empty overlap is a
  // result here, not an error.
  clp::intersect_options options;
  options.allow_empty_overlap = true;
  const vocabulary_overlap overlap = [&] {
    try {
      return clp::intersect_vocabularies(va.ids, vb.ids, options);
    } catch (const clp::error& e) {
      throw std::runtime_error(a.string() + " and " + b.string() + ": " + e.what());
    }
  }();
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
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("A  %-40s %8td tokens\n", a.c_str(), overlap.source_vocab_size);
  std::printf("B  %-40s %8td tokens\n", b.c_str(), overlap.target_vocab_size);
  std::printf("A ∩ B %46zu tokens = %.2f%% of A (the paper's Table 1), %.2f%% of B\n", shared, 100 * share_a,
              100 * share_b);
}

}  // namespace clp::program
