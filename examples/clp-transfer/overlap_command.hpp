// `clp-transfer overlap A B`: the paper's Table 1 for two tokenizers.
#pragma once

#include <clp/vocabulary.hpp>

#include <cstdio>
#include <filesystem>
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
  std::size_t shared = 0;
  for (const auto& entry : va.ids) shared += vb.ids.count(entry.first);
  const double share_a = double(shared) / double(va.ids.size());
  const double share_b = double(shared) / double(vb.ids.size());
  if (json) {
    nlohmann::ordered_json out;
    out["a"] = a.string();
    out["b"] = b.string();
    out["a_vocab_size"] = va.ids.size();
    out["b_vocab_size"] = vb.ids.size();
    out["overlap"] = shared;
    out["overlap_share_of_a"] = share_a;
    out["overlap_share_of_b"] = share_b;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("A  %-40s %8zu tokens\n", a.c_str(), va.ids.size());
  std::printf("B  %-40s %8zu tokens\n", b.c_str(), vb.ids.size());
  std::printf("A ∩ B %46zu tokens = %.2f%% of A (the paper's Table 1), %.2f%% of B\n", shared, 100 * share_a,
              100 * share_b);
}

}  // namespace clp::program
