// A scratch directory for tests that write files, shared by the I/O and program suites.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace clp_test {

/// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct temp_dir {
  std::filesystem::path path;

  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "clp-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }

  /// @param[in] name  entry inside the directory
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

}  // namespace clp_test
