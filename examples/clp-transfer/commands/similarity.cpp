// `clp-transfer similarity A B`: the paper's Figure 1 for two models on one tokenizer: how many
// of each token's k nearest neighbours the two input embeddings share. The command's arguments,
// their registration and its run.
#include <clp/knn_overlap.hpp>
#include <clp/splitmix64.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/command.hpp"
#include "commands/option_checks.hpp"
#include "errors.hpp"
#include "execution_arguments.hpp"
#include "io/embedding_matrix.hpp"
#include "io/embedding_names.hpp"
#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "library_names.hpp"

namespace clp_transfer {

namespace {

struct similarity_arguments {
  std::filesystem::path a, b;
  Index k = 10;
  Index sample = 0;  // 0: the whole vocabulary
  std::uint64_t seed = 0;
  execution_arguments execution;  // --threads, --tile-mb
  bool json = false;
};

/// `count` distinct ids of [0, n), ascending, chosen by a partial Fisher-Yates shuffle driven by
/// clp::splitmix64 (not std::uniform_int_distribution, whose output differs between libraries);
/// all of them for count 0.
std::vector<Index> token_sample(Index n, Index count, std::uint64_t seed) {
  std::vector<Index> ids(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
  if (count == 0) return ids;
  std::uint64_t state = seed;
  for (Index i = 0; i < count; ++i) {
    state = clp::splitmix64(state);
    std::swap(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(i + Index(state % std::uint64_t(n - i)))]);
  }
  ids.resize(static_cast<std::size_t>(count));
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The input embedding of `model`, with a row for every one of its `tokens` token ids; a NaN in
/// the rows past them (padding) still means a broken checkpoint: knn_overlap screens only the
/// token rows.
embedding_matrix token_embedding(const hf_checkpoint& model, Index tokens, int threads) {
  const std::string name = io::find_input_embedding(model.folder, model.weights.tensor_names());
  embedding_matrix e = embedding_matrix::read(model.weights, name);
  if (e.rows() < tokens)
    throw io::malformed_file(e.origin().file,
                             "has " + std::to_string(e.rows()) + " rows for " + std::to_string(tokens) + " token ids",
                             e.origin().tensor);
  std::vector<Index> padding;
  for (Index r = tokens; r < e.rows(); ++r) padding.push_back(r);
  require_finite(e, padding, threads);
  return e;
}

void print(const similarity_arguments& args, const clp::knn_overlap_result& result, Index rows, Index a_width,
           Index b_width) {
  if (args.json) {
    nlohmann::ordered_json out;
    out["a"] = args.a.string();
    out["b"] = args.b.string();
    out["a_width"] = a_width;
    out["b_width"] = b_width;
    out["k"] = result.k;
    out["tokens"] = result.tokens;
    out["vocabulary"] = rows;
    out["mean_overlap"] = result.mean_overlap;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("k=%td nearest-neighbour overlap of %s (width %td) and %s (width %td)\n", result.k, args.a.c_str(),
              a_width, args.b.c_str(), b_width);
  std::printf("  %.4f over %td of %td tokens (unrelated spaces would score about %.4f)\n", result.mean_overlap,
              result.tokens, rows, double(result.k) / double(rows - 1));
}

void run_similarity(const similarity_arguments& args) {
  args.execution.check();
  // What the options mean without the models, checked before either is read; the bounds that
  // need the vocabulary's size come after.
  if (args.k < 1) throw clp::invalid_argument(option_facts("--k"), "must be at least 1, not " + std::to_string(args.k));
  if (args.sample < 0)
    throw clp::invalid_argument(option_facts("--sample"),
                                "must be 0 (all tokens) or more, not " + std::to_string(args.sample));
  const hf_checkpoint a = hf_checkpoint::read(args.a), b = hf_checkpoint::read(args.b);
  if (a.tokenizer.vocabulary.ids != b.tokenizer.vocabulary.ids)
    throw clp::invalid_argument(io::about(args.b), "does not share the tokenizer of " + args.a.string() +
                                                       " (the vocabularies differ), so its rows are other tokens");
  // Rows past the vocabulary are padding, not tokens.
  const Index rows = a.tokenizer.vocabulary.size;
  const embedding_matrix ea = token_embedding(a, rows, args.execution.threads);
  const embedding_matrix eb = token_embedding(b, rows, args.execution.threads);
  if (args.sample < 0 || args.sample > rows)
    throw clp::invalid_argument(option_facts("--sample"), "must be 0 (all tokens) or between 1 and the " +
                                                              std::to_string(rows) + " tokens, not " +
                                                              std::to_string(args.sample));
  clp::knn_options options;
  static_cast<clp::execution_options&>(options) = args.execution.options();
  options.k = args.k;
  const auto tokens_only = [rows](const embedding_matrix& e) {
    const clp::matrix_view<const void> v = e.view();
    return clp::matrix_view<const void>(v.data(), v.type(), rows, v.cols(), v.outer_stride(), v.order());
  };
  const error_origins origins = error_origins()
                                    .add("a", ea.origin())
                                    .add("b", eb.origin())
                                    .add("k", option_facts("--k"))
                                    .otherwise(args.a.string() + " and " + args.b.string());
  const clp::knn_overlap_result result = origins.run([&] {
    return clp::knn_overlap(tokens_only(ea), tokens_only(eb), token_sample(rows, args.sample, args.seed), options);
  });
  print(args, result, rows, ea.cols(), eb.cols());
}

}  // namespace

command similarity_command(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("similarity", "k-nearest-neighbour overlap of two models' input embeddings (Figure 1)");
  const auto args = std::make_shared<similarity_arguments>();
  command->add_option("A", args->a, "Model folder")->required();
  command->add_option("B", args->b, "Model folder with the same tokenizer")->required();
  command->add_option("--k", args->k, "Neighbours per token")->capture_default_str();
  command->add_option("--sample", args->sample, "Average over this many seeded random tokens (0: all)")
      ->capture_default_str();
  command->add_option("--seed", args->seed, "Seed of the sample")->check(not_negative())->capture_default_str();
  add_execution_options(*command, args->execution, "Working memory, MiB");
  command->add_flag("--json", args->json, "Print JSON");
  return {command, [args] { run_similarity(*args); }};
}

}  // namespace clp_transfer
