// `clp-transfer transfer`: a Hugging Face source model and a helper model in, the source model
// with the helper's vocabulary out (CLP-Transfer, or one of the paper's baselines).
//
// The run is a pipeline of phases, each in a file of its own under transfer/, read top to
// bottom below: check_arguments (arguments.hpp) -> read_models (which matches the vocabularies
// too) -> synthesise (with finite_inputs.hpp; the new weights stream out as it goes,
// weights_output.hpp) -> write_output -> write_partial_report (report.hpp) -> commit_output
// (write_output.hpp) -> print_summary (report.hpp).
#pragma once

#include <chrono>

#include "io/output_folder.hpp"
#include "progress.hpp"
#include "token_matching.hpp"
#include "transfer/arguments.hpp"
#include "transfer/read_models.hpp"
#include "transfer/report.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/weights_output.hpp"
#include "transfer/write_output.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// Runs the transfer; throws on any error, leaving no output behind.
inline void run_transfer(const transfer_arguments& args) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  progress_reporter progress(args.quiet);
  phase_seconds seconds;
  check_arguments(args);  // before any work: a long run must not end in "already exists"

  progress.begin("read");
  const loaded_models models = read_models(args);
  seconds.read = progress.end();
  if (!args.quiet) print_matching_warnings(models.matching);

  // The new weights are written as the synthesis makes them: the files are opened first.
  progress.begin("synthesize");
  const bool durable = durable_output(args);
  io::staging_directory staging(args.output);
  synthesised_embeddings synthesised = allocate_outputs(models);
  weights_output weights(staging.path(), durable, models.source, synthesised);
  synthesise(models, models.matching.overlap, args, progress, synthesised,
             {[&](Index end) { weights.rows_started(end); }, [&](Index end) { weights.rows_finished(end); }});
  seconds.synthesize = progress.end();

  progress.begin("write");
  write_output(staging, durable, args, models, weights, progress);
  seconds.write = progress.end();
  seconds.total = std::chrono::duration<double>(clock::now() - started).count();

  const transfer_outcome outcome{args, models, synthesised.report, synthesised.held_out, seconds};
  commit_output(staging, durable, args, write_partial_report(outcome));
  print_summary(outcome);
}

}  // namespace clp_transfer
