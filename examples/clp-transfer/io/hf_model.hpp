// Hugging Face model folders as clp-transfer reads and writes them: config.json, safetensors
// weights (one file or shards listed by model.safetensors.index.json), the tokenizer's
// vocabulary, which tensors are the embeddings, and an output directory that appears under
// its final name only once it is complete.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "safetensors.hpp"

namespace clp::io {

namespace detail {

/// Deeper nesting than any Hugging Face file has (theirs stay under 10 levels).
/// nlohmann::ordered_json copies values recursively when its vector of members grows, so a
/// config.json nested 200,000 deep (400 KB) overflowed the stack inside the parser itself.
inline constexpr std::size_t max_json_depth = 1000;

/// How deeply arrays and objects nest in JSON `text` (1 for a flat object), counted on the
/// raw text so that it can be checked before parsing. It agrees with the parser up to the
/// first syntax error, so the parser never nests deeper than this.
/// @param[in] text  JSON text (need not be valid)
inline std::size_t json_text_depth(std::string_view text) {
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

/// The whole of `file`; throws naming it when it cannot be opened. An empty file (or a
/// folder) reads as "": the JSON parser then says what is wrong.
/// @param[in] file  file to read
inline std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, with_errno("cannot open"));
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

/// Throws naming `file` when JSON `text` nests deeper than max_json_depth.
/// @param[in] file  the file `text` came from, for messages
/// @param[in] text  JSON text (need not be valid)
inline void check_json_depth(const std::filesystem::path& file, std::string_view text) {
  if (json_text_depth(text) > max_json_depth)
    fail(file, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
}

/// Parses a JSON file; throws naming the file when it cannot be read or is not JSON (a
/// syntax error, a number too large for a double such as 9e999, or nesting deeper than
/// max_json_depth).
/// @tparam    Json  nlohmann::json (fast, sorted keys) or nlohmann::ordered_json (keeps the
///                  file's key order, but inserts in linear time: small files only)
/// @param[in] file  JSON file
template <class Json>
Json read_json_file(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  check_json_depth(file, text);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    fail_json(file, "not valid JSON", error);
  }
}

/// Runs `read`, which interprets JSON read from `file`, turning any nlohmann exception that
/// escapes it (a type or range error the checks did not foresee) into an io::error naming
/// `file`, so that no JSON library message reaches the user without the file's name.
/// @param[in] file  the file `read` interprets
/// @param[in] read  callable; its result is returned
template <class Read>
auto naming_file(const std::filesystem::path& file, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& error) {
    fail_json(file, "unexpected JSON content", error);
  }
}

/// The JSON value as an int64, or nullopt when it is not an integer in int64's range.
/// @param[in] value  any JSON value
template <class Json>
std::optional<std::int64_t> as_int64(const Json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.template get<std::uint64_t>() > std::uint64_t{INT64_MAX}) return std::nullopt;
  return value.template get<std::int64_t>();
}

}  // namespace detail

/// A tokenizer's vocabulary.
struct token_vocabulary {
  std::unordered_map<std::string, std::int64_t> ids;  ///< token string -> id
  /// Highest id + 1: the rows an embedding matrix needs to cover every token. Equals
  /// ids.size() unless the ids have gaps.
  std::int64_t size = 0;
};

namespace detail {

/// Collects token -> id pairs, refusing negative ids and ids held by two tokens.
class vocabulary_builder {
 public:
  /// @param[in] file  file being read, for messages
  explicit vocabulary_builder(std::filesystem::path file) : file_(std::move(file)) {}

  /// Adds `token` with `id`.
  /// @param[in] token      token string
  /// @param[in] id         its id, as found in the file
  /// @param[in] may_repeat true for added_tokens, which repeat vocabulary entries: a repeat
  ///                       with the same id is then accepted
  void add(const std::string& token, const nlohmann::json& id, bool may_repeat) {
    const auto value = as_int64(id);
    if (!value) fail(file_, "token " + quoted_name(token) + " has id " + json_excerpt(id) + ", not an integer");
    if (*value < 0) fail(file_, "token " + quoted_name(token) + " has negative id " + std::to_string(*value));
    // The vocabulary's size is the highest id + 1, which must itself be an int64.
    if (*value == std::numeric_limits<std::int64_t>::max())
      fail(file_, "token " + quoted_name(token) + " has id " + std::to_string(*value) +
                      ", too large (ids must be below " + std::to_string(*value) + ")");
    const auto [entry, inserted] = vocabulary_.ids.emplace(token, *value);
    if (!inserted) {
      if (may_repeat && entry->second == *value) return;
      fail(file_, (may_repeat ? "added token " : "token ") + quoted_name(token) + " has id " + std::to_string(*value) +
                      " but already has id " + std::to_string(entry->second));
    }
    if (const std::string* owner = claim(*value, &entry->first))
      fail(file_,
           "tokens " + quoted_name(*owner) + " and " + quoted_name(token) + " both have id " + std::to_string(*value));
    vocabulary_.size = std::max(vocabulary_.size, *value + 1);
  }

