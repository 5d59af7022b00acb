#include "io/tokenizer/tokenizer_json.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "io/json/file.hpp"

namespace clp_transfer::io {
namespace detail {

/// The first io::malformed_file of a series of checks, kept to be thrown later.
class first_refusal {
 public:
  /// Runs `check`, keeping the first malformed_file it throws.
  template <class Check>
  void record(Check&& check) {
    if (error_) return;
    try {
      check();
    } catch (const malformed_file& caught) {
      error_ = caught;
    }
  }
  /// Throws the refusal kept, if any.
  void rethrow() const {
    if (error_) throw *error_;
  }

 private:
  std::optional<malformed_file> error_;
};

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
  nlohmann::json& root() { return root_; }

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

  first_refusal& refusal() { return refusal_; }
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
    refusal_.record([&] { builder_.add(token_, id, false); });
  }

  void bad_entry() {
    refusal_.record(
        [&] { malformed(file_, "model.vocab[" + std::to_string(position_) + "] is not a [piece, score] pair"); });
  }

  const std::filesystem::path& file_;
  vocabulary_builder builder_;
  first_refusal refusal_;
  state state_ = state::done;
  shape shape_ = shape::none;
  std::size_t inner_depth_ = 0;  // containers open inside model.vocab
  std::string token_;            // the current key of an object vocabulary
  bool pending_ = false, pending_is_array_ = false;
  std::int64_t position_ = 0;   // Unigram: the current entry's index, its token's id
  std::size_t entry_size_ = 0;  // Unigram: values seen in the current entry
};

void vocabulary_value::scalar(const nlohmann::json& value, const std::string* string) {
  resolve_pending(false);
  if (state_ == state::start) {
    shape_ = shape::other;
    state_ = state::done;
  } else if (state_ == state::object) {
    if (inner_depth_ == 0) refusal_.record([&] { builder_.add(token_, value, false); });
  } else if (inner_depth_ == 0) {
    bad_entry();  // an entry that is not an array
    ++position_;
  } else if (inner_depth_ == 1 && entry_size_++ == 0) {
    if (string)
      refusal_.record([&] { builder_.add(*string, nlohmann::json(position_), false); });
    else
      bad_entry();  // a piece that is not a string
  }
}

