#include "io/errors.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

namespace clp_transfer::io {

file_error::file_error(std::filesystem::path file, std::string problem, std::string tensor, std::int64_t offset)
    : std::runtime_error(clp::error::message(about(file, tensor), problem)),
      file_(std::move(file)),
      tensor_(std::move(tensor)),
      offset_(offset),
      problem_(std::move(problem)) {}

clp::error_facts file_error::facts() const { return about(file_, tensor_); }

truncated_file::truncated_file(std::filesystem::path file, std::uint64_t expected_size, std::uint64_t actual_size,
                               const std::string& needs)
    : malformed_file(std::move(file), "is truncated: it has " + std::to_string(actual_size) + " bytes, but " + needs +
                                          " runs to byte " + std::to_string(expected_size) +
                                          " (an interrupted download?); download it again"),
      expected_size_(expected_size),
      actual_size_(actual_size) {}

clp::error_facts about(const std::filesystem::path& file, std::string tensor) {
  clp::error_facts facts;
  facts.file = file.string();
  facts.tensor = std::move(tensor);
  return facts;
}

void malformed(const std::filesystem::path& file, std::string problem, std::string tensor) {
  throw malformed_file(file, std::move(problem), std::move(tensor));
}

void failed(const std::filesystem::path& file, const std::string& attempt) {
  const int code = errno;  // before anything below can change it
  throw io_error(file, attempt + ": " + std::strerror(code));
}

void missing_path(const std::filesystem::path& path) { throw io_error(path, "no such file or folder"); }

void missing_folder(const std::filesystem::path& path) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) missing_path(path);
  throw io_error(path, "not a folder");
}

std::string json_reason(std::string_view message) {
  // "[json.exception.parse_error.101] parse error at line 1, column 7: syntax error while ..."
  if (message.rfind("[json.exception.", 0) == 0) {
    const std::size_t code_end = message.find("] ");
    if (code_end != std::string_view::npos) message.remove_prefix(code_end + 2);
  }
  constexpr std::string_view at_line = "parse error at line ";
  constexpr std::string_view column = ", column ";
  if (message.rfind(at_line, 0) == 0) {
    const std::size_t column_at = message.find(column);
    const std::size_t colon = message.find(": ", column_at);
    if (column_at != std::string_view::npos && colon != std::string_view::npos) {
      const std::string_view line = message.substr(at_line.size(), column_at - at_line.size());
      const std::string_view col = message.substr(column_at + column.size(), colon - column_at - column.size());
      return "line " + std::string(line) + " column " + std::string(col) + ": " +
             std::string(message.substr(colon + 2));
    }
  }
  if (message.rfind("parse error: ", 0) == 0) message.remove_prefix(13);
  return std::string(message);
}

void malformed_json(const std::filesystem::path& file, const std::string& what,
                    const nlohmann::json::exception& cause) {
  std::string reason = json_reason(cause.what());
  if (reason.rfind("line ", 0) == 0) {
    const std::size_t colon = reason.find(": ");
    malformed(file, reason.substr(0, colon + 2) + what + ": " + reason.substr(colon + 2));
  }
  malformed(file, what + ": " + reason);
}

std::string quoted_name(std::string_view text) {
  constexpr std::size_t longest = 80, kept = 60;  // bytes of a name shown whole; of a longer one's start
  const auto quote = [](std::string_view part) {
    return nlohmann::json(std::string(part)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (text.size() <= longest) return quote(text);
  std::size_t cut = kept;  // not inside a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string shown = quote(text.substr(0, cut));
  shown.insert(shown.size() - 1, "...");
  return shown + " (" + std::to_string(text.size()) + " bytes)";
}

std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace clp_transfer::io