  /// The vocabulary; throws when nothing was added.
  token_vocabulary finish() {
    if (vocabulary_.ids.empty()) fail(file_, "no vocabulary (no tokens found)");
    return std::move(vocabulary_);
  }

 private:
  /// Records `token` as the owner of `id`; returns the token that owned it already, or null.
  const std::string* claim(std::int64_t id, const std::string* token) {
    // Ids are mostly 0..n-1: a vector indexed by id, grown at most to a few times the tokens
    // seen so far (so that a stray id of 2^60 cannot allocate), is much cheaper than a hash
    // map. An id too large for it when it came stays in sparse_owners_.
    const auto index = static_cast<std::uint64_t>(id);
    if (index >= dense_owners_.size() && index < 4 * (vocabulary_.ids.size() + 1024))
      dense_owners_.resize(std::max<std::size_t>(index + 1, 2 * dense_owners_.size()));
    if (index < dense_owners_.size()) {
      const std::string*& owner = dense_owners_[index];
      if (!owner && !sparse_owners_.empty())
        if (const auto it = sparse_owners_.find(id); it != sparse_owners_.end()) return it->second;
      if (owner) return owner;
      owner = token;
      return nullptr;
    }
    const auto [owner, fresh] = sparse_owners_.emplace(id, token);
    return fresh ? nullptr : owner->second;
  }

  std::filesystem::path file_;
  token_vocabulary vocabulary_;
  // id -> key in vocabulary_: small ids in dense_owners_ (null where no token has it yet),
  // the others in sparse_owners_
  std::vector<const std::string*> dense_owners_;
  std::unordered_map<std::int64_t, const std::string*> sparse_owners_;
};

}  // namespace detail

/// What read_tokenizer_json_contents finds in a tokenizer.json.
struct tokenizer_json_contents {
  token_vocabulary vocabulary;
  /// The rest of the document without model.vocab, model.merges and added_tokens: decoder,
  /// pre_tokenizer, normalizer, model.type and the model's other small keys, a few kilobytes
  /// (what tokenizer_spelling.hpp reads).
  nlohmann::json declarations;
};

namespace detail {

/// Reads a tokenizer.json in one SAX pass (the parser calls the members below as it reads;
/// each returns true to go on). model.vocab goes straight into a
/// vocabulary_builder and model.merges is skipped, so that neither becomes a DOM (a
/// 262k-token vocabulary and its 515k merges as nlohmann::json cost several times the parse
/// itself); everything else, small, is built into the declarations.
///
/// Errors: a syntax error (or a number overflow such as 9e999) throws at once, as the
/// parser meets it. An error in the vocabulary is kept and thrown by finish(), after the
/// checks of the model's type and shape, so that a file is refused for the same reason as
/// when it was read whole first. Duplicate keys are refused where they would mix two
/// vocabularies: a token repeated in model.vocab, "model" or model.vocab given twice (a
/// parser that keeps the last value would silently drop the first).
class tokenizer_json_reader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  /// @param[in] file        tokenizer.json, for messages
  /// @param[in] vocabulary  whether to read model.vocab and added_tokens; false skips them
  ///                        like model.merges, for the declarations alone
  tokenizer_json_reader(const std::filesystem::path& file, bool vocabulary)
      : file_(file), builder_(file), read_vocabulary_(vocabulary) {}

