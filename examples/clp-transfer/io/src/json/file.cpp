#include "io/json/file.hpp"

namespace clp_transfer::io {

std::size_t json_text_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) failed(file, "cannot open");
  // Sized up front when the size is known (tokenizer.json runs to 33 MB); the stream's own
  // growth copies it several times. A file that grew meanwhile is read to its end.
  std::error_code ignored;
  const std::uintmax_t size =
      std::filesystem::is_regular_file(file, ignored) ? std::filesystem::file_size(file, ignored) : 0;
  std::string text(size == static_cast<std::uintmax_t>(-1) ? 0 : static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in) {
    std::ostringstream rest;
    rest << in.rdbuf();
    text += std::move(rest).str();
  }
  return text;
}

void check_json_depth(const std::filesystem::path& file, std::string_view text) {
  if (json_text_depth(text) > max_json_depth)
    malformed(file, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
}

}  // namespace clp_transfer::io
