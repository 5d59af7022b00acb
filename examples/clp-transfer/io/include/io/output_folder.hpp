// An output folder that appears under its final name only once it is complete: written into a
// staging folder beside it and renamed into place, so that a failed or interrupted run never
// leaves a half-written model, and an existing output is replaced (with force) only after the
// new one is whole. Also the checks to make before any work, and single files written the same
// way (through a temporary name and a rename).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/system/interruption.hpp"
#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

/// `output` without a trailing separator ("out/" names the folder "out").
std::filesystem::path without_trailing_separator(std::filesystem::path output);

/// The folder that will hold `output` (given without trailing separator): its parent, or "."
/// for a bare name.
std::filesystem::path parent_directory(const std::filesystem::path& output);

/// Throws clp::invalid_argument naming `output` when it exists and `force` is false, or when its
/// parent folder is missing, is not a folder, or cannot be written into. Call it before any
/// work, so that a long run does not end in a refusal.
/// @param[in] output  output folder (or file) to be created
/// @param[in] force   whether an existing output may be replaced
void check_output_available(const std::filesystem::path& output, bool force);

/// Throws clp::invalid_argument naming `output` when it exists and --force may not replace it:
/// a file, or a folder that holds anything but holds no config.json (a folder this program could
/// not have written, such as a home folder given by mistake). Nothing else is checked.
void check_replaceable_folder(const std::filesystem::path& output);

/// Throws clp::invalid_argument naming `file` when it exists and is not a file (a folder).
void check_replaceable_file(const std::filesystem::path& file);

/// Whether `path` is `folder` or lies inside it, once both are made absolute and their links
/// resolved as far as they exist (neither need exist).
bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder);

/// The staging folders of earlier runs on `output` (`.NAME.tmp-XXXXXX` beside it): left by a run
/// that was killed before it could remove its own (SIGKILL, a power loss), or in use by a run
/// still writing `output`. Never an output: nothing reads them.
std::vector<std::filesystem::path> staging_folders_of(const std::filesystem::path& output);

/// Writes `text` to `path` through a temporary file in the same folder and a rename, so that a
/// reader never sees half a file; with `durable`, the file is flushed to disk before the rename.
void write_file_atomically(const std::filesystem::path& path, const std::string& text, bool durable = false);

/// A temporary folder beside an output path that becomes the output only by commit(). Being in
/// the same parent makes the final rename atomic. Destroyed without commit(), it removes itself
/// and everything in it.
class staging_directory {
 public:
  /// Creates an empty `.NAME.tmp-XXXXXX` folder beside `output`.
  /// @param[in] output  final output folder (need not exist; its parent must)
  explicit staging_directory(const std::filesystem::path& output);

  staging_directory(const staging_directory&) = delete;
  staging_directory& operator=(const staging_directory&) = delete;
  ~staging_directory();

  /// The staging folder to write into.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Renames the staging folder to the output path. With `force`, an existing output is first
  /// renamed aside and removed only after the new one is in place, so a failure at any step
  /// leaves the old output where it was.
  /// @param[in] force  whether an existing output may be replaced
  void commit(bool force);

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  removed_if_interrupted interrupted_;  // the folder removed when a signal stops the run
  bool committed_ = false;
};

}  // namespace clp_transfer::io