  bool null() override {
    return scalar([] { return nlohmann::json(nullptr); });
  }
  bool boolean(bool value) override {
    return scalar([&] { return nlohmann::json(value); });
  }
  bool number_integer(number_integer_t value) override {
    return scalar([&] { return nlohmann::json(value); });
  }
  bool number_unsigned(number_unsigned_t value) override {
    return scalar([&] { return nlohmann::json(value); });
  }
  bool number_float(number_float_t value, const string_t&) override {
    return scalar([&] { return nlohmann::json(value); });
  }
  bool binary(binary_t&) override {  // never reported for JSON text
    return scalar([] { return nlohmann::json(nullptr); });
  }
  bool string(string_t& value) override {
    if (mode_ == mode::vocabulary_array && inner_depth_ == 1 && entry_size_ == 0) {
      record([&] { builder_.add(value, nlohmann::json(position_), false); });
      entry_size_ = 1;
      return true;
    }
    return scalar([&] { return nlohmann::json(std::move(value)); });
  }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    if (id_container_pending_) resolve_container_id(false);
    if (mode_ == mode::vocabulary_object && inner_depth_ == 0) {
      token_ = std::move(key);
      return true;
    }
    if (mode_ != mode::document) return true;  // a key inside a value being skipped or read
    if (stack_.size() == 1) {
      value_is_model_ = key == "model";
      if (value_is_model_ && read_vocabulary_) {
        if (model_seen_) record([&] { fail(file_, "key \"model\" appears twice"); });
        model_seen_ = true;
      }
      if (key == "added_tokens" && !read_vocabulary_) return skip_value();
    }
    if (stack_.size() == 2 && in_model_) {
      if (key == "merges") return skip_value();
      if (key == "vocab") {
        if (!read_vocabulary_) return skip_value();
        if (vocabulary_seen_) record([&] { fail(file_, "key \"vocab\" appears twice in model"); });
        vocabulary_seen_ = true;
        mode_ = mode::vocabulary_start;
        return true;
      }
    }
    key_ = std::move(key);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& error) override {
    fail_json(file_, "not valid JSON", error);
  }

  /// The declarations (what is left of the document); for a reader made with vocabulary
  /// false, after the parse.
  nlohmann::json declarations() { return std::move(root_); }

  /// The vocabulary and the declarations, after the parse; throws naming the file when the
  /// document is no tokenizer.json or its vocabulary is refused.
  tokenizer_json_contents finish() {
    tokenizer_json_contents contents;
    contents.declarations = std::move(root_);
    nlohmann::json& document = contents.declarations;
    if (!document.is_object()) fail(file_, "not a JSON object");
    const auto model = document.find("model");
    if (model == document.end() || !model->is_object() || !vocabulary_seen_)
      fail(file_, "no vocabulary (model.vocab is missing)");

    // Older files may omit model.type; the vocabulary's JSON shape still tells Unigram apart.
    std::string type;
    if (model->contains("type")) {
      if (!(*model)["type"].is_string()) fail(file_, "model.type is not a string");
      type = (*model)["type"].get<std::string>();
      if (type != "BPE" && type != "WordPiece" && type != "WordLevel" && type != "Unigram")
        fail(file_, "unsupported tokenizer model type " + quoted_name(type));
    }
    const bool unigram = type == "Unigram" || (type.empty() && vocabulary_shape_ == shape::array);
    if (unigram && vocabulary_shape_ != shape::array) fail(file_, "model.vocab of a Unigram model is not an array");
    if (!unigram && vocabulary_shape_ != shape::object) fail(file_, "model.vocab is not an object of token -> id");
    if (error_) throw *error_;

    // Added tokens repeat vocabulary entries: they go in after the whole vocabulary.
    if (const auto added = document.find("added_tokens"); added != document.end()) {
      if (!added->is_array()) fail(file_, "added_tokens is not an array");
      for (const nlohmann::json& token : *added) {
        if (!token.is_object() || !token.contains("id") || !token.contains("content") || !token["content"].is_string())
          fail(file_, "added_tokens holds an entry without \"id\" and \"content\"");
        builder_.add(token["content"].get<std::string>(), token["id"], true);
      }
      document.erase(added);
    }
    contents.vocabulary = builder_.finish();
    return contents;
  }

 private:
  // document: building the declarations; vocabulary_start: model.vocab's value comes next;
  // vocabulary_object / vocabulary_array: inside model.vocab (token -> id, or Unigram's
  // [piece, score] entries); skip: inside a value that is dropped.
  enum class mode { document, vocabulary_start, vocabulary_object, vocabulary_array, skip };
  enum class shape { none, object, array, other };

  /// Runs `check`, keeping the first io::error it throws for finish().
  template <class Check>
  void record(Check&& check) {
    if (error_) return;
    try {
      check();
    } catch (const error& caught) {
      error_ = caught;
    }
  }

  bool skip_value() {
    mode_ = mode::skip;
    inner_depth_ = 0;
    return true;
  }

  template <class Make>
  bool scalar(Make&& make) {
    if (id_container_pending_) resolve_container_id(false);
    switch (mode_) {
      case mode::document:
        put(make());
        break;
      case mode::vocabulary_start:
        vocabulary_shape_ = shape::other;
        mode_ = mode::document;
        break;
      case mode::vocabulary_object:
        if (inner_depth_ == 0) record([&] { builder_.add(token_, make(), false); });
        break;
      case mode::vocabulary_array:
        if (inner_depth_ == 0) {
          bad_entry();  // an entry that is not an array
          ++position_;
        } else if (inner_depth_ == 1) {
          if (entry_size_++ == 0) bad_entry();  // a piece that is not a string
        }
        break;
      case mode::skip:
        if (inner_depth_ == 0) mode_ = mode::document;
        break;
    }
    return true;
  }

  bool open(bool is_array) {
    if (++depth_ > max_json_depth)
      fail(file_, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
    if (id_container_pending_) resolve_container_id(false);
    switch (mode_) {
      case mode::document:
        stack_.push_back(put(is_array ? nlohmann::json::array() : nlohmann::json::object()));
        if (stack_.size() == 2) in_model_ = value_is_model_ && !is_array;
        return true;
      case mode::vocabulary_start:
        vocabulary_shape_ = is_array ? shape::array : shape::object;
        mode_ = is_array ? mode::vocabulary_array : mode::vocabulary_object;
        inner_depth_ = 0;
        return true;
      case mode::vocabulary_object:
        if (inner_depth_ == 0) {
          id_container_pending_ = true;  // whether it is empty shows at the next event
          id_container_is_array_ = is_array;
        }
        break;
      case mode::vocabulary_array:
        if (inner_depth_ == 0) {
          if (!is_array) bad_entry();
          entry_size_ = 0;
        } else if (inner_depth_ == 1) {
          if (entry_size_++ == 0) bad_entry();  // a piece that is an array or object
        }
        break;
      case mode::skip:
        break;
    }
    ++inner_depth_;
    return true;
  }

  bool close() {
    --depth_;
    if (id_container_pending_) resolve_container_id(inner_depth_ == 1);
    switch (mode_) {
      case mode::document:
        stack_.pop_back();
        break;
      case mode::vocabulary_start:  // the parser reports `"vocab": }` as a syntax error first
        break;
      case mode::vocabulary_object:
        if (inner_depth_ == 0)
          mode_ = mode::document;
        else
          --inner_depth_;
        break;
      case mode::vocabulary_array:
        if (inner_depth_ == 0) {
          mode_ = mode::document;
        } else {
          if (inner_depth_ == 1) {
            if (entry_size_ == 0) bad_entry();  // an empty entry
            ++position_;
          }
          --inner_depth_;
        }
        break;
      case mode::skip:
        if (--inner_depth_ == 0) mode_ = mode::document;
        break;
    }
    return true;
  }

  /// Refuses the token whose id is an array or object, named as json_excerpt names it.
  /// @param[in] empty  whether the container closed right after it opened
  void resolve_container_id(bool empty) {
    id_container_pending_ = false;
    nlohmann::json id = id_container_is_array_ ? nlohmann::json::array() : nlohmann::json::object();
    if (!empty && id_container_is_array_) id.push_back(nullptr);
    if (!empty && !id_container_is_array_) id[""] = nullptr;
    record([&] { builder_.add(token_, id, false); });
  }

  void bad_entry() {
    record([&] { fail(file_, "model.vocab[" + std::to_string(position_) + "] is not a [piece, score] pair"); });
  }

  /// Puts `value` where the document under construction expects the next value.
  nlohmann::json* put(nlohmann::json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    nlohmann::json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    nlohmann::json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }

  const std::filesystem::path& file_;
  vocabulary_builder builder_;
  bool read_vocabulary_;
  std::optional<error> error_;  // the first error met in the vocabulary

  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;  // open containers of root_, outermost first
  std::string key_;                     // the key of the next value in an object of root_
  bool value_is_model_ = false;         // the next top-level value is "model"'s
  bool in_model_ = false;               // stack_[1] is the top-level "model" object
  bool model_seen_ = false, vocabulary_seen_ = false;

  std::size_t depth_ = 0;  // containers open
  mode mode_ = mode::document;
  shape vocabulary_shape_ = shape::none;
  std::size_t inner_depth_ = 0;  // containers open inside model.vocab or a skipped value
  std::string token_;            // model.vocab's current key
  bool id_container_pending_ = false, id_container_is_array_ = false;
  std::int64_t position_ = 0;   // Unigram: the current entry's index, its token's id
  std::size_t entry_size_ = 0;  // Unigram: values seen in the current entry
};