void vocabulary_value::open(bool is_array) {
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

void vocabulary_value::close() {
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

/// The SAX events of model.merges's value, read into pairs: an array of "a b" strings (one
/// space between the two tokens) or of ["a", "b"] arrays, the two forms tokenizers writes. A
/// merge of neither form throws at once.
class merges_value {
 public:
  explicit merges_value(const std::filesystem::path& file) : file_(file) {}

  /// The next value is model.merges's.
  void begin() {
    state_ = state::start;
    merges_.clear();
  }
  /// Whether the events belong to model.merges's value.
  bool active() const { return state_ != state::done; }

  /// A scalar; `string` is its text when it is a string, else null.
  void scalar(const std::string* string) {
    if (state_ == state::start) malformed(file_, "model.merges is not an array");
    if (!string) bad();
    if (in_pair_) {
      if (pair_.size() == 2) bad();
      pair_.push_back(*string);
      return;
    }
    const std::size_t space = string->find(' ');
    if (space == std::string::npos || string->find(' ', space + 1) != std::string::npos) bad();
    merges_.emplace_back(string->substr(0, space), string->substr(space + 1));
  }
  void open(bool is_array) {
    if (state_ == state::start) {
      if (!is_array) malformed(file_, "model.merges is not an array");
      state_ = state::list;
      return;
    }
    if (in_pair_ || !is_array) bad();
    in_pair_ = true;
    pair_.clear();
  }
  void close() {
    if (!in_pair_) {
      state_ = state::done;
      return;
    }
    if (pair_.size() != 2) bad();
    merges_.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
    in_pair_ = false;
  }
  std::vector<std::pair<std::string, std::string>> take() { return std::move(merges_); }

 private:
  enum class state { done, start, list };

  [[noreturn]] void bad() const {
    malformed(file_, "model.merges[" + std::to_string(merges_.size()) +
                         "] is not a merge of two tokens (\"a b\" or [\"a\", \"b\"])");
  }

  const std::filesystem::path& file_;
  state state_ = state::done;
  bool in_pair_ = false;
  std::vector<std::string> pair_;
  std::vector<std::pair<std::string, std::string>> merges_;
};

/// A vocab.json read by the same pass: the top-level members whose value is an integer, which
/// are its tokens when the document turns out to be no tokenizer.json. Their first refusal is
/// kept; they are kept as read too, to go back into a tokenizer.json's declarations.
class top_level_numbers {
 public:
  explicit top_level_numbers(const std::filesystem::path& file) : builder_(file) {}

  void add(const std::string& key, const nlohmann::json& value) {
    refusal_.record([&] { builder_.add(key, value, false); });
    members_.emplace_back(key, value);
  }
  /// Puts them back into `document`, a tokenizer.json's top-level object.
  void restore(nlohmann::json& document) {
    for (auto& [key, value] : members_) document[key] = std::move(value);
  }
  /// The vocab.json's vocabulary: these tokens and the other top-level members of `document`
  /// (which are refused, not being integers).
  token_vocabulary finish(const nlohmann::json& document) {
    refusal_.rethrow();
    for (const auto& [token, id] : document.items()) builder_.add(token, id, false);
    return builder_.finish();
  }

 private:
  vocabulary_builder builder_;
  first_refusal refusal_;
  std::vector<std::pair<std::string, nlohmann::json>> members_;
};

/// How tokenizer_json_reader reads: what the options ask for, and whether the document may be
/// a vocab.json instead (read_json_vocabulary).
struct tokenizer_json_reading {
  tokenizer_json_options options;
  bool may_be_vocab_json = false;
};

/// The SAX handler of a tokenizer.json: each event goes to model.vocab's reader, to
/// model.merges's, to a value being skipped (model.merges and added_tokens when not asked for),
/// to the top-level numbers of a possible vocab.json, or to the tree of declarations. Each member
/// returns true to go on.
class tokenizer_json_reader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  /// @param[in] file     tokenizer.json, for messages
  /// @param[in] reading  what to read
  tokenizer_json_reader(const std::filesystem::path& file, const tokenizer_json_reading& reading)
      : file_(file), reading_(reading), vocabulary_(file), merges_(file), numbers_(file) {}

  bool null() override { return scalar(nullptr); }
  bool boolean(bool value) override { return scalar(value); }
  bool number_integer(number_integer_t value) override { return scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(value); }
  bool number_float(number_float_t value, const string_t&) override { return scalar(value); }
  bool binary(binary_t&) override { return scalar(nullptr); }  // never reported for JSON text
  bool string(string_t& value) override;
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& error) override {
    malformed_json(file_, "not valid JSON", error);
  }

  /// Whether the document is an object whose "model" is an object, after the parse.
  bool is_tokenizer_json() { return tree_.root().is_object() && model_object_seen_; }
  /// The declarations (what is left of the document), after the parse.
  nlohmann::json declarations() { return std::move(tree_.root()); }
  /// The vocabulary, declarations and merges, after the parse; throws naming the file when the
  /// document is no tokenizer.json or its vocabulary is refused.
  tokenizer_json_contents finish();
  /// The document as a vocab.json, after the parse; throws naming the file when it is refused.
  token_vocabulary finish_vocab_json();

 private:
  bool scalar(nlohmann::json value);
  bool open(bool is_array);
  bool close();
  bool skip_value() {
    skipping_ = true;
    skip_depth_ = 0;
    return true;
  }
  /// Whether a scalar here is a top-level member that may be a vocab.json's token.
  bool at_top_level_number(const nlohmann::json& value) const {
    return reading_.may_be_vocab_json && reading_.options.vocabulary && tree_.depth() == 1 && value.is_number_integer();
  }

  const std::filesystem::path& file_;
  tokenizer_json_reading reading_;
  json_tree tree_;
  vocabulary_value vocabulary_;
  merges_value merges_;
  top_level_numbers numbers_;
  std::string top_level_key_;    // the key of the current top-level member
  bool skipping_ = false;        // inside a value that is dropped
  std::size_t skip_depth_ = 0;   // containers open inside it
  std::size_t depth_ = 0;        // containers open in the document
  bool value_is_model_ = false;  // the next top-level value is "model"'s
  bool in_model_ = false;        // the tree's second open container is the top-level "model" object
  bool model_object_seen_ = false, model_seen_ = false, vocabulary_seen_ = false;
};

bool tokenizer_json_reader::string(string_t& value) {
  if (vocabulary_.active()) {
    vocabulary_.scalar(nlohmann::json(value), &value);
    return true;
  }
  if (merges_.active()) {
    merges_.scalar(&value);
    return true;
  }
  return scalar(nlohmann::json(std::move(value)));
}

bool tokenizer_json_reader::scalar(nlohmann::json value) {
  if (vocabulary_.active())
    vocabulary_.scalar(value);
  else if (merges_.active())
    merges_.scalar(nullptr);
  else if (skipping_)
    skipping_ = skip_depth_ > 0;  // at depth 0 the skipped value was this scalar
  else if (at_top_level_number(value))
    numbers_.add(top_level_key_, value);
  else
    tree_.put(std::move(value));
  return true;
}

bool tokenizer_json_reader::open(bool is_array) {
  if (++depth_ > max_json_depth)
    malformed(file_, "nested deeper than " + std::to_string(max_json_depth) + " levels (corrupt or hostile file?)");
  if (vocabulary_.active()) {
    vocabulary_.open(is_array);
  } else if (merges_.active()) {
    merges_.open(is_array);
  } else if (skipping_) {
    ++skip_depth_;
  } else {
    tree_.open(is_array);
    if (tree_.depth() == 2) {
      in_model_ = value_is_model_ && !is_array;
      model_object_seen_ = model_object_seen_ || in_model_;
    }
  }
  return true;
}

