// Hugging Face tokenizer.json, read in one SAX pass: model.vocab goes straight into a
// vocabulary_builder and model.merges is skipped, so that neither becomes a DOM (a 262k-token
// vocabulary and its 515k merges as nlohmann::json cost several times the parse itself);
// everything else, small, is built into the declarations (decoder, pre_tokenizer, normalizer,
// the model's type: what io/tokenizer/spelling.hpp reads).
//
// Errors: a syntax error (or a number overflow such as 9e999) throws at once, as the parser meets
// it. An error in the vocabulary is kept and thrown after the checks of the model's type and
// shape, so that a file is refused for the same reason as when it was read whole first.
// Duplicate keys are refused where they would mix two vocabularies: a token repeated in
// model.vocab, "model" or model.vocab given twice (a parser that keeps the last value would
// silently drop the first). Every refusal is a clp::malformed_file naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/tokenizer/vocabulary.hpp"

namespace clp_transfer::io {

/// What read_tokenizer_json_contents finds in a tokenizer.json.
struct tokenizer_json_contents {
  token_vocabulary vocabulary;
  /// The rest of the document without model.vocab, model.merges and added_tokens: decoder,
  /// pre_tokenizer, normalizer, model.type and the model's other small keys, a few kilobytes.
  nlohmann::json declarations;
};

namespace detail {

/// A JSON tree built one SAX event at a time: the part of a document a reader keeps.
class json_tree {
 public:
  /// Puts `value` where the tree expects its next value; returns where it went.
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
  void open(bool is_array) { stack_.push_back(put(is_array ? nlohmann::json::array() : nlohmann::json::object())); }
  void close() { stack_.pop_back(); }
  /// The key of the next value in the innermost object.
  void key(std::string key) { key_ = std::move(key); }
  /// Containers open: 1 inside the top-level object.
  std::size_t depth() const { return stack_.size(); }
  nlohmann::json take() { return std::move(root_); }

 private:
  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;  // open containers of root_, outermost first
  std::string key_;
};

/// The SAX events of model.vocab's value, read into a vocabulary_builder: an object of
/// token -> id (BPE, WordPiece, WordLevel), or Unigram's array of [piece, score] entries whose
/// position is the id. The first problem is kept for the reader to throw after its checks.
class vocabulary_value {
 public:
  enum class shape { none, object, array, other };

  explicit vocabulary_value(const std::filesystem::path& file) : file_(file), builder_(file) {}

  /// The next value is model.vocab's (again, when the key is repeated).
  void begin() { state_ = state::start; }
  /// Whether the events belong to model.vocab's value.
  bool active() const { return state_ != state::done; }
  shape found() const { return shape_; }

  void key(std::string key) {
    resolve_pending(false);
    if (state_ == state::object && inner_depth_ == 0) token_ = std::move(key);
  }
  /// A scalar; `string` is its text when it is a string (a Unigram piece).
  void scalar(const nlohmann::json& value, const std::string* string = nullptr);
  void open(bool is_array);
  void close();

  /// Runs `check`, keeping the first clp::malformed_file it throws.
  template <class Check>
  void record(Check&& check) {
    if (error_) return;
    try {
      check();
    } catch (const clp::malformed_file& caught) {
      error_ = caught;
    }
  }

  const std::optional<clp::malformed_file>& error() const { return error_; }
  vocabulary_builder& builder() { return builder_; }

 private:
  enum class state { done, start, object, array };

  /// Refuses the token whose id is an array or object, named as json_excerpt names it.
  /// @param[in] empty  whether the container closed right after it opened
  void resolve_pending(bool empty) {
    if (!pending_) return;
    pending_ = false;
    nlohmann::json id = pending_is_array_ ? nlohmann::json::array() : nlohmann::json::object();
    if (!empty && pending_is_array_) id.push_back(nullptr);
    if (!empty && !pending_is_array_) id[""] = nullptr;
    record([&] { builder_.add(token_, id, false); });
  }

  void bad_entry() {
    record([&] { malformed(file_, "model.vocab[" + std::to_string(position_) + "] is not a [piece, score] pair"); });
  }

