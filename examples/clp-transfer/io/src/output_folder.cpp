#include "io/output_folder.hpp"

namespace clp_transfer::io {

void check_output_available(const std::filesystem::path& output, bool force) {
  const std::filesystem::path target = without_trailing_separator(output);
  std::error_code ignored;
  if (!force && std::filesystem::exists(std::filesystem::symlink_status(target, ignored)))
    throw clp::invalid_argument(about(target), "already exists (use --force to replace it)");
  if (!std::filesystem::is_directory(parent_directory(target), ignored))
    throw clp::invalid_argument(about(target),
                                "parent directory " + parent_directory(target).string() + " does not exist");
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text, bool durable) {
  const std::filesystem::path temporary = path.string() + ".tmp";
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

}  // namespace clp_transfer::io
