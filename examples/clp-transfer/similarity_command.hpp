// `clp-transfer similarity A B`: the paper's Figure 1 for two models on one tokenizer: how many
// of each token's k nearest neighbours the two input embeddings share.
#pragma once

#include <clp/knn_overlap.hpp>
#include <clp/random_init.hpp>  // detail::splitmix64

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "embedding.hpp"
#include "execution_arguments.hpp"
#include "io/hf_model.hpp"

namespace clp::program {

struct similarity_arguments {
  std::filesystem::path a, b;
  Index k = 10;
  Index sample = 0;  // 0: the whole vocabulary
  std::uint64_t seed = 0;
  execution_arguments execution;  // --threads, --tile-mb
  bool json = false;
};

/// `count` distinct ids of [0, n), ascending, chosen by a partial Fisher-Yates shuffle driven by
/// splitmix64 (not std::uniform_int_distribution, whose output differs between libraries).
inline std::vector<Index> seeded_sample(Index n, Index count, std::uint64_t seed) {
  std::vector<Index> ids(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) ids[i] = i;
  std::uint64_t state = seed;
  for (Index i = 0; i < count; ++i) {
    state = clp::detail::splitmix64(state);
    std::swap(ids[i], ids[i + Index(state % std::uint64_t(n - i))]);
  }
  ids.resize(static_cast<std::size_t>(count));
  std::sort(ids.begin(), ids.end());
  return ids;
}

inline void run_similarity(const similarity_arguments& args) {
  args.execution.check();
  const io::model_folder a(args.a), b(args.b);
  const io::token_vocabulary va = io::read_vocabulary(args.a);
  const io::token_vocabulary vb = io::read_vocabulary(args.b);
  if (va.ids != vb.ids)
    io::detail::fail(args.b, "does not share the tokenizer of " + args.a.string() +
                                 " (the vocabularies differ), so its rows are other tokens");
  const embedding_matrix ea = embedding_matrix::read(a, io::find_input_embedding(args.a, a.tensor_names()));
  const embedding_matrix eb = embedding_matrix::read(b, io::find_input_embedding(args.b, b.tensor_names()));
  // Rows past the vocabulary are padding, not tokens.
  const Index rows = va.size;
  for (const embedding_matrix* e : {&ea, &eb}) {
    if (e->rows() < rows)
      throw io::error(e->description() + ": " + std::to_string(e->rows()) + " rows for " + std::to_string(rows) +
                      " token ids");
    // knn_overlap screens the token rows; a NaN in padding still means a broken checkpoint.
    std::vector<Index> padding;
    for (Index r = rows; r < e->rows(); ++r) padding.push_back(r);
    e->require_finite(padding, args.execution.threads);
  }
  if (args.sample < 0 || args.sample > rows)
    throw usage_error("--sample must be between 1 and the " + std::to_string(rows) + " tokens");

  knn_options options;
  static_cast<clp::execution_options&>(options) = args.execution.options();
  options.k = args.k;
  const std::vector<Index> queries = args.sample > 0 ? seeded_sample(rows, args.sample, args.seed) : [&] {
    std::vector<Index> all(static_cast<std::size_t>(rows));
    for (Index i = 0; i < rows; ++i) all[i] = i;
    return all;
  }();
  const knn_overlap_result result = [&] {
    try {
      return ea.visit([&](auto view_a) {
        return eb.visit([&](auto view_b) {
          auto tokens_only = [rows](auto v) {
            return decltype(v)(v.data(), rows, v.cols(), v.outer_stride(), v.order());
          };
          return clp::knn_overlap(tokens_only(view_a), tokens_only(view_b), queries, options);
        });
      });
    } catch (const clp::error&) {
      // knn_overlap screens every row it reads; name the file of a NaN or infinity it found.
      ea.require_finite();
      eb.require_finite();
      throw;
    }
  }();
  if (args.json) {
    nlohmann::ordered_json out;
    out["a"] = args.a.string();
    out["b"] = args.b.string();
    out["a_width"] = ea.cols();
    out["b_width"] = eb.cols();
    out["k"] = result.k;
    out["tokens"] = result.tokens;
    out["vocabulary"] = rows;
    out["mean_overlap"] = result.mean_overlap;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("k=%td nearest-neighbour overlap of %s (width %td) and %s (width %td)\n", result.k, args.a.c_str(),
              ea.cols(), args.b.c_str(), eb.cols());
  std::printf("  %.4f over %td of %td tokens (unrelated spaces would score about %.4f)\n", result.mean_overlap,
              result.tokens, rows, double(result.k) / double(rows - 1));
}

}  // namespace clp::program