  const std::filesystem::path& file_;
  vocabulary_builder builder_;
  std::optional<clp::malformed_file> error_;
  state state_ = state::done;
  shape shape_ = shape::none;
  std::size_t inner_depth_ = 0;  // containers open inside model.vocab
  std::string token_;            // the current key of an object vocabulary
  bool pending_ = false, pending_is_array_ = false;
  std::int64_t position_ = 0;   // Unigram: the current entry's index, its token's id
  std::size_t entry_size_ = 0;  // Unigram: values seen in the current entry
};

inline void vocabulary_value::scalar(const nlohmann::json& value, const std::string* string) {
  resolve_pending(false);
  if (state_ == state::start) {
    shape_ = shape::other;
    state_ = state::done;
  } else if (state_ == state::object) {
    if (inner_depth_ == 0) record([&] { builder_.add(token_, value, false); });
  } else if (inner_depth_ == 0) {
    bad_entry();  // an entry that is not an array
    ++position_;
  } else if (inner_depth_ == 1 && entry_size_++ == 0) {
    if (string)
      record([&] { builder_.add(*string, nlohmann::json(position_), false); });
    else
      bad_entry();  // a piece that is not a string
  }
}

inline void vocabulary_value::open(bool is_array) {
  resolve_pending(false);
  if (state_ == state::start) {
    shape_ = is_array ? shape::array : shape::object;
    state_ = is_array ? state::array : state::object;
    inner_depth_ = 0;
    return;
  }
  if (state_ == state::object && inner_depth_ == 0) {
    pending_ = true;  // an id that is a container: whether it is empty shows at the next event
    pending_is_array_ = is_array;
  } else if (state_ == state::array && inner_depth_ == 0) {
    if (!is_array) bad_entry();
    entry_size_ = 0;
  } else if (state_ == state::array && inner_depth_ == 1 && entry_size_++ == 0) {
    bad_entry();  // a piece that is an array or object
  }
  ++inner_depth_;
}

inline void vocabulary_value::close() {
  resolve_pending(inner_depth_ == 1);
  if (state_ == state::start) return;  // the parser reports a value-less "vocab" as a syntax error first
  if (inner_depth_ == 0) {
    state_ = state::done;
    return;
  }
  if (state_ == state::array && inner_depth_ == 1) {
    if (entry_size_ == 0) bad_entry();  // an empty entry
    ++position_;
  }
  --inner_depth_;
}

/// The SAX handler of a tokenizer.json: each event goes to model.vocab's reader, to a value
/// being skipped (model.merges, and added_tokens for declarations alone), or to the tree of
/// declarations. Each member returns true to go on.
class tokenizer_json_reader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  /// @param[in] file        tokenizer.json, for messages
  /// @param[in] vocabulary  whether to read model.vocab and added_tokens; false skips them like
  ///                        model.merges, for the declarations alone
  tokenizer_json_reader(const std::filesystem::path& file, bool vocabulary)
      : file_(file), vocabulary_(file), read_vocabulary_(vocabulary) {}

  bool null() override { return scalar(nullptr); }
  bool boolean(bool value) override { return scalar(value); }
  bool number_integer(number_integer_t value) override { return scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(value); }
  bool number_float(number_float_t value, const string_t&) override { return scalar(value); }
  bool binary(binary_t&) override { return scalar(nullptr); }  // never reported for JSON text
  bool string(string_t& value) override {
    if (vocabulary_.active()) {
      vocabulary_.scalar(nlohmann::json(value), &value);
      return true;
    }
    return scalar(nlohmann::json(std::move(value)));
  }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& error) override {
    malformed_json(file_, "not valid JSON", error);
  }

  /// The declarations (what is left of the document), after the parse.
  nlohmann::json declarations() { return tree_.take(); }
  /// The vocabulary and the declarations, after the parse; throws naming the file when the
  /// document is no tokenizer.json or its vocabulary is refused.
  tokenizer_json_contents finish();

