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

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "io/tokenizer/wordpiece.hpp"
#include "verify/finding.hpp"
#include "verify/model_folder.hpp"
#include "verify/token_index.hpp"

namespace clp_transfer::verify {

namespace detail {

/// Collects a tokenizer.json's model.merges in one SAX pass, building nothing else: each merge
/// as "left right", whether the file writes it as that string or as the pair ["left", "right"].
class merges_collector final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<std::string> merges;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& value) override {
    if (in_merges_ && depth_ == merges_depth_ + 1) merges.push_back(value);
    if (in_merges_ && depth_ == merges_depth_ + 2) merges.back() += (pair_size_++ ? " " : "") + value;
    return true;
  }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    if (depth_ == 1) in_model_ = key == "model";
    merges_next_ = depth_ == 2 && in_model_ && key == "merges";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override { return false; }

 private:
  bool open(bool is_array) {
    ++depth_;
    if (merges_next_ && is_array) {
      in_merges_ = true;
      merges_depth_ = depth_ - 1;
    } else if (in_merges_ && depth_ == merges_depth_ + 2) {
      merges.emplace_back();
      pair_size_ = 0;
    }
    merges_next_ = false;
    return true;
  }
  bool close() {
    if (in_merges_ && depth_ == merges_depth_ + 1) in_merges_ = false;
    --depth_;
    return true;
  }

  std::size_t depth_ = 0, merges_depth_ = 0, pair_size_ = 0;
  bool in_model_ = false, merges_next_ = false, in_merges_ = false;
};

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
  merges_collector collector;
  nlohmann::json::sax_parse(io::read_text_file(tokenizer_json), &collector);
  const std::vector<std::string>& merges = collector.merges;
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
