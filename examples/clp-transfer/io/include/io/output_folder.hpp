// An output folder that appears under its final name only once it is complete: written into a
// staging folder beside it and renamed into place, so that a failed or interrupted run never
// leaves a half-written model, and an existing output is replaced (with force) only after the
// new one is whole. Also the checks to make before any work, and single files written the same
// way (through a temporary name and a rename).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

/// `output` without a trailing separator ("out/" names the folder "out").
inline std::filesystem::path without_trailing_separator(std::filesystem::path output) {
  return output.filename().empty() ? output.parent_path() : output;
}

/// The folder that will hold `output` (given without trailing separator): its parent, or "."
/// for a bare name.
inline std::filesystem::path parent_directory(const std::filesystem::path& output) {
  return output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
}

/// Throws clp::invalid_argument naming `output` when it exists and `force` is false, or when its
/// parent folder is missing. Call it before any work, so that a long run does not end in a
/// refusal.
/// @param[in] output  output folder to be created
/// @param[in] force   whether an existing output may be replaced
void check_output_available(const std::filesystem::path& output, bool force);

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
  explicit staging_directory(const std::filesystem::path& output) : target_(without_trailing_separator(output)) {
    std::string pattern = (parent_directory(target_) / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) failed(pattern, "cannot create a staging directory");
    path_ = pattern;
    // mkdtemp makes the folder private (0700); the committed output should get the permissions
    // a plain mkdir would give. umask can only be read by setting it.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(path_.c_str(), 0777 & ~mask);
  }

  staging_directory(const staging_directory&) = delete;
  staging_directory& operator=(const staging_directory&) = delete;
  ~staging_directory() {
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }

  /// The staging folder to write into.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Renames the staging folder to the output path. With `force`, an existing output is first
  /// renamed aside and removed only after the new one is in place, so a failure at any step
  /// leaves the old output where it was.
  /// @param[in] force  whether an existing output may be replaced
  void commit(bool force) {
    std::error_code ignored;
    if (!std::filesystem::exists(std::filesystem::symlink_status(target_, ignored))) {
      if (std::rename(path_.c_str(), target_.c_str()) != 0) failed(target_, "cannot move the new output into place");
      committed_ = true;
      return;
    }
    if (!force) throw clp::invalid_argument(about(target_), "already exists (use --force to replace it)");
    // The staging name is unique (mkdtemp), so the name derived from it is free as well.
    const std::filesystem::path aside = path_.string() + ".old";
    if (std::rename(target_.c_str(), aside.c_str()) != 0) failed(target_, "cannot move the old output aside");
    if (std::rename(path_.c_str(), target_.c_str()) != 0) {
      const std::string problem = std::string("cannot move the new output into place: ") + std::strerror(errno);
      const bool restored = std::rename(aside.c_str(), target_.c_str()) == 0;
      throw io_error(target_, problem + (restored ? "" : "; the old output is now at " + aside.string()));
    }
    committed_ = true;
    std::filesystem::remove_all(aside, ignored);  // a leftover would only cost disk space
  }

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  bool committed_ = false;
};

}  // namespace clp_transfer::io