 private:
  bool scalar(nlohmann::json value) {
    if (vocabulary_.active())
      vocabulary_.scalar(value);
    else if (!skipping_)
      tree_.put(std::move(value));
    else if (skip_depth_ == 0)
      skipping_ = false;  // the skipped value was this scalar
    return true;
  }
  bool open(bool is_array) {
    if (++depth_ > max_json_depth)
      malformed(file_, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
    if (vocabulary_.active()) {
      vocabulary_.open(is_array);
    } else if (skipping_) {
      ++skip_depth_;
    } else {
      tree_.open(is_array);
      if (tree_.depth() == 2) in_model_ = value_is_model_ && !is_array;
    }
    return true;
  }
  bool close() {
    --depth_;
    if (vocabulary_.active())
      vocabulary_.close();
    else if (skipping_ && --skip_depth_ == 0)
      skipping_ = false;
    else if (!skipping_)
      tree_.close();
    return true;
  }
  bool skip_value() {
    skipping_ = true;
    skip_depth_ = 0;
    return true;
  }

  const std::filesystem::path& file_;
  json_tree tree_;
  vocabulary_value vocabulary_;
  bool read_vocabulary_;
  bool skipping_ = false;        // inside a value that is dropped
  std::size_t skip_depth_ = 0;   // containers open inside it
  std::size_t depth_ = 0;        // containers open in the document
  bool value_is_model_ = false;  // the next top-level value is "model"'s
  bool in_model_ = false;        // the tree's second open container is the top-level "model" object
  bool model_seen_ = false, vocabulary_seen_ = false;
};

inline bool tokenizer_json_reader::key(string_t& key) {
  if (vocabulary_.active()) {
    vocabulary_.key(std::move(key));
    return true;
  }
  if (skipping_) return true;
  if (tree_.depth() == 1) {
    value_is_model_ = key == "model";
    if (value_is_model_ && read_vocabulary_) {
      if (model_seen_) vocabulary_.record([&] { malformed(file_, "key \"model\" appears twice"); });
      model_seen_ = true;
    }
    if (key == "added_tokens" && !read_vocabulary_) return skip_value();
  }
  if (tree_.depth() == 2 && in_model_) {
    if (key == "merges") return skip_value();
    if (key == "vocab") {
      if (!read_vocabulary_) return skip_value();
      if (vocabulary_seen_) vocabulary_.record([&] { malformed(file_, "key \"vocab\" appears twice in model"); });
      vocabulary_seen_ = true;
      vocabulary_.begin();
      return true;
    }
  }
  tree_.key(std::move(key));
  return true;
}

/// The model's type, checked: "" when the file leaves it out (older files).
inline std::string tokenizer_model_type(const std::filesystem::path& file, const nlohmann::json& model) {
  if (!model.contains("type")) return {};
  if (!model["type"].is_string()) malformed(file, "model.type is not a string");
  std::string type = model["type"].get<std::string>();
  if (type != "BPE" && type != "WordPiece" && type != "WordLevel" && type != "Unigram")
    malformed(file, "unsupported tokenizer model type " + quoted_name(type));
  return type;
}

inline tokenizer_json_contents tokenizer_json_reader::finish() {
  tokenizer_json_contents contents;
  contents.declarations = tree_.take();
  nlohmann::json& document = contents.declarations;
  if (!document.is_object()) malformed(file_, "not a JSON object");
  const auto model = document.find("model");
  if (model == document.end() || !model->is_object() || !vocabulary_seen_)
    malformed(file_, "no vocabulary (model.vocab is missing)");
  // The vocabulary's JSON shape tells Unigram apart where the type is left out.
  const std::string type = tokenizer_model_type(file_, *model);
  using shape = vocabulary_value::shape;
  const bool unigram = type == "Unigram" || (type.empty() && vocabulary_.found() == shape::array);
  if (unigram && vocabulary_.found() != shape::array)
    malformed(file_, "model.vocab of a Unigram model is not an array");
  if (!unigram && vocabulary_.found() != shape::object) malformed(file_, "model.vocab is not an object of token -> id");
  if (vocabulary_.error()) throw *vocabulary_.error();
  // Added tokens repeat vocabulary entries: they go in after the whole vocabulary.
  if (const auto added = document.find("added_tokens"); added != document.end()) {
    if (!added->is_array()) malformed(file_, "added_tokens is not an array");
    for (const nlohmann::json& token : *added) {
      if (!token.is_object() || !token.contains("id") || !token.contains("content") || !token["content"].is_string())
        malformed(file_, "added_tokens holds an entry without \"id\" and \"content\"");
      vocabulary_.builder().add(token["content"].get<std::string>(), token["id"], true);
    }
    document.erase(added);
  }
  contents.vocabulary = vocabulary_.builder().finish();
  return contents;
}

/// Parses the text of `file` with `reader`. The SAX parser keeps its own stack, and the reader
/// checks the depth as it goes (no DOM of the vocabulary is built that a deep value could
/// overflow): no pass of json_text_depth.
inline void parse_tokenizer_json(const std::filesystem::path& file, tokenizer_json_reader& reader) {
  nlohmann::json::sax_parse(read_text_file(file), &reader);
}

}  // namespace detail

/// Reads a Hugging Face `tokenizer.json` in one pass: its vocabulary, model.vocab (an object
/// token -> id for BPE, WordPiece and WordLevel; an array of [piece, score] for Unigram, where
/// the id is the position) plus the top-level added_tokens, and its declarations.
/// @param[in] file  tokenizer.json
inline tokenizer_json_contents read_tokenizer_json_contents(const std::filesystem::path& file) {
  detail::tokenizer_json_reader reader(file, true);
  detail::parse_tokenizer_json(file, reader);
  return naming_file(file, [&] { return reader.finish(); });
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

}  // namespace clp_transfer::io
