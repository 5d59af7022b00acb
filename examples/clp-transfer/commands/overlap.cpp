// `clp-transfer overlap A B`: the paper's Table 1 for two tokenizers, matched by bytes or by
// string (--match), with how many tokens matched each way: the command's options, their
// registration and its run.
#include <clp/vocabulary.hpp>

#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands/command.hpp"
#include "io/tokenizer/reading.hpp"
#include "library_names.hpp"
#include "token_matching.hpp"

namespace clp_transfer {

namespace {

struct overlap_options {
  std::filesystem::path a, b;
  bool json = false;
  std::string match = "bytes";
  CLI::Option* match_option = nullptr;
};

void print_json(const overlap_options& options, const token_matching& matching) {
  const vocabulary_overlap& overlap = matching.overlap;
  nlohmann::ordered_json out;
  out["a"] = options.a.string();
  out["b"] = options.b.string();
  out["a_vocab_size"] = overlap.source_vocab_size;
  out["b_vocab_size"] = overlap.target_vocab_size;
  out["overlap"] = overlap.size();
  out["overlap_share_of_a"] = overlap.share_of_source();
  out["overlap_share_of_b"] = overlap.share_of_target();
  out["match"] = match_name(matching.used);
  add_counts(out, counts_of(overlap));
  out["a_spelling"] = spelling_description(matching.source_spelling);
  out["b_spelling"] = spelling_description(matching.helper_spelling);
  std::printf("%s\n", out.dump(2).c_str());
}

void print_text(const overlap_options& options, const token_matching& matching) {
  const vocabulary_overlap& overlap = matching.overlap;
  const match_counts counts = counts_of(overlap);
  std::printf("A  %-40s %8td tokens\n", options.a.c_str(), overlap.source_vocab_size);
  std::printf("B  %-40s %8td tokens\n", options.b.c_str(), overlap.target_vocab_size);
  std::printf("A ∩ B %46td tokens = %.2f%% of A (the paper's Table 1), %.2f%% of B\n", overlap.size(),
              100 * overlap.share_of_source(), 100 * overlap.share_of_target());
  std::printf(
      "   matched %s: %td the same string, %td other strings with the same bytes; %td strings shared "
      "(A %s, B %s)\n",
      matching.used == clp::token_match::bytes ? "by bytes" : "exactly", counts.exact, counts.bytes,
      counts.shared_strings, spelling_description(matching.source_spelling).c_str(),
      spelling_description(matching.helper_spelling).c_str());
}

void run_overlap(const overlap_options& options) {
  const match_arguments match = parse_match(options.match, options.match_option->count() > 0);
  // B is read on a thread of its own meanwhile. A's error, when both fail, is the one reported
  // (the future's destructor waits for B first).
  std::future<tokenizer_reading> reading_b =
      std::async(std::launch::async, [&options] { return read_tokenizer(options.b); });
  const tokenizer_reading a = read_tokenizer(options.a);
  const tokenizer_reading b = reading_b.get();
  // A is the paper's source: the share of A is Table 1's normalisation. An empty overlap is a
  // result here, not an error.
  clp::intersect_options intersect;
  intersect.allow_empty_overlap = true;
  const token_matching matching = match_tokens(a, b, match, intersect);
  print_matching_warnings(matching);
  if (options.json)
    print_json(options, matching);
  else
    print_text(options, matching);
}

}  // namespace

command overlap_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("overlap", "Vocabulary overlap of A and B (the paper's Table 1)");
  const auto options = std::make_shared<overlap_options>();
  command
      ->add_option("A", options->a,
                   "Model folder, tokenizer.json, vocab.json, SentencePiece *.model or vocab.txt (the source: Table 1 "
                   "divides by it)")
      ->required();
  command->add_option("B", options->b, "Model folder, tokenizer.json, vocab.json, SentencePiece *.model or vocab.txt")
      ->required();
  options->match_option = add_match_option(*command, options->match);
  command->add_flag("--json", options->json, "Print JSON");
  return {command, [options] { run_overlap(*options); }};
}

}  // namespace clp_transfer
