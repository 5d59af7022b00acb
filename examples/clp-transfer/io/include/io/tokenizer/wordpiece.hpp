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
token_vocabulary parse_wordpiece_vocab(const std::filesystem::path& file, std::string_view text);

/// Reads a WordPiece vocab.txt; throws io_error when it cannot be read, malformed_file
/// for a token on two lines, a line that is not UTF-8, or an empty file.
/// @param[in] file  vocab.txt
token_vocabulary read_wordpiece_vocab(const std::filesystem::path& file);

}  // namespace clp_transfer::io
