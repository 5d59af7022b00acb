// What `clp-transfer verify` reports: a finding is one thing wrong with a model folder, as a
// value (its kind, the file at fault, what is wrong and what it breaks), so that the command
// prints it and another command can act on the same checks of a folder it writes.
#pragma once

#include <clp/error.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"

namespace clp_transfer::verify {

/// What a finding is about.
enum class finding_kind {
  unreadable,       ///< a file the model needs is missing, cannot be read, or is refused by its reader
  no_embedding,     ///< no tensor is the input embedding: the vocabulary checks could not run
  vocab_size,       ///< config.json's vocab_size and a vocabulary-sized tensor's rows differ
  token_id,         ///< a token id of the tokenizer past the rows of the embedding or the head
  tie_flag,         ///< tie_word_embeddings disagrees with the tensors
  special_id,       ///< a special-token id or name that no row or no token stands behind
  tokenizer_files,  ///< two tokenizer files of the folder give a token different ids
  non_finite,       ///< NaN or infinite values in a vocabulary-sized tensor
  zero_row,         ///< a token's row of a vocabulary matrix is all zero
};

/// The kind as the JSON report writes it: "unreadable", "no-embedding", "vocab-size",
/// "token-id", "tie-flag", "special-id", "tokenizer-files", "non-finite", "zero-row".
inline std::string_view kind_name(finding_kind kind) {
  switch (kind) {
    case finding_kind::unreadable:
      return "unreadable";
    case finding_kind::no_embedding:
      return "no-embedding";
    case finding_kind::vocab_size:
      return "vocab-size";
    case finding_kind::token_id:
      return "token-id";
    case finding_kind::tie_flag:
      return "tie-flag";
    case finding_kind::special_id:
      return "special-id";
    case finding_kind::tokenizer_files:
      return "tokenizer-files";
    case finding_kind::non_finite:
      return "non-finite";
    case finding_kind::zero_row:
      break;
  }
  return "zero-row";
}

/// What to do about a finding of kind `kind`, in one line (docs/troubleshooting.md lists the
/// same, with what each breaks).
inline std::string_view what_to_do(finding_kind kind) {
  switch (kind) {
    case finding_kind::unreadable:
      return "download the file again (a copy cut short or damaged), or make it readable";
    case finding_kind::no_embedding:
      return "name the input embedding with --embedding-tensor";
    case finding_kind::vocab_size:
      return "make config.json's vocab_size the rows of the per-token tensors (a tool that grew the tokenizer "
             "without the matrices, or the other way round, left them apart)";
    case finding_kind::token_id:
      return "use the tokenizer the weights were trained with, or grow the matrices with the tokenizer "
             "(clp-transfer extend does both)";
    case finding_kind::tie_flag:
      return "set tie_word_embeddings to what the tensors are: true only where the head is the embedding";
    case finding_kind::special_id:
      return "point the id at the tokenizer's token for that role, or add the token to the tokenizer";
    case finding_kind::tokenizer_files:
      return "keep the files of one tokenizer: delete the stale file or write it again from the other";
    case finding_kind::non_finite:
      return "download the checkpoint again; if it holds them as published, the training diverged: use an earlier "
             "step";
    case finding_kind::zero_row:
      break;
  }
  return "a row the model never trained: give it a row before the token is used (clp-transfer extend makes the "
         "rows of the tokens it adds)";
}

/// One thing wrong with a model folder.
struct finding {
  finding_kind kind = finding_kind::unreadable;
  std::filesystem::path file;  ///< the file at fault (the folder itself when no one file is)
  std::string message;         ///< what is wrong; what it breaks. One line, without the file

  /// The line the command prints: "<file>: <message>".
  std::string line() const { return file.string() + ": " + message; }

  /// {"kind", "file", "message", "what_to_do"}.
  nlohmann::ordered_json to_json() const {
    return {{"kind", kind_name(kind)},
            {"file", file.string()},
            {"message", message},
            {"what_to_do", std::string(what_to_do(kind))}};
  }
};

/// A reader's refusal as a finding of kind `kind`: the file the error names (else `fallback`),
/// and the rest of its one-line message.
/// @param[in] error     what the file layer threw
/// @param[in] fallback  the file to name when the error names none
/// @param[in] kind      the finding's kind
inline finding finding_of_error(const clp::error& error, const std::filesystem::path& fallback,
                                finding_kind kind = finding_kind::unreadable) {
  clp::error_facts facts = error.facts();
  finding result{kind, facts.file.empty() ? fallback : std::filesystem::path(facts.file), {}};
  facts.file.clear();
  facts.context.clear();
  result.message = clp::error::message(facts, error.problem());
  return result;
}

/// As above, for an error of the file layer: the file it names, its problem in the same words.
inline finding finding_of_error(const io::file_error& error, const std::filesystem::path& fallback,
                                finding_kind kind = finding_kind::unreadable) {
  clp::error_facts facts = error.facts();
  finding result{kind, facts.file.empty() ? fallback : std::filesystem::path(facts.file), {}};
  facts.file.clear();
  result.message = clp::error::message(facts, error.problem());
  return result;
}

/// The findings as the JSON report writes them: {"folder", "findings": [...]}.
/// @param[in] folder    the folder verified
/// @param[in] findings  its findings
inline nlohmann::ordered_json findings_json(const std::filesystem::path& folder, const std::vector<finding>& findings) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const finding& f : findings) list.push_back(f.to_json());
  return {{"folder", folder.string()}, {"findings", std::move(list)}};
}

}  // namespace clp_transfer::verify
