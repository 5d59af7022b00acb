// Whether the tokenizer files of a folder agree with each other. A folder often holds one
// tokenizer twice: the fast one (tokenizer.json) and the slow one it was converted from or to
// (a SentencePiece model, vocab.json with merges.txt, vocab.txt). transformers loads whichever
// the caller's class asks for, so two that disagree give one text two encodings. Each other file
// is compared with the file the vocabulary was read from (io::find_vocabulary_file's choice):
// - a SentencePiece model: io::check_sentencepiece_agrees (every piece there, at its id or at
//   fairseq's offset of one); a tiktoken file is not a SentencePiece model and is left alone;
// - vocab.json, vocab.txt: every token at the same id;
// - merges.txt, beside a tokenizer.json: the same merges, in the same order, as its model.merges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>


#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "io/tokenizer/wordpiece.hpp"
#include "verify/finding.hpp"
#include "verify/model_folder.hpp"
#include "verify/token_index.hpp"

namespace clp_transfer::verify {

namespace detail {

/// The merges of merges.txt text: its lines, less a first line "#version..." and empty lines.
inline std::vector<std::string> merges_txt_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && !(lines.empty() && at == 0 && line.rfind("#version", 0) == 0)) lines.emplace_back(line);
    at = end + 1;
  }
  return lines;
}

/// Every token of `other` (read from `other_file`) at the same id in `tokens`.
inline void compare_vocabularies(const std::filesystem::path& other_file, const io::token_vocabulary& other,
                                 const token_index& tokens, std::vector<finding>& findings) {
  std::size_t differing = 0;
  std::string first;
  std::int64_t first_id = -1;
  for (const auto& [token, id] : other.ids) {
    const auto there = tokens.vocabulary().ids.find(token);
    if (there != tokens.vocabulary().ids.end() && there->second == id) continue;
    ++differing;
    if (first_id < 0 || id < first_id) {
      first_id = id;
      first = io::quoted_name(token) + " is id " + std::to_string(id) + " here and " +
              (there == tokens.vocabulary().ids.end() ? "not a token there"
                                                      : "id " + std::to_string(there->second) + " there");
    }
  }
  if (differing == 0) return;
  findings.push_back({finding_kind::tokenizer_files, other_file,
                      "disagrees with " + tokens.file_name() + " on " + std::to_string(differing) + " of " +
                          std::to_string(other.ids.size()) + " tokens (the first: " + first +
                          "); the slow and the fast tokenizer encode text differently"});
}

/// merges.txt against tokenizer.json's model.merges.
inline void compare_merges(const std::filesystem::path& merges_file, const std::filesystem::path& tokenizer_json,
                           std::vector<finding>& findings) {
  const std::vector<std::string> lines = merges_txt_lines(io::read_text_file(merges_file));
  // The file layer's reading of model.merges, as "left right" lines.
  std::vector<std::string> merges;
  for (const auto& [left, right] :
       io::read_tokenizer_json(tokenizer_json, io::tokenizer_json_options::with_merges()).merges)
    merges.push_back(left + " " + right);
  std::size_t i = 0;
  while (i < lines.size() && i < merges.size() && lines[i] == merges[i]) ++i;
  if (i == lines.size() && i == merges.size()) return;
  std::string where = "merge " + std::to_string(i + 1) + " is ";
  where += i < lines.size() ? io::quoted_name(lines[i]) : "missing (the file ends)";
  where += " here and ";
  where += i < merges.size() ? io::quoted_name(merges[i]) : "missing";
  findings.push_back({finding_kind::tokenizer_files, merges_file,
                      "disagrees with tokenizer.json's model.merges (" + std::to_string(lines.size()) +
                          " merges here, " + std::to_string(merges.size()) + " there; " + where +
                          " there); the slow and the fast tokenizer split text differently"});
}

}  // namespace detail

/// The tokenizer files of `folder` beside the one its vocabulary came from, each against it
/// (see the top of this file). A file that cannot be read is a finding of its own.
/// @param[in]  folder    model folder
/// @param[in]  tokens    the vocabulary read, and its file
/// @param[out] findings  one per file that disagrees or cannot be read
inline void check_tokenizer_files(const std::filesystem::path& folder, const token_index& tokens,
                                  std::vector<finding>& findings) {
  const std::filesystem::path& reference = tokens.file();
  for (const std::filesystem::path& model : io::sentencepiece_models_beside(folder, reference)) {
    if (io::is_tiktoken_file(model)) continue;
    detail::read_or_note(model, findings, [&] {
      const io::sentencepiece_model read = io::read_sentencepiece_model(model);
      try {
        io::check_sentencepiece_agrees(model, read, reference, tokens.vocabulary());
      } catch (const io::malformed_file& disagreement) {
        finding found = finding_of_error(disagreement, model, finding_kind::tokenizer_files);
        found.message += "; the slow and the fast tokenizer encode text differently";
        findings.push_back(std::move(found));
      }
    });
  }
  std::error_code ignored;
  const auto beside = [&](const char* name) {
    return folder / name != reference && std::filesystem::exists(folder / name, ignored);
  };
  if (beside("vocab.json"))
    detail::read_or_note(folder / "vocab.json", findings, [&] {
      detail::compare_vocabularies(folder / "vocab.json", io::read_vocab_json(folder / "vocab.json"), tokens, findings);
    });
  if (beside("vocab.txt"))
    detail::read_or_note(folder / "vocab.txt", findings, [&] {
      detail::compare_vocabularies(folder / "vocab.txt", io::read_wordpiece_vocab(folder / "vocab.txt"), tokens,
                                   findings);
    });
  if (reference.filename() == "tokenizer.json" && std::filesystem::exists(folder / "merges.txt", ignored))
    detail::read_or_note(folder / "merges.txt", findings,
                         [&] { detail::compare_merges(folder / "merges.txt", reference, findings); });
}

}  // namespace clp_transfer::verify