/// The text of `file`, parsed by `reader`; throws naming the file when it cannot be read,
/// nests deeper than max_json_depth or is not JSON.
inline void parse_tokenizer_json(const std::filesystem::path& file, tokenizer_json_reader& reader) {
  // The SAX parser keeps its own stack, and the reader checks the depth as it goes (no DOM of
  // the vocabulary is built that a deep value could overflow): no pass of json_text_depth.
  nlohmann::json::sax_parse(read_text_file(file), &reader);
}

}  // namespace detail

/// Reads a Hugging Face `tokenizer.json` in one pass: its vocabulary, model.vocab (an object
/// token -> id for BPE, WordPiece and WordLevel; an array of [piece, score] for Unigram,
/// where the id is the position) plus the top-level added_tokens, and its declarations.
/// A token given twice in model.vocab is refused.
/// @param[in] file  tokenizer.json
inline tokenizer_json_contents read_tokenizer_json_contents(const std::filesystem::path& file) {
  detail::tokenizer_json_reader reader(file, true);
  detail::parse_tokenizer_json(file, reader);
  return detail::naming_file(file, [&] { return reader.finish(); });
}

/// The vocabulary of a Hugging Face `tokenizer.json`; see read_tokenizer_json_contents.
/// @param[in] file  tokenizer.json
inline token_vocabulary read_tokenizer_json(const std::filesystem::path& file) {
  return read_tokenizer_json_contents(file).vocabulary;
}

