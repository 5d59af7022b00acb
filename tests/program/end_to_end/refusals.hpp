// The refusals of `clp-transfer transfer` as a user sees them, checked the same way by every
// end-to-end test of a bad input; the refusals and warnings of every command by the ids
// docs/troubleshooting.md lists them under (refused, warned); and the ways those tests break a
// model folder's safetensors files (support/safetensors_bytes.hpp builds the bytes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "io/safetensors.hpp"
#include "model_fixtures.hpp"
#include "support/safetensors_bytes.hpp"

namespace program_test {

/// Runs the transfer (with `extra` options) quietly, verbosely, and with --force over an existing
/// output, and checks that each refuses with exit status 1 and one error line naming `culprit`
/// (with `key_words` in the quiet run's line), writes nothing beside the output path, and leaves
/// the existing output as it was.
inline void expect_refusal(const workspace& ws, const fs::path& culprit,
                           std::initializer_list<std::string_view> key_words, std::vector<std::string> extra = {}) {
  INFO("culprit ", culprit.string());
  std::vector<std::string> quiet = extra;
  quiet.push_back("--quiet");
  check_error_line(run_program(ws.transfer(quiet)), culprit.string(), key_words);
  CHECK(folder_entries(ws.out_parent).empty());
  check_error_line_after_progress(run_program(ws.transfer(extra)), culprit.string());
  CHECK(folder_entries(ws.out_parent).empty());

  fs::create_directories(ws.output);
  write_file(ws.output / "config.json", "{}");  // a model folder, which --force may replace
  write_file(ws.output / "keep.txt", "old model");
  quiet.push_back("--force");
  check_error_line(run_program(ws.transfer(quiet)), culprit.string(), key_words);
  CHECK(folder_entries(ws.output) == std::vector<std::string>{"config.json", "keep.txt"});
  CHECK(read_file(ws.output / "keep.txt") == "old model");
  CHECK(folder_entries(ws.out_parent) == std::vector<std::string>{"model"});
  fs::remove_all(ws.output);
}

/// What every message of the program must be: no C++ name ("clp::synthesize_rows",
/// "std::bad_alloc"), no code of the JSON library ("[json.exception.parse_error.101]").
inline void check_readable(const std::string& line) {
  INFO("line: [", line, "]");
  CHECK(line.find("::") == std::string::npos);
  CHECK(line.find("[json.exception") == std::string::npos);
  CHECK(line.size() < 600);
}

/// Checks a refusal that docs/troubleshooting.md lists under `id` (tests/docs checks that the
/// page lists every id these tests pass, and no other): exit status `status`, nothing on
/// stdout, and stderr the one line "clp-transfer: error: ..." that names `culprit` (the file,
/// folder or option at fault) and reads as check_readable asks. The run must be quiet (no
/// progress lines).
inline void refused(const std::string& id, const program_result& result, const std::string& culprit, int status = 1) {
  INFO("refusal ", id);
  check_error_line(result, culprit, {}, status);
  check_readable(result.err);
}

/// Checks a warning that docs/troubleshooting.md lists under `id`: the run succeeded, and one
/// line of stderr is "clp-transfer: warning: ..." holding `culprit` and `key_word`; every
/// warning line reads as check_readable asks.
inline void warned(const std::string& id, const program_result& result, const std::string& culprit,
                   const std::string& key_word) {
  INFO("warning ", id, ", stderr: [", result.err, "]");
  CHECK(result.exit_status == 0);
  bool found = false;
  for (const std::string& line : lines_of(result.err)) {
    if (line.rfind("clp-transfer: warning: ", 0) != 0) continue;
    check_readable(line);
    found = found || (line.find(culprit) != std::string::npos && line.find(key_word) != std::string::npos);
  }
  CHECK(found);
}

/// The header text and data section of safetensors file `file`.
inline clp_test::safetensors_parts split(const fs::path& file) { return clp_test::split_safetensors(read_file(file)); }

/// Writes a safetensors file from header text and data, with the length prefix of the text.
inline void join(const fs::path& file, const std::string& header, const std::string& data) {
  write_file(file, clp_test::safetensors_bytes(header, data));
}

/// Rewrites the JSON header of safetensors `file` with `edit`, keeping the data section.
template <class Edit>
void edit_header(const fs::path& file, Edit edit) {
  const clp_test::safetensors_parts parts = split(file);
  auto header = nlohmann::ordered_json::parse(parts.header);
  edit(header);
  join(file, header.dump(), parts.data);
}

/// Writes `value` into element (row, col) of 2-D tensor `name` of `file` (F32 or BF16).
inline void poke(const fs::path& file, const std::string& name, std::int64_t row, std::int64_t col, float value) {
  std::uint64_t offset = 0;
  std::string dtype;
  std::int64_t cols = 0;
  {
    const clp_transfer::io::safetensors_file opened(file);
    const clp_transfer::io::tensor_entry& tensor = opened.at(name);
    offset = tensor.offset;
    dtype = clp_transfer::io::dtype_name(tensor.dtype);
    cols = tensor.shape[1];
  }
  std::string bytes = read_file(file);
  const std::size_t element = dtype == "BF16" ? 2 : 4;
  const std::size_t at = std::size_t(offset) + std::size_t(row * cols + col) * element;
  if (dtype == "BF16") {
    const std::uint16_t bits = bf16_bits(value);
    std::memcpy(&bytes[at], &bits, 2);
  } else {
    std::memcpy(&bytes[at], &value, 4);
  }
  write_file(file, bytes);
}

/// `text` with the first `from` replaced by `to`; fails the test when there is none.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// The id of `token` in `model`'s vocabulary.
inline std::int64_t id_of(const model_fixture& model, const std::string& token) {
  return std::find(model.tokens.begin(), model.tokens.end(), token) - model.tokens.begin();
}

}  // namespace program_test