bool tokenizer_json_reader::close() {
  --depth_;
  if (vocabulary_.active())
    vocabulary_.close();
  else if (merges_.active())
    merges_.close();
  else if (skipping_ && --skip_depth_ == 0)
    skipping_ = false;
  else if (!skipping_)
    tree_.close();
  return true;
}

bool tokenizer_json_reader::key(string_t& key) {
  if (vocabulary_.active()) {
    vocabulary_.key(std::move(key));
    return true;
  }
  if (skipping_ || merges_.active()) return true;
  const tokenizer_json_options& options = reading_.options;
  if (tree_.depth() == 1) {
    value_is_model_ = key == "model";
    if (value_is_model_ && options.vocabulary) {
      if (model_seen_) vocabulary_.refusal().record([&] { malformed(file_, "key \"model\" appears twice"); });
      model_seen_ = true;
    }
    if (key == "added_tokens" && !options.vocabulary) return skip_value();
    top_level_key_ = key;
  }
  if (tree_.depth() == 2 && in_model_) {
    if (key == "merges") {
      if (!options.merges) return skip_value();
      merges_.begin();
      return true;
    }
    if (key == "vocab") {
      if (!options.vocabulary) return skip_value();
      if (vocabulary_seen_)
        vocabulary_.refusal().record([&] { malformed(file_, "key \"vocab\" appears twice in model"); });
      vocabulary_seen_ = true;
      vocabulary_.begin();
      return true;
    }
  }
  tree_.key(std::move(key));
  return true;
}

/// The model's type, checked: "" when the file leaves it out (older files).
std::string tokenizer_model_type(const std::filesystem::path& file, const nlohmann::json& model) {
  if (!model.contains("type")) return {};
  if (!model["type"].is_string()) malformed(file, "model.type is not a string");
  std::string type = model["type"].get<std::string>();
  if (type != "BPE" && type != "WordPiece" && type != "WordLevel" && type != "Unigram")
    malformed(file, "unsupported tokenizer model type " + quoted_name(type));
  return type;
}

/// Adds the top-level added_tokens of `document` to `builder` and takes them out of it. They
/// repeat vocabulary entries: they go in after the whole vocabulary.
void add_added_tokens(const std::filesystem::path& file, nlohmann::json& document, vocabulary_builder& builder) {
  const auto added = document.find("added_tokens");
  if (added == document.end()) return;
  if (!added->is_array()) malformed(file, "added_tokens is not an array");
  for (const nlohmann::json& token : *added) {
    if (!token.is_object() || !token.contains("id") || !token.contains("content") || !token["content"].is_string())
      malformed(file, "added_tokens holds an entry without \"id\" and \"content\"");
    builder.add(token["content"].get<std::string>(), token["id"], true);
  }
  document.erase(added);
}

tokenizer_json_contents tokenizer_json_reader::finish() {
  tokenizer_json_contents contents;
  numbers_.restore(tree_.root());
  contents.declarations = std::move(tree_.root());
  contents.merges = merges_.take();
  nlohmann::json& document = contents.declarations;
  if (!reading_.options.vocabulary) return contents;
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
  vocabulary_.refusal().rethrow();
  add_added_tokens(file_, document, vocabulary_.builder());
  contents.vocabulary = vocabulary_.builder().finish();
  return contents;
}

token_vocabulary tokenizer_json_reader::finish_vocab_json() {
  const nlohmann::json& document = tree_.root();
  if (!document.is_object()) malformed(file_, "not a JSON object of token -> id");
  return numbers_.finish(document);
}

/// Parses the text of `file` with `reader`. The SAX parser keeps its own stack, and the reader
/// checks the depth as it goes (no DOM of the vocabulary is built that a deep value could
/// overflow): no pass of json_text_depth.
void parse_tokenizer_json(const std::filesystem::path& file, tokenizer_json_reader& reader) {
  nlohmann::json::sax_parse(read_text_file(file), &reader);
}

}  // namespace detail

tokenizer_json_contents read_tokenizer_json(const std::filesystem::path& file, const tokenizer_json_options& options) {
  detail::tokenizer_json_reader reader(file, {options, false});
  detail::parse_tokenizer_json(file, reader);
  return naming_file(file, [&] { return reader.finish(); });
}

json_vocabulary read_json_vocabulary(const std::filesystem::path& file, const tokenizer_json_options& options) {
  detail::tokenizer_json_reader reader(file, {options, true});
  detail::parse_tokenizer_json(file, reader);
  return naming_file(file, [&] {
    json_vocabulary result;
    result.is_tokenizer_json = reader.is_tokenizer_json();
    if (result.is_tokenizer_json)
      result.contents = reader.finish();
    else if (options.vocabulary)
      result.contents.vocabulary = reader.finish_vocab_json();
    return result;
  });
}

}  // namespace clp_transfer::io