/// The declarations of a JSON file read as a tokenizer.json (see tokenizer_json_contents),
/// without reading or checking its vocabulary: any JSON document, less model.vocab,
/// model.merges and added_tokens when it is an object.
/// @param[in] file  JSON file
inline nlohmann::json read_tokenizer_declarations(const std::filesystem::path& file) {
  detail::tokenizer_json_reader reader(file, false);
  detail::parse_tokenizer_json(file, reader);
  return reader.declarations();
}

/// Reads a `vocab.json`: one object token -> id (GPT-2 style tokenizers without
/// tokenizer.json).
/// @param[in] file  vocab.json
inline token_vocabulary read_vocab_json(const std::filesystem::path& file) {
  const auto document = detail::read_json_file<nlohmann::json>(file);
  return detail::naming_file(file, [&] {
    if (!document.is_object()) detail::fail(file, "not a JSON object of token -> id");
    detail::vocabulary_builder builder(file);
    for (const auto& [token, id] : document.items()) builder.add(token, id, false);
    return builder.finish();
  });
}

/// Reads the vocabulary of a model folder from tokenizer.json, or else vocab.json.
/// @param[in] folder  model directory
inline token_vocabulary read_vocabulary(const std::filesystem::path& folder) {
  if (std::filesystem::exists(folder / "tokenizer.json")) return read_tokenizer_json(folder / "tokenizer.json");
  if (std::filesystem::exists(folder / "vocab.json")) return read_vocab_json(folder / "vocab.json");
  detail::fail(folder, "no tokenizer.json or vocab.json to read the vocabulary from");
}

/// The tokenizer files present in `folder`, sorted by name: tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt and any *.model
/// (SentencePiece). An output model needs them to be loadable with its new vocabulary.
/// @param[in] folder  model directory
inline std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder) {
  static constexpr std::array<std::string_view, 5> names = {"tokenizer.json", "tokenizer_config.json",
                                                            "special_tokens_map.json", "vocab.json", "merges.txt"};
  std::error_code error;
  std::filesystem::directory_iterator items(folder, error);
  if (error) detail::fail(folder, "cannot list: " + error.message());
  std::vector<std::filesystem::path> files;
  for (const auto& item : items) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file(error) &&
        (std::find(names.begin(), names.end(), name) != names.end() || item.path().extension() == ".model"))
      files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Name endings of an input embedding matrix, by family: wte.weight (GPT-2, GPT-J),
/// embed_tokens.weight (Llama, Mistral, OPT, BART), word_embeddings.weight (BLOOM),
/// embed_in.weight (GPT-NeoX, Pythia), tok_embeddings.weight (Meta's original Llama
/// layout), embeddings.word_embeddings.weight (BERT, RoBERTa), shared.weight (T5, BART).
inline constexpr std::array<std::string_view, 7> input_embedding_suffixes = {
    "wte.weight",      "embed_tokens.weight",   "word_embeddings.weight",
    "embed_in.weight", "tok_embeddings.weight", "embeddings.word_embeddings.weight",
    "shared.weight"};

/// Name endings of an untied output head (lm_head.weight: most families; embed_out.weight:
/// GPT-NeoX; output.weight: Meta's original Llama layout). A checkpoint without one ties
/// the head to the input embedding.
inline constexpr std::array<std::string_view, 3> output_embedding_suffixes = {"lm_head.weight", "embed_out.weight",
                                                                              "output.weight"};

/// Model roots that transformers puts in front of the embedding's name. A match with no
/// prefix or one of these is the model's own embedding, preferred over look-alikes deeper in
/// the tree (T5's encoder.embed_tokens.weight next to shared.weight).
inline constexpr std::array<std::string_view, 3> embedding_name_roots = {"model", "transformer", "gpt_neox"};

