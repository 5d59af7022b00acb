// `clp-transfer transfer`: a Hugging Face source model and a helper model in, the source model
// with the helper's vocabulary out (CLP-Transfer, or one of the paper's baselines). Each phase
// is a file of its own under transfer/ and takes the values it reads: the model pair, the
// synthesis choice, the output target, or what an earlier phase made.
#pragma once

#include <chrono>
#include <optional>

#include "io/output_folder.hpp"
#include "io/system/interruption.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "token_matching.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/output_check.hpp"
#include "transfer/output_target.hpp"
#include "transfer/output_vocabulary.hpp"
#include "transfer/read_models.hpp"
#include "transfer/report.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/weights_output.hpp"
#include "transfer/write_output.hpp"

namespace clp_transfer {

/// Runs the transfer: `pair` read, its missing rows made as `synthesis` says, the source with
/// the helper's vocabulary written to `target`; a summary on stderr unless `quiet`. Throws on
/// any error, leaving no output behind.
inline void run_transfer(const model_pair& pair, const synthesis_choice& synthesis, const output_target& target,
                         bool quiet) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  progress_reporter progress(quiet);
  phase_seconds seconds;
  // Before any work: a long run must not end in "already exists".
  target.check({pair.source, pair.helper});
  if (!quiet) target.warn_of_staging_folders();
  synthesis.execution.check();

  // read -> screen -> synthesise (the weights stream out meanwhile) -> write -> check -> report -> commit -> summary
  progress.begin("read");
  io::interruption_test_point("read");
  const loaded_models models = read_models(pair);
  const transferred_config config = helper_vocabulary_config(models);
  const output_vocabulary vocabulary = helper_vocabulary(models, config);
  seconds.read = progress.end();
  // Before the synthesis: the screen decides which rows it copies.
  const std::optional<undertrained_mode> mode =
      synthesis.method == transfer_method::random ? std::nullopt : std::optional(synthesis.undertrained);
  const auto screen_started = clock::now();
  const undertrained_screen screen =
      screen_undertrained(models.source, models.matching.overlap, mode, synthesis.execution.threads);
  seconds.screen = std::chrono::duration<double>(clock::now() - screen_started).count();
  if (!quiet) print_matching_warnings(models.matching);

  // The new weights are written as the synthesis makes them: the files are opened first.
  progress.begin("synthesize");
  const bool durable = target.durable();
  io::staging_directory staging(target.folder);
  const vocabulary_overlap overlap = screened_overlap(models.matching.overlap, screen);
  synthesised_embeddings synthesised = allocate_outputs(models.source, overlap.target_rows());
  weights_output weights(staging.path(), durable, models.source, synthesised);
  io::interruption_test_point("synthesize");
  synthesise(models.source, models.helper.embedding, overlap, synthesis, progress, synthesised,
             {[&](Index end) { weights.rows_started(end); }, [&](Index end) { weights.rows_finished(end); }});
  seconds.synthesize = progress.end();

  progress.begin("write");
  io::interruption_test_point("write");
  write_output(staging, durable, models.source.checkpoint.weights, weights, vocabulary, progress);
  seconds.write = progress.end();
  // Checked as verify checks any folder, before the commit; findings are warnings, not refusals.
  const auto check_started = clock::now();
  const std::vector<verify::finding> findings =
      check_output(staging.path(), target.folder, {models.source.embedding_name, models.source.head_name.value_or("")},
                   synthesis.execution.threads, weights.value_scans());
  seconds.check = std::chrono::duration<double>(clock::now() - check_started).count();
  seconds.total = std::chrono::duration<double>(clock::now() - started).count();

  const transfer_outcome outcome{models, synthesis, screen, synthesised, config, target.folder, findings, seconds};
  commit_output(staging, durable, target, write_partial_report(outcome, target.report));
  if (!quiet) print_summary(outcome, target.report);
}

}  // namespace clp_transfer
