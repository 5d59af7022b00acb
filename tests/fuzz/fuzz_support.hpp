// What every fuzz target of the clp-transfer input parsers shares: a private scratch folder
// for the files the parsers read (they take paths, so each input is written to a file first),
// and the rule that decides what is a bug. A parser may accept an input or refuse it with an
// error of the file layer (io::file_error: io_error, malformed_file, truncated_file) whose file
// is in the scratch folder and whose message is one line naming it; any other exception, an error without the file, a
// broken invariant of an accepted input, or anything a sanitizer reports, is a finding.
//
// The same sources build two ways (fuzz_registry.hpp): with clang's -fsanitize=fuzzer
// (libFuzzer supplies main), one binary per target, and all together as one replay driver
// (replay_main.cpp) that the test suite runs over the seed corpus and every past finding.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <clp/error.hpp>

#include "fuzz_registry.hpp"
#include "io/errors.hpp"
#include "io/safetensors.hpp"
#include "support/safetensors_bytes.hpp"

namespace clp_fuzz {

namespace fs = std::filesystem;

/// Reports a finding and aborts, so that libFuzzer saves the input and the replay test fails.
/// @param[in] what    the broken rule
/// @param[in] detail  e.g. the exception's message
[[noreturn]] inline void finding(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz finding: %.*s%s%.*s\n", static_cast<int>(what.size()), what.data(),
               detail.empty() ? "" : ": ", static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/// A folder under the temp dir for this process's files, made on first use and removed at exit.
class scratch_folder {
 public:
  static const fs::path& path() {
    static const scratch_folder folder;
    return folder.path_;
  }

 private:
  // In memory (/dev/shm) where there is one: on ext4, rewriting a file through O_TRUNC makes
  // close() start its writeback (auto_da_alloc), which held libFuzzer to a few hundred runs a
  // second on disk.
  scratch_folder() {
    std::error_code ignored;
    const fs::path base = ::access("/dev/shm", W_OK) == 0 && fs::is_directory("/dev/shm", ignored)
                              ? fs::path("/dev/shm")
                              : fs::temp_directory_path();
    std::string pattern = (base / "clp-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) finding("mkdtemp failed");
    path_ = pattern;
  }
  ~scratch_folder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path path_;
};

/// A fresh empty folder `name` inside the scratch folder (its old contents removed).
/// @param[in] name  folder name
inline fs::path fresh_folder(const std::string& name) {
  const fs::path folder = scratch_folder::path() / name;
  std::error_code ignored;
  fs::remove_all(folder, ignored);
  fs::create_directories(folder);
  return folder;
}

/// Writes `size` bytes at `data` to `file`, replacing it.
inline void write_bytes(const fs::path& file, const void* data, std::size_t size) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) finding("cannot create", file.string());
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = ::write(fd, bytes, size);
    if (put <= 0) finding("cannot write", file.string());
    bytes += put;
    size -= static_cast<std::size_t>(put);
  }
  ::close(fd);
}

inline void write_bytes(const fs::path& file, std::string_view text) { write_bytes(file, text.data(), text.size()); }

/// The bytes of a safetensors file for an input. An input that starts with '{' is header
/// text, then a NUL byte, then the data section (no NUL: all of it is header): the length
/// prefix is computed, so that mutations of the JSON are not all wasted on a length that no
/// longer matches. Any other input is the file itself, length prefix included, so the prefix
/// is fuzzed too.
/// @param[in] data  fuzzer input
/// @param[in] size  its length
inline std::string safetensors_from_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.empty() || input.front() != '{') return std::string(input);
  const std::size_t nul = input.find('\0');
  const std::string_view header = input.substr(0, nul);
  std::string file = clp_test::length_prefix(header.size());
  file += header;
  if (nul != std::string_view::npos) file += input.substr(nul + 1);
  return file;
}

/// Checks that `message` is one line naming a file or folder in `folder`.
inline void check_message(const fs::path& folder, std::string_view message) {
  if (message.rfind(folder.string(), 0) != 0) finding("message does not name the file", message);
  if (message.find_first_of("\n\r") != std::string_view::npos) finding("message is not one line", message);
}

/// Runs `parse`; an io::file_error naming a file in `folder` is a clean refusal, any other
/// exception a finding. With `program_errors`, a clp::error naming the file is clean too (the
/// program's own checks: a NaN in an embedding, say).
template <class Parse>
void expect_clean(const fs::path& folder, Parse&& parse, bool program_errors = false) {
  try {
    parse();
  } catch (const clp_transfer::io::file_error& e) {
    if (e.file().string().rfind(folder.string(), 0) != 0) finding("the error does not name the file", e.what());
    check_message(folder, e.what());
  } catch (const clp::error& e) {
    if (!program_errors) finding("a clp::error, not an error of the file layer", e.what());
    if (e.facts().file.rfind(folder.string(), 0) != 0) finding("the error's facts do not name the file", e.what());
    check_message(folder, e.what());
  } catch (const std::exception& e) {
    finding("an exception that is neither an io::file_error nor a clp::error", e.what());
  }
}

/// The program's output path over an accepted file: every tensor copied by the safetensors
/// writer (copy_range) into `folder`/copy.safetensors, which the safetensors reader must accept
/// with the same tensors, metadata and bytes.
inline void check_copy(const fs::path& folder, const clp_transfer::io::weight_file& file) {
  using clp_transfer::io::tensor_entry;
  std::vector<clp_transfer::io::tensor_spec> specs;
  for (const tensor_entry& tensor : file.tensors())
    specs.push_back({tensor.name, tensor.dtype, tensor.shape, tensor.byte_size});
  const fs::path copy = folder / "copy.safetensors";
  {
    clp_transfer::io::safetensors_writer writer(copy, specs, file.metadata(), /*durable=*/false);
    for (const tensor_entry& tensor : file.tensors())
      clp_transfer::io::copy_range(file.descriptor(), static_cast<off_t>(tensor.offset), tensor.byte_size, writer);
    writer.finish();
  }
  const clp_transfer::io::safetensors_file reread(copy);
  if (reread.tensors().size() != file.tensors().size()) finding("the copy has another tensor count");
  if (reread.metadata() != file.metadata()) finding("the copy has other metadata");
  for (const tensor_entry& tensor : file.tensors()) {
    const tensor_entry* again = reread.find(tensor.name);
    if (!again || again->dtype != tensor.dtype || again->shape != tensor.shape)
      finding("the copy differs", tensor.name);
    if (reread.read(*again) != file.read(tensor)) finding("the copy's bytes differ", tensor.name);
  }
}

}  // namespace clp_fuzz
