// clp-transfer: give a large language model a new vocabulary (CLP-Transfer, Ostendorff & Rehm
// 2023), and the paper's two diagnostics. See README.md for the method and every option.
#include <unistd.h>
#include <CLI/CLI.hpp>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <clp/version.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "overlap_command.hpp"
#include "similarity_command.hpp"
#include "transfer_command.hpp"

#ifdef CLP_HAVE_BLAS
// Each worker thread of the library runs its own single-threaded product; OpenBLAS's own
// threads would only oversubscribe the cores. Weak, so any other BLAS links too.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Buffers of 1 MiB and more straight from mmap, and back to the system when freed. By
  // default glibc raises this threshold after the first large free (up to 32 MiB), and the
  // multi-MB buffers freed after reading the vocabularies then stay in the heap through the
  // synthesis: 31.5 MiB of peak RSS with Llama 3's and Gemma 3's vocabularies (measured; see
  // examples/benchmarks/sizing.md). The program's few large buffers live long, so the extra
  // mmap calls cost nothing measurable.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
#ifdef CLP_HAVE_BLAS
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#endif
  CLI::App app{"clp-transfer: a new vocabulary for a large language model, from a small model that speaks it"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clp-transfer " + std::to_string(clp::version_major) + "." +
                                        std::to_string(clp::version_minor) + "." + std::to_string(clp::version_patch));

  clp::program::transfer_arguments t;
  // Parsed into t.method and t.weighting once the command line is read.
  std::string method = "clp", weighting = clp::program::default_weighting;
  clp::Index k = 10;
  float temperature = 0.1f;
  // --match, parsed with whether it was given (an explicit `bytes` refuses an unknown spelling).
  const std::string match_help =
      "bytes: tokens that stand for the same bytes in their tokenizers' spellings (Ġhouse = ▁house); exact: the "
      "same string (the paper)";
  std::string transfer_match = "bytes", overlap_match = "bytes";
  CLI::App* transfer = app.add_subcommand("transfer", "Write SOURCE with HELPER's vocabulary to OUTPUT");
  transfer->add_option("--source", t.source, "Large source model folder (config.json, safetensors, tokenizer)")
      ->required();
  transfer->add_option("--helper", t.helper, "Small helper model folder speaking the target vocabulary")->required();
  transfer->add_option("--output", t.output, "Output model folder (must not exist unless --force)")->required();
  transfer->add_option("--report", t.report, "Also write a JSON report here");
  transfer->add_option("--threads", t.execution.threads, "Worker threads (0: all cores)");
  transfer->add_option("--tile-mb", t.execution.tile_mb, "Working memory of the synthesis, MiB")->capture_default_str();
  transfer->add_option("--embedding-tensor", t.embedding_tensor, "Source input embedding name (default: found)");
  transfer->add_option("--helper-embedding-tensor", t.helper_embedding_tensor,
                       "Helper input embedding name (default: found)");
  transfer->add_option("--lm-head-tensor", t.lm_head_tensor, "Source untied output head name (default: found)");
  transfer
      ->add_option("--transfer-tensor", t.transfer_tensors,
                   "Also transfer this source tensor (one row or value per token) with the embedding's weights; "
                   "repeatable")
      ->allow_extra_args(false);
  CLI::Option* transfer_match_option =
      transfer->add_option("--match", transfer_match, match_help)->capture_default_str();
  transfer->add_option("--method", method, "clp | overlap-random | random")->capture_default_str();
  transfer->add_option("--weighting", weighting, "paper | paper-guarded | clamped | top-k | softmax | sparsemax | omp")
      ->capture_default_str();
  CLI::Option* k_option =
      transfer->add_option("--k", k, "Neighbours for top-k and softmax (default 10) and omp (default 8)");
  transfer->add_option("--temperature", temperature, "Softmax temperature")->capture_default_str();
  transfer->add_option("--seed", t.seed, "Seed of the random methods")->capture_default_str();
  transfer->add_flag("--force", t.force, "Replace an existing output (only after success)");
  transfer->add_flag("--fsync", t.fsync,
                     "Flush the output to disk before moving it into place, so it survives a power loss (runs at the "
                     "disk's write speed; always done when --force replaces an existing output)");
  transfer->add_flag("--quiet", t.quiet, "Print errors only");

  std::string a, b;
  bool json = false;
  CLI::App* overlap = app.add_subcommand("overlap", "Vocabulary overlap of A and B (the paper's Table 1)");
  overlap->add_option("A", a, "Model folder, tokenizer.json or vocab.json (the source: Table 1 divides by it)")
      ->required();
  overlap->add_option("B", b, "Model folder, tokenizer.json or vocab.json")->required();
  CLI::Option* overlap_match_option = overlap->add_option("--match", overlap_match, match_help)->capture_default_str();
  overlap->add_flag("--json", json, "Print JSON");

  clp::program::similarity_arguments s;
  CLI::App* similarity =
      app.add_subcommand("similarity", "k-nearest-neighbour overlap of two models' input embeddings (Figure 1)");
  similarity->add_option("A", s.a, "Model folder")->required();
  similarity->add_option("B", s.b, "Model folder with the same tokenizer")->required();
  similarity->add_option("--k", s.k, "Neighbours per token")->capture_default_str();
  similarity->add_option("--sample", s.sample, "Average over this many seeded random tokens (0: all)")
      ->capture_default_str();
  similarity->add_option("--seed", s.seed, "Seed of the sample")->capture_default_str();
  similarity->add_option("--threads", s.execution.threads, "Worker threads (0: all cores)");
  similarity->add_option("--tile-mb", s.execution.tile_mb, "Working memory, MiB")->capture_default_str();
  similarity->add_flag("--json", s.json, "Print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors are one line too, with the usual exit status of a usage error.
    std::fprintf(stderr, "clp-transfer: error: %s (see clp-transfer --help)\n", e.what());
    return 2;
  }
  try {
    if (*transfer) {
      // A bad value is refused like a bad input (status 1), in the words of the check.
      t.method = clp::program::parse_method(method);
      t.weighting = clp::program::parse_weighting(
          weighting, k_option->count() ? std::optional<clp::Index>(k) : std::nullopt, temperature);
      t.matching = clp::program::parse_match(transfer_match, transfer_match_option->count() > 0);
      clp::program::run_transfer(t);
    } else if (*overlap)
      clp::program::run_overlap(a, b, json,
                                clp::program::parse_match(overlap_match, overlap_match_option->count() > 0));
    else if (*similarity)
      clp::program::run_similarity(s);
  } catch (const std::exception& e) {
    // On a terminal, first clear a progress bar the error may have interrupted.
    std::fprintf(stderr, "%sclp-transfer: error: %s\n", ::isatty(STDERR_FILENO) ? "\r\033[K" : "", e.what());
    return 1;
  }
  return 0;
}