namespace detail {

/// Picks the single tensor among `names` that ends with one of `suffixes` (at a "."
/// boundary, and outside numbered blocks such as layers.3), preferring a full well-known
/// name when several match; nullopt when none does.
/// @param[in] where     checkpoint, for messages
/// @param[in] names     every tensor name in the checkpoint
/// @param[in] suffixes  input_embedding_suffixes or output_embedding_suffixes
/// @param[in] what      "input embedding" or "output head", for messages
template <std::size_t N>
std::optional<std::string> find_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                          const std::array<std::string_view, N>& suffixes, const std::string& what) {
  std::vector<std::string> candidates, full_names;
  for (const std::string& name : names) {
    for (std::string_view suffix : suffixes) {
      const std::string_view whole = name;
      if (whole.size() < suffix.size() || whole.substr(whole.size() - suffix.size()) != suffix) continue;
      std::string_view prefix = whole.substr(0, whole.size() - suffix.size());
      if (!prefix.empty() && prefix.back() != '.') continue;
      if (!prefix.empty()) prefix.remove_suffix(1);
      bool in_numbered_block = false;
      for (std::size_t start = 0; start < prefix.size();) {
        const std::size_t end = std::min(prefix.find('.', start), prefix.size());
        const std::string_view part = prefix.substr(start, end - start);
        in_numbered_block |= !part.empty() && part.find_first_not_of("0123456789") == part.npos;
        start = end + 1;
      }
      if (in_numbered_block) continue;
      candidates.push_back(name);
      if (prefix.empty() ||
          std::find(embedding_name_roots.begin(), embedding_name_roots.end(), prefix) != embedding_name_roots.end())
        full_names.push_back(name);
      break;
    }
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return candidates.front();
  if (full_names.size() == 1) return full_names.front();
  std::string list;
  for (const std::string& name : candidates) list += (list.empty() ? "" : ", ") + quoted_name(name);
  fail(where, "several tensors could be the " + what + " (" + list + "); name one explicitly");
}

/// Checks that an explicitly named tensor exists.
/// @param[in] where  checkpoint, for messages
/// @param[in] names  every tensor name in the checkpoint
/// @param[in] name   the name given
inline void require_tensor(const std::filesystem::path& where, const std::vector<std::string>& names,
                           const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end())
    fail(where, "no tensor " + quoted_name(name) + " (named explicitly) in the checkpoint");
}

}  // namespace detail

/// The input embedding's tensor name: `explicit_name` when given, else found by
/// input_embedding_suffixes; throws naming `where` when none or several ambiguous ones match.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
inline std::string find_input_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                        const std::string& explicit_name = {}) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  if (auto found = detail::find_embedding(where, names, input_embedding_suffixes, "input embedding")) return *found;
  std::string list;
  for (std::string_view suffix : input_embedding_suffixes) list += (list.empty() ? "" : ", ") + std::string(suffix);
  detail::fail(where, "no input embedding among " + std::to_string(names.size()) +
                          " tensors (looked for names ending in " + list + "); name it explicitly");
}

/// The untied output head's tensor name, or nullopt when the head is tied to the input
/// embedding: `explicit_name` when given, else found by output_embedding_suffixes.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
inline std::optional<std::string> find_output_embedding(const std::filesystem::path& where,
                                                        const std::vector<std::string>& names,
                                                        const std::string& explicit_name = {}) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  return detail::find_embedding(where, names, output_embedding_suffixes, "output head");
}

/// config.json keys holding special-token ids. Their values index the source vocabulary, so a
/// transferred model must take them from the helper model, which shares its tokenizer.
inline constexpr std::array<std::string_view, 8> special_token_id_keys = {
    "bos_token_id", "eos_token_id", "pad_token_id",  "unk_token_id",
    "sep_token_id", "cls_token_id", "mask_token_id", "decoder_start_token_id"};

namespace detail {

/// The first of `keys` present in `config` as a positive integer; throws naming `file` when
/// none is present or the value is not a positive integer.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
/// @param[in] keys    accepted spellings, in order of preference
template <std::size_t N>
std::int64_t positive_config_value(const nlohmann::ordered_json& config, const std::filesystem::path& file,
                                   const std::array<std::string_view, N>& keys) {
  if (!config.is_object()) fail(file, "not a JSON object");
  for (std::string_view key : keys) {
    const auto it = config.find(std::string(key));
    if (it == config.end()) continue;
    const auto value = as_int64(*it);
    if (!value || *value <= 0) fail(file, std::string(key) + " is " + json_excerpt(*it) + ", not a positive integer");
    return *value;
  }
  std::string list;
  for (std::string_view key : keys) list += (list.empty() ? "" : " or ") + std::string(key);
  fail(file, "no " + list);
}

}  // namespace detail

/// The model's vocab_size.
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::int64_t config_vocab_size(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  return detail::positive_config_value(config, file, std::array<std::string_view, 1>{"vocab_size"});
}

