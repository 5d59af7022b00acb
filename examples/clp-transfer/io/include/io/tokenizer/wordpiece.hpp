// A WordPiece vocab.txt (BERT and its kin): one token a line, its id the line's number from 0,
// read as transformers' load_vocab reads it: lines end at "\n", "\r\n" or "\r" (Python's
// universal newlines), a last line without an end counts, nothing else is stripped (a line of
// spaces is a token, an empty line the empty token). A token on two lines, or a line that is
// not UTF-8, is refused as a malformed_file naming the file and the lines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/system/utf8.hpp"
#include "io/tokenizer/vocabulary.hpp"

namespace clp_transfer::io {

/// Largest vocab.txt read (BERT's run to a few MB).
inline constexpr std::uint64_t max_vocab_txt_bytes = 1ull << 30;

/// The vocabulary of vocab.txt text.
/// @param[in] file  the file the text was read from, for messages
/// @param[in] text  its contents
inline token_vocabulary parse_wordpiece_vocab(const std::filesystem::path& file, std::string_view text) {
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

/// Reads a WordPiece vocab.txt; throws io_error when it cannot be read, malformed_file
/// for a token on two lines, a line that is not UTF-8, or an empty file.
/// @param[in] file  vocab.txt
inline token_vocabulary read_wordpiece_vocab(const std::filesystem::path& file) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (!error && size > max_vocab_txt_bytes) malformed(file, std::to_string(size) + " bytes, too large for a vocab.txt");
  return parse_wordpiece_vocab(file, read_text_file(file));
}

}  // namespace clp_transfer::io
