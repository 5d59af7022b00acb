// Where a command writes the model it makes: the output folder, the --report file beside it,
// and how they may replace what is there. What commit_output reads, and the checks that refuse
// a run before any work.
#pragma once

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "io/errors.hpp"
#include "io/output_folder.hpp"
#include "library_names.hpp"

namespace clp_transfer {

struct output_target {
  std::filesystem::path folder;  ///< the output model folder
  std::filesystem::path report;  ///< --report: the JSON report; empty for none
  bool force = false;            ///< --force: replace an existing output and report
  bool fsync = false;            ///< --fsync: flush the output to disk before it is moved into place

  /// Whether the output is flushed to disk before it is moved into place, so that it survives a
  /// power loss once committed: asked for with --fsync, and always when --force replaces an
  /// output (the old one is deleted only after the new one is on disk). Otherwise the kernel
  /// writes it back in its own time, as after cp; the rename still means no reader ever sees a
  /// half-written output. Asked before the output is moved into place.
  bool durable() const {
    std::error_code ignored;
    return fsync || std::filesystem::exists(folder, ignored);
  }

  /// One warning line per staging folder an earlier run on the output left beside it.
  void warn_of_staging_folders() const {
    for (const std::filesystem::path& left : io::staging_folders_of(folder))
      std::fprintf(stderr,
                   "clp-transfer: warning: %s: the folder %s beside it is an unfinished output of an earlier run "
                   "that was killed, or of a run still writing it; remove it once no run writes %s\n",
                   io::without_trailing_separator(folder).c_str(), left.c_str(),
                   io::without_trailing_separator(folder).c_str());
  }

  /// Refuses, before any work, what would otherwise end a long run in an error or replace what
  /// the user did not mean to: an output or report in the way (without --force), an existing
  /// output --force may not replace (a file, a folder without config.json), a report that is a
  /// folder or lies inside the output, a missing parent folder, an output that is one of `inputs`
  /// (the model folders the run reads) or a report inside one. Throws clp::invalid_argument
  /// naming the path.
  void check(const std::vector<std::filesystem::path>& inputs) const {
    io::check_output_available(folder, force);
    if (force) io::check_replaceable_folder(folder);
    if (!report.empty()) {
      if (io::is_within(report, folder))
        throw clp::invalid_argument(io::about(report), (io::is_within(folder, report) ? "is also the output"
                                                                                        : "is inside the output " +
                                                                                              folder.string()) +
                                                           ", which is written whole; write the report beside it");
      io::check_output_available(report, force);  // the same checks, for a file
      io::check_replaceable_file(report);
    }
    for (const std::filesystem::path& input : inputs) {
      std::error_code ignored;
      if (std::filesystem::equivalent(io::without_trailing_separator(folder), input, ignored))
        throw clp::invalid_argument(io::about(folder),
                                    "is the input model " + input.string() + "; refusing to replace it");
      if (!report.empty() && io::is_within(report, input))
        throw clp::invalid_argument(io::about(report),
                                    "is inside the input model " + input.string() + "; refusing to write into it");
    }
  }
};

}  // namespace clp_transfer
