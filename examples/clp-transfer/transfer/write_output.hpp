// Phase 4 of `clp-transfer transfer`: the output model, completed in a staging folder beside its
// final name and moved into place only once complete (and the report written).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/output_folder.hpp"
#include "io/safetensors.hpp"
#include "io/system/posix_file.hpp"
#include "io/tokenizer/files.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "transfer/arguments.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/vocabulary_layout.hpp"
#include "transfer/weights_output.hpp"

namespace clp_transfer {

/// Whether the output is flushed to disk before it is moved into place, so that it survives a
/// power loss once committed: asked for with --fsync, and always when --force replaces an
/// output (the old one is deleted only after the new one is on disk). Otherwise the kernel
/// writes it back in its own time, as after cp; the rename still means no reader ever sees a
/// half-written output.
inline bool durable_output(const transfer_arguments& args) {
  std::error_code ignored;
  return args.fsync || std::filesystem::exists(args.output, ignored);
}

/// Completes the output model in `staging`: the weights (whose new matrices were written as the
/// synthesis made them; weights_output.hpp), the index of a sharded model with its new total
/// size (and its shards' safetensors names, when the source's were torch checkpoints), config.json and generation_config.json for the new vocabulary (read_models decided
/// them), and the helper's tokenizer files, copied as they are.
inline void write_output(const io::staging_directory& staging, bool durable, const transfer_arguments& args,
                         const loaded_models& models, weights_output& new_weights, progress_reporter& progress) {
  const io::model_weights& weights = models.source.checkpoint.weights;
  const std::uint64_t new_total_size = new_weights.finish(progress);
  if (!weights.index_path().empty()) {
    nlohmann::ordered_json index = weights.output_index();
    if (index.contains("metadata") && index["metadata"].is_object()) index["metadata"]["total_size"] = new_total_size;
    io::write_file_atomically(staging.path() / weights.output_index_name(), index.dump(2) + "\n", durable);
  }
  io::write_file_atomically(staging.path() / "config.json", models.config.config.dump(2) + "\n", durable);
  if (models.generation_config)
    io::write_file_atomically(staging.path() / "generation_config.json", models.generation_config->dump(2) + "\n",
                              durable);
  for (const std::filesystem::path& file : io::tokenizer_files(args.helper)) {
    std::error_code error;
    if (!std::filesystem::copy_file(file, staging.path() / file.filename(), error))
      throw io::io_error(file, "cannot copy into the output: " + error.message());
    if (durable) io::flush_to_disk(staging.path() / file.filename());
  }
  if (durable) io::flush_to_disk(staging.path());
}

/// Moves the output into place (replacing an old one with --force), then the report written
/// beside its final name; removes that report when the output cannot be moved.
inline void commit_output(io::staging_directory& staging, bool durable, const transfer_arguments& args,
                          const std::filesystem::path& partial_report) {
  try {
    staging.commit(args.force);
  } catch (...) {
    std::error_code ignored;
    if (!partial_report.empty()) std::filesystem::remove(partial_report, ignored);
    throw;
  }
  // The rename itself: best effort, since the output is already in place and complete.
  if (durable) io::try_flush_to_disk(io::parent_directory(io::without_trailing_separator(args.output)));
  if (!partial_report.empty() && std::rename(partial_report.c_str(), args.report.c_str()) != 0)
    io::failed(args.report, "cannot move the report into place");
}

}  // namespace clp_transfer
