// The tokenizer side of `clp-transfer extend` (examples/clp-transfer/extend) on real tokenizers:
// a source tokenizer.json extended by every token of a helper's tokenizer.json that it lacks
// (by bytes, in the helper's merge order). Prints how many tokens were added, made as
// intermediates or left out (by reason), the time of each step, and the drift and fertility on
// the probe texts. With --write FOLDER, writes the extended tokenizer.json there (and the
// source's tokenizer_config.json beside it), for a client to load:
//
//   bench_extend_tokenizer tests/data/fetched/llama2/tokenizer.json tests/data/qwen3/tokenizer.json
//       [--probe en.txt] [--probe-new de.txt] [--write /tmp/llama2-qwen3]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/drift.hpp"
#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/token_choice.hpp"
#include "extend/tokenizer_writing.hpp"

namespace extend = clp_transfer::extend;

namespace {

struct options {
  std::string source, helper, probe, probe_new, write;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

double seconds_since(std::chrono::steady_clock::time_point& start) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start).count();
  start = now;
  return elapsed;
}

/// Left-out tokens by the start of their reason (up to its first ':' or '(').
void print_left_out(const extend::bpe_extension& extension) {
  std::map<std::string, std::size_t> reasons;
  for (const extend::left_out_token& token : extension.left_out)
    reasons[token.reason.substr(0, token.reason.find_first_of(":("))]++;
  for (const auto& [reason, count] : reasons) std::printf("  %7zu  %s\n", count, reason.c_str());
  for (std::size_t i = 0; i < extension.left_out.size() && i < 5; ++i)
    std::printf("  e.g. %s: %s\n", extend::quoted_token(extension.left_out[i].bytes).c_str(),
                extension.left_out[i].reason.c_str());
}

void print_probes(const options& o, const extend::bpe_model& source, const extend::bpe_model& helper,
                  const extend::bpe_extension& extension) {
  const extend::bpe_table before(source);
  if (!o.probe.empty()) {
    const extend::drift_measure d = extend::drift(before, extension.table, read_text(o.probe));
    std::printf("drift on %s: %zu of %zu words change ids (%.2f%%)\n", o.probe.c_str(), d.changed, d.words,
                100.0 * d.share());
  }
  if (!o.probe_new.empty()) {
    const std::string text = read_text(o.probe_new);
    const double s = extend::fertility(before, text).tokens_per_word();
    const double e = extend::fertility(extension.table, text).tokens_per_word();
    const double h = extend::fertility(extend::bpe_table(helper), text).tokens_per_word();
    std::printf("tokens per word on %s: source %.3f, extended %.3f, helper %.3f (extended / helper %.3f)\n",
                o.probe_new.c_str(), s, e, h, e / h);
  }
}

int run(const options& o) {
  auto clock = std::chrono::steady_clock::now();
  const auto source_json = extend::parse_ordered_json(read_text(o.source), o.source);
  const auto helper_json = nlohmann::json::parse(read_text(o.helper));
  const double parse_s = seconds_since(clock);
  const extend::bpe_model source = extend::read_bpe_model(source_json, o.source);
  const extend::bpe_model helper = extend::read_bpe_model(helper_json, o.helper);
  const double read_s = seconds_since(clock);
  const std::vector<std::string> missing = extend::choose_tokens(
      extend::bytes_of_tokens(helper, extend::merge_rank_order(helper)), extend::vocabulary_bytes(source), {});
  const double choose_s = seconds_since(clock);
  const extend::bpe_extension extension = extend::extend_bpe(source, missing, extend::first_unused_id(source));
  const double extend_s = seconds_since(clock);
  std::string written;
  if (!o.write.empty()) {
    std::filesystem::create_directories(o.write);
    written = extend::extended_tokenizer_json(source_json, extension, o.source).dump(2);
    std::ofstream(std::filesystem::path(o.write) / "tokenizer.json", std::ios::binary) << written;
    const auto config = std::filesystem::path(o.source).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config))
      std::filesystem::copy_file(config, std::filesystem::path(o.write) / "tokenizer_config.json",
                                 std::filesystem::copy_options::overwrite_existing);
  }
  const double write_s = seconds_since(clock);
  std::printf("source %s: %zu ids, %zu merges, %s\n", o.source.c_str(), source.tokens.size(), source.merges.size(),
              source.rules.description.c_str());
  std::printf("helper %s: %zu ids; %zu of its tokens are missing from the source\n", o.helper.c_str(),
              helper.tokens.size(), missing.size());
  std::printf(
      "added %zu (%.2f%% of the missing), intermediate %zu, new characters %zu, already present %zu, "
      "left out %zu; %zu merges appended\n",
      extension.requested_count(),
      100.0 * static_cast<double>(extension.requested_count()) /
          static_cast<double>(missing.empty() ? 1 : missing.size()),
      extension.intermediate_count(), extension.new_character_count(), extension.already_present.size(),
      extension.left_out.size(), extension.table.model().merges.size() - extension.source_merges);
  print_left_out(extension);
  std::printf("time: parse both %.3f s, read models %.3f s, choose %.3f s, extend and verify %.3f s, write %.3f s\n",
              parse_s, read_s, choose_s, extend_s, write_s);
  print_probes(o, source, helper, extension);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* value = arg == "--probe"       ? &o.probe
                         : arg == "--probe-new" ? &o.probe_new
                         : arg == "--write"     ? &o.write
                                                : nullptr;
    if (value && i + 1 < argc)
      *value = argv[++i];
    else
      positional.push_back(arg);
  }
  if (positional.size() != 2) {
    std::fprintf(stderr,
                 "usage: bench_extend_tokenizer SOURCE/tokenizer.json HELPER/tokenizer.json [--probe FILE] "
                 "[--probe-new FILE] [--write FOLDER]\n");
    return 2;
  }
  o.source = positional[0];
  o.helper = positional[1];
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_extend_tokenizer: %s\n", e.what());
    return 1;
  }
}
