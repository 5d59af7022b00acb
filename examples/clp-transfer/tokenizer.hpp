// A tokenizer as the program reads it for matching: its vocabulary and its spelling, from a model
// folder (tokenizer.json, else vocab.json) or from a tokenizer file named directly, each file
// read once.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/tokenizer_json.hpp"
#include "io/vocabulary.hpp"
#include "tokenizer_spelling.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// A tokenizer as matching needs it.
struct tokenizer_reading {
  std::filesystem::path file;  ///< the file the vocabulary came from, for messages
  io::token_vocabulary vocabulary;
  tokenizer_spelling spelling;
};

namespace detail {

/// Stops a SAX parse at the top-level "model" key's value, noting whether it is an object.
class model_object_finder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool found = false;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    found = model_next_;
    ++depth_;
    return !found;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return value();
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    model_next_ = depth_ == 1 && key == "model";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override { return false; }

 private:
  bool value() {
    model_next_ = false;
    return true;
  }
  bool close() {
    --depth_;
    return value();
  }
  std::size_t depth_ = 0;
  bool model_next_ = false;
};

/// Whether `file` (not named tokenizer.json, vocab.json or encoder.json) is a tokenizer.json:
/// an object whose "model" is an object. vocab.json files map tokens to integers (and may
/// well hold the token "model"). The file is scanned up to that "model", not parsed whole.
inline bool is_tokenizer_json(const std::filesystem::path& file) {
  if (file.filename() == "tokenizer.json") return true;
  if (file.filename() == "vocab.json" || file.filename() == "encoder.json") return false;
  std::ifstream in(file, std::ios::binary);
  model_object_finder finder;
  nlohmann::json::sax_parse(in, &finder);
  return finder.found;
}

/// The vocabulary and spelling of a tokenizer.json, read in one pass.
inline tokenizer_reading read_tokenizer_json_file(const std::filesystem::path& file) {
  io::tokenizer_json_contents contents = io::read_tokenizer_json_contents(file);
  return {file, std::move(contents.vocabulary), spelling_from_declarations(contents.declarations)};
}

/// The vocabulary and spelling of a vocab.json or encoder.json (any file of token -> id).
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
inline tokenizer_reading read_vocab_file(const std::filesystem::path& file,
                                         const nlohmann::ordered_json* tokenizer_config) {
  return {file, io::read_vocab_json(file), spelling_of_vocab_file(file, tokenizer_config)};
}

}  // namespace detail

/// The vocabulary and spelling of the tokenizer of a model folder: its tokenizer.json, else its
/// vocab.json; throws naming the folder when it has neither.
/// @param[in] folder            model folder
/// @param[in] tokenizer_config  its tokenizer_config.json, as read (null when absent): it tells
///                              the spelling of a vocab.json
inline tokenizer_reading read_folder_tokenizer(const std::filesystem::path& folder,
                                               const nlohmann::ordered_json* tokenizer_config) {
  if (std::filesystem::exists(folder / "tokenizer.json"))
    return detail::read_tokenizer_json_file(folder / "tokenizer.json");
  if (std::filesystem::exists(folder / "vocab.json"))
    return detail::read_vocab_file(folder / "vocab.json", tokenizer_config);
  io::malformed(folder, "no tokenizer.json or vocab.json to read the vocabulary from");
}

/// The vocabulary and spelling of the tokenizer at `path`: a model folder (its tokenizer.json,
/// else its vocab.json), a tokenizer.json, or a vocab.json / encoder.json (any file of
/// token -> id). Each file is read once. Throws naming the file when it cannot be read.
/// @param[in] path  model folder or tokenizer file
inline tokenizer_reading read_tokenizer(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    // tokenizer_config.json tells only a vocab.json's spelling.
    const bool vocab_json =
        !std::filesystem::exists(path / "tokenizer.json") && std::filesystem::exists(path / "vocab.json");
    const auto config = vocab_json ? tokenizer_config_beside(path / "vocab.json") : std::nullopt;
    return read_folder_tokenizer(path, config ? &*config : nullptr);
  }
  if (!std::filesystem::exists(path)) throw clp::io_error(io::about(path), "no such file or folder");
  if (detail::is_tokenizer_json(path)) return detail::read_tokenizer_json_file(path);
  const auto config = path.filename() == "encoder.json" ? std::nullopt : tokenizer_config_beside(path);
  return detail::read_vocab_file(path, config ? &*config : nullptr);
}

}  // namespace clp_transfer
