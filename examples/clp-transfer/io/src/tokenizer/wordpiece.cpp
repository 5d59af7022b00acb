#include "io/tokenizer/wordpiece.hpp"

namespace clp_transfer::io {

token_vocabulary parse_wordpiece_vocab(const std::filesystem::path& file, std::string_view text) {
  detail::vocabulary_builder builder(file);
  std::unordered_map<std::string_view, std::int64_t> lines;  // token -> its line (from 0)
  std::int64_t id = 0;
  for (std::size_t at = 0; at < text.size(); ++id) {
    const std::size_t end = std::min(text.find_first_of("\r\n", at), text.size());
    const std::string_view token = text.substr(at, end - at);
    at = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    if (!valid_utf8(token)) malformed(file, "line " + std::to_string(id + 1) + " is not UTF-8");
    const auto [first, fresh] = lines.emplace(token, id);
    if (!fresh)
      malformed(file, "lines " + std::to_string(first->second + 1) + " and " + std::to_string(id + 1) +
                          " both hold the token " + quoted_name(token) + " (each line is one id)");
    builder.add(std::string(token), nlohmann::json(id), false);
  }
  return builder.finish();
}

token_vocabulary read_wordpiece_vocab(const std::filesystem::path& file) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (!error && size > max_vocab_txt_bytes) malformed(file, std::to_string(size) + " bytes, too large for a vocab.txt");
  return parse_wordpiece_vocab(file, read_text_file(file));
}

}  // namespace clp_transfer::io