/// The model's hidden size, under whichever name its family uses: n_embd (GPT-2),
/// hidden_size (most), d_model (T5, BART).
/// @param[in] config  parsed config.json
/// @param[in] file    config.json, for messages
inline std::int64_t config_hidden_size(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  return detail::positive_config_value(config, file,
                                       std::array<std::string_view, 3>{"n_embd", "hidden_size", "d_model"});
}

/// The config to write for a transferred model: the source's, key order kept, with
/// vocab_size replaced and every special_token_id_keys entry taken from the helper. A key
/// the helper lacks is dropped rather than kept, since the source's id would name an
/// unrelated token of the new vocabulary.
/// @param[in] source      the source model's config.json
/// @param[in] helper      the helper model's config.json
/// @param[in] vocab_size  rows of the new embedding
inline nlohmann::ordered_json target_config(const nlohmann::ordered_json& source, const nlohmann::ordered_json& helper,
                                            std::int64_t vocab_size) {
  nlohmann::ordered_json config = source;
  config["vocab_size"] = vocab_size;
  for (std::string_view key : special_token_id_keys) {
    const std::string name(key);
    if (helper.contains(name))
      config[name] = helper[name];
    else
      config.erase(name);
  }
  return config;
}

/// One tensor of a model folder and the shard holding it.
struct located_tensor {
  const safetensors_file& file;
  const tensor_entry& tensor;
};

/// A Hugging Face model directory: config.json and the safetensors weights, either
/// model.safetensors or the shards named by model.safetensors.index.json. Opening validates
/// every weight file's header and the index against the shards; no tensor data is read.
class model_folder {
 public:
  /// Opens `directory`; throws naming the file at fault.
  /// @param[in] directory  model folder
  explicit model_folder(std::filesystem::path directory) : directory_(std::move(directory)) {
    if (!std::filesystem::is_directory(directory_)) detail::fail(directory_, "not a directory");
    config_ = detail::read_json_file<nlohmann::ordered_json>(directory_ / "config.json");
    if (!config_.is_object()) detail::fail(directory_ / "config.json", "not a JSON object");
    if (std::filesystem::exists(directory_ / "model.safetensors")) {
      shards_.emplace_back(directory_ / "model.safetensors");
    } else if (std::filesystem::exists(directory_ / "model.safetensors.index.json")) {
      index_path_ = directory_ / "model.safetensors.index.json";
      open_shards();
    } else {
      detail::fail(directory_, "no model.safetensors or model.safetensors.index.json" +
                                   std::string(std::filesystem::exists(directory_ / "pytorch_model.bin")
                                                   ? " (pytorch_model.bin is not read: convert it to safetensors)"
                                                   : ""));
    }
  }

  const std::filesystem::path& directory() const noexcept { return directory_; }
  /// config.json with its key order kept, so that a rewritten copy diffs cleanly.
  const nlohmann::ordered_json& config() const noexcept { return config_; }
  /// Weight files: model.safetensors alone, or the shards in order of first appearance in
  /// the index's weight_map.
  const std::vector<safetensors_file>& shards() const noexcept { return shards_; }
  /// model.safetensors.index.json, or empty when the weights are a single file.
  const std::filesystem::path& index_path() const noexcept { return index_path_; }

  /// Every tensor name, shard by shard in file order.
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> names;
    for (const safetensors_file& shard : shards_)
      for (const tensor_entry& tensor : shard.tensors()) names.push_back(tensor.name);
    return names;
  }

  /// The tensor called `name` and its shard; throws naming the folder when none holds it.
  /// @param[in] name  tensor name
  located_tensor locate(std::string_view name) const {
    for (const safetensors_file& shard : shards_)
      if (const tensor_entry* tensor = shard.find(name)) return {shard, *tensor};
    detail::fail(directory_, "no tensor " + detail::quoted_name(name) + " in any weight file");
  }

 private:
  void open_shards() {
    const auto index = detail::read_json_file<nlohmann::ordered_json>(index_path_);
    detail::naming_file(index_path_, [&] { open_shards(index); });
  }

  void open_shards(const nlohmann::ordered_json& index) {
    const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
    if (weight_map == index.end() || !weight_map->is_object() || weight_map->empty())
      detail::fail(index_path_, "no weight_map object of tensor name -> shard file");

    std::vector<std::string> shard_names;
    for (const auto& [tensor, shard] : weight_map->items()) {
      if (!shard.is_string())
        detail::fail(index_path_, "tensor " + detail::quoted_name(tensor) + " maps to " + detail::json_excerpt(shard) +
                                      ", not a file name");
      const std::string name = shard.get<std::string>();
      // Shards live in the folder itself; a path here would reach outside it. A NUL would
      // end the name early at open(): another file than the one named. No shard's name holds
      // a control character (a line break in it would break the one-line messages).
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
          std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        detail::fail(index_path_, "shard " + detail::quoted_name(name) + " is not a file name");
      if (std::find(shard_names.begin(), shard_names.end(), name) == shard_names.end()) shard_names.push_back(name);
    }
    for (const std::string& name : shard_names) shards_.emplace_back(directory_ / name);

    for (const auto& [tensor, shard] : weight_map->items()) {
      const auto position = std::find(shard_names.begin(), shard_names.end(), shard.get<std::string>());
      if (!shards_[static_cast<std::size_t>(position - shard_names.begin())].find(tensor))
        detail::fail(index_path_, "tensor " + detail::quoted_name(tensor) + " is mapped to " +
                                      detail::quoted_name(*position) + ", which does not hold it");
    }
  }

  std::filesystem::path directory_;
  nlohmann::ordered_json config_;
  std::filesystem::path index_path_;
  std::vector<safetensors_file> shards_;
};

