#include "io/output_folder.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

namespace clp_transfer::io {

std::filesystem::path without_trailing_separator(std::filesystem::path output) {
  return output.filename().empty() ? output.parent_path() : output;
}

std::filesystem::path parent_directory(const std::filesystem::path& output) {
  return output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
}

void check_output_available(const std::filesystem::path& output, bool force) {
  const std::filesystem::path target = without_trailing_separator(output);
  std::error_code ignored;
  if (!force && std::filesystem::exists(std::filesystem::symlink_status(target, ignored)))
    throw clp::invalid_argument(about(target), "already exists (use --force to replace it)");
  const std::filesystem::path parent = parent_directory(target);
  if (!std::filesystem::is_directory(parent, ignored))
    throw clp::invalid_argument(about(target), "parent directory " + parent.string() +
                                                   (std::filesystem::exists(parent, ignored) ? " is not a folder"
                                                                                            : " does not exist"));
  // The staging folder and the rename need write and search permission there (root has them).
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw clp::invalid_argument(about(target),
                                "cannot write into its parent directory " + parent.string() + ": " + std::strerror(errno));
}

void check_replaceable_folder(const std::filesystem::path& output) {
  const std::filesystem::path target = without_trailing_separator(output);
  std::error_code ignored;
  const std::filesystem::file_status status = std::filesystem::symlink_status(target, ignored);
  if (!std::filesystem::exists(status)) return;
  if (!std::filesystem::is_directory(std::filesystem::status(target, ignored)))
    throw clp::invalid_argument(about(target), "is a file, not a model folder; --force replaces only a model folder");
  if (std::filesystem::is_empty(target, ignored) || std::filesystem::exists(target / "config.json", ignored)) return;
  throw clp::invalid_argument(about(target), "holds no config.json: not a model folder, so --force does not replace it "
                                             "(remove it yourself if it should go)");
}

void check_replaceable_file(const std::filesystem::path& file) {
  std::error_code ignored;
  if (std::filesystem::is_directory(file, ignored))
    throw clp::invalid_argument(about(without_trailing_separator(file)), "is a folder; --report names a file");
}

bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder) {
  std::error_code ignored;
  const std::filesystem::path inner = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ignored), ignored);
  const std::filesystem::path outer =
      without_trailing_separator(std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ignored), ignored));
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

std::vector<std::filesystem::path> staging_folders_of(const std::filesystem::path& output) {
  const std::filesystem::path target = without_trailing_separator(output);
  const std::string prefix = "." + target.filename().string() + ".tmp-";
  std::vector<std::filesystem::path> found;
  std::error_code error;
  for (std::filesystem::directory_iterator it(parent_directory(target), error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    // mkdtemp's six characters; ".old" is the name an old output is moved aside to by --force.
    if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0 &&
        it->is_directory(error))
      found.push_back(it->path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text, bool durable) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  const removed_if_interrupted interrupted(temporary);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      const int code = errno;
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      errno = code;
      failed(path, "cannot write");
    }
  }
  if (durable) flush_to_disk(temporary);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) failed(path, "cannot move into place");
}

staging_directory::staging_directory(const std::filesystem::path& output)
    : target_(without_trailing_separator(output)) {
  std::string pattern = (parent_directory(target_) / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) failed(pattern, "cannot create a staging directory");
  path_ = pattern;
  interrupted_.reset(path_);
  // mkdtemp makes the folder private (0700); the committed output should get the permissions
  // a plain mkdir would give. umask can only be read by setting it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(path_.c_str(), 0777 & ~mask);
}

staging_directory::~staging_directory() {
  if (!committed_) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
}

void staging_directory::commit(bool force) {
  std::error_code ignored;
  if (!std::filesystem::exists(std::filesystem::symlink_status(target_, ignored))) {
    if (std::rename(path_.c_str(), target_.c_str()) != 0) failed(target_, "cannot move the new output into place");
    committed_ = true;
    interrupted_.release();
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
  interrupted_.release();
  std::filesystem::remove_all(aside, ignored);  // a leftover would only cost disk space
}

}  // namespace clp_transfer::io
