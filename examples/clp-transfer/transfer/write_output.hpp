// The output model, completed in a staging folder beside its final name and moved into place
// only once complete (and the report written beside it).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "io/model_weights.hpp"
#include "io/output_folder.hpp"
#include "io/system/interruption.hpp"
#include "io/system/posix_file.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "transfer/output_target.hpp"
#include "transfer/output_vocabulary.hpp"
#include "transfer/weights_output.hpp"

namespace clp_transfer {

/// Completes the output model in `staging`: the weights (whose new matrices were written as the
/// synthesis made them; weights_output.hpp), the index of a sharded model with its new total
/// size (and its shards' safetensors names, when the source's were torch checkpoints), and the
/// files of `vocabulary`: config.json, generation_config.json, the tokenizer files.
/// @param[in] durable  flush each file to disk (output_target::durable)
/// @param[in] source   the source's weights, whose shards and index the output follows
inline void write_output(const io::staging_directory& staging, bool durable, const io::model_weights& source,
                         weights_output& new_weights, const output_vocabulary& vocabulary,
                         progress_reporter& progress) {
  const std::filesystem::path& folder = staging.path();
  const std::uint64_t new_total_size = new_weights.finish(progress);
  if (!source.index_path().empty()) {
    nlohmann::ordered_json index = source.output_index();
    if (index.contains("metadata") && index["metadata"].is_object()) index["metadata"]["total_size"] = new_total_size;
    io::write_file_atomically(folder / source.output_index_name(), index.dump(2) + "\n", durable);
  }
  io::write_file_atomically(folder / "config.json", vocabulary.config.dump(2) + "\n", durable);
  if (vocabulary.generation_config)
    io::write_file_atomically(folder / "generation_config.json", vocabulary.generation_config->dump(2) + "\n", durable);
  for (const std::filesystem::path& file : vocabulary.copied_files) {
    std::error_code error;
    if (!std::filesystem::copy_file(file, folder / file.filename(), error))
      throw io::io_error(file, "cannot copy into the output: " + error.message());
    if (durable) io::flush_to_disk(folder / file.filename());
  }
  for (const file_text& file : vocabulary.written_files)
    io::write_file_atomically(folder / file.name, file.text, durable);
  if (durable) io::flush_to_disk(folder);
}

/// Moves the output into place (replacing an old one when target.force), then the report written
/// beside its final name; removes that report when the output cannot be moved.
/// @param[in] durable         as given to write_output
/// @param[in] partial_report  where the report was written (write_partial_report); empty for none
/// Nothing of it happens once a signal has stopped the run, and a signal's removal waits for it
/// (io/system/interruption.hpp): the output and its report are in place, or neither is.
inline void commit_output(io::staging_directory& staging, bool durable, const output_target& target,
                          const std::filesystem::path& partial_report) {
  io::interruption_test_point("commit");
  io::commit_unless_interrupted([&] {
    try {
      staging.commit(target.force);
    } catch (...) {
      std::error_code ignored;
      if (!partial_report.empty()) std::filesystem::remove(partial_report, ignored);
      io::forget_on_interruption(partial_report);
      throw;
    }
    // The rename itself: best effort, since the output is already in place and complete.
    if (durable) io::try_flush_to_disk(io::parent_directory(io::without_trailing_separator(target.folder)));
    if (!partial_report.empty() && std::rename(partial_report.c_str(), target.report.c_str()) != 0) {
      const int code = errno;
      std::error_code ignored;
      std::filesystem::remove(partial_report, ignored);
      io::forget_on_interruption(partial_report);
      errno = code;
      io::failed(target.report, "cannot move the report into place");
    }
    if (!partial_report.empty()) io::forget_on_interruption(partial_report);
  });
}

}  // namespace clp_transfer