namespace detail {

/// `output` without a trailing separator ("out/" names the directory "out").
/// @param[in] output  output path as given
inline std::filesystem::path without_trailing_separator(std::filesystem::path output) {
  return output.filename().empty() ? output.parent_path() : output;
}

/// The directory that will hold `output`: its parent, or "." for a bare name.
/// @param[in] output  output path without trailing separator
inline std::filesystem::path parent_directory(const std::filesystem::path& output) {
  return output.has_parent_path() ? output.parent_path() : std::filesystem::path(".");
}

}  // namespace detail

/// Throws "OUT: already exists (use --force to replace it)" when `output` exists and `force`
/// is false, and an error when its parent directory is missing. Call it before any work, so
/// that a long run does not end in a refusal.
/// @param[in] output  output directory to be created
/// @param[in] force   whether an existing output may be replaced
inline void check_output_available(const std::filesystem::path& output, bool force) {
  const std::filesystem::path target = detail::without_trailing_separator(output);
  std::error_code ignored;
  if (!force && std::filesystem::exists(std::filesystem::symlink_status(target, ignored)))
    detail::fail(target, "already exists (use --force to replace it)");
  if (!std::filesystem::is_directory(detail::parent_directory(target), ignored))
    detail::fail(target, "parent directory " + detail::parent_directory(target).string() + " does not exist");
}

/// A temporary directory beside an output path that becomes the output only by commit().
/// Writing everything into it first means that a failed or interrupted run never leaves a
/// half-written model under the output's name; being in the same parent makes the final
/// rename atomic. Destroyed without commit(), it removes itself and everything in it.
class staging_directory {
 public:
  /// Creates an empty `.NAME.tmp-XXXXXX` directory beside `output`.
  /// @param[in] output  final output directory (need not exist; its parent must)
  explicit staging_directory(const std::filesystem::path& output)
      : target_(detail::without_trailing_separator(output)) {
    std::string pattern =
        (detail::parent_directory(target_) / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      detail::fail(pattern, detail::with_errno("cannot create a staging directory"));
    path_ = pattern;
    // mkdtemp makes the directory private (0700); the committed output should get the
    // permissions a plain mkdir would give. umask can only be read by setting it.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(path_.c_str(), 0777 & ~mask);
  }

  staging_directory(const staging_directory&) = delete;
  staging_directory& operator=(const staging_directory&) = delete;

  ~staging_directory() {
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }

  /// The staging directory to write into.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Renames the staging directory to the output path. With `force`, an existing output is
  /// first renamed aside and removed only after the new one is in place, so a failure at any
  /// step leaves the old output where it was.
  /// @param[in] force  whether an existing output may be replaced
  void commit(bool force) {
    std::error_code ignored;
    if (!std::filesystem::exists(std::filesystem::symlink_status(target_, ignored))) {
      if (std::rename(path_.c_str(), target_.c_str()) != 0)
        detail::fail(target_, detail::with_errno("cannot move the new output into place"));
      committed_ = true;
      return;
    }
    if (!force) detail::fail(target_, "already exists (use --force to replace it)");
    // The staging name is unique (mkdtemp), so the name derived from it is free as well.
    const std::filesystem::path aside = path_.string() + ".old";
    if (std::rename(target_.c_str(), aside.c_str()) != 0)
      detail::fail(target_, detail::with_errno("cannot move the old output aside"));
    if (std::rename(path_.c_str(), target_.c_str()) != 0) {
      const std::string problem = detail::with_errno("cannot move the new output into place");
      if (std::rename(aside.c_str(), target_.c_str()) != 0)
        detail::fail(target_, problem + "; the old output is now at " + aside.string());
      detail::fail(target_, problem);
    }
    committed_ = true;
    std::filesystem::remove_all(aside, ignored);  // a leftover would only cost disk space
  }

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  bool committed_ = false;
};

}  // namespace clp::io
