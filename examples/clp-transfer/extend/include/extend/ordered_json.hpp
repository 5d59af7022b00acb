// nlohmann::ordered_json in linear time. An ordered_json object is a vector of (key, value)
// pairs, and nlohmann's own parser, like operator[] and contains(), finds a key by a linear
// search, so reading or filling an object of n keys costs n^2 / 2 string comparisons, which a
// vocabulary of 150k tokens makes slower than everything else extend does. parse_ordered_json
// builds the same document with one hash set per object, and append_key adds a key known to be
// new at the end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/refusal.hpp"

namespace clp_transfer::extend {

/// Appends `key` -> `value` to the object `object` without looking for `key`: the caller knows it
/// is new (a duplicate key would be written twice).
/// @param[in,out] object  an ordered_json object
inline void append_key(nlohmann::ordered_json& object, std::string key, nlohmann::ordered_json value) {
  using container = nlohmann::ordered_json::object_t::Container;
  static_cast<container&>(object.get_ref<nlohmann::ordered_json::object_t&>())
      .emplace_back(std::move(key), std::move(value));
}

namespace detail {

/// nlohmann's SAX events built into an ordered_json, each object's keys checked in a hash set.
class ordered_builder : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  explicit ordered_builder(const std::string& origin) : origin_(origin) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool value) override { return put(value); }
  bool number_integer(number_integer_t value) override { return put(value); }
  bool number_unsigned(number_unsigned_t value) override { return put(value); }
  bool number_float(number_float_t value, const string_t&) override { return put(value); }
  bool string(string_t& value) override { return put(std::move(value)); }
  bool binary(binary_t& value) override { return put(nlohmann::ordered_json::binary(std::move(value))); }
  bool start_object(std::size_t) override { return open(nlohmann::ordered_json::object()); }
  bool key(string_t& value) override {
    if (!stack_.back().keys.insert(value).second)
      malformed_tokenizer(origin_, "holds the key " + quoted_token(value) + " twice in one object");
    key_ = std::move(value);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(nlohmann::ordered_json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    io::malformed_json(origin_, "not valid JSON", error);
  }

  nlohmann::ordered_json take() { return std::move(root_); }

 private:
  struct frame {
    nlohmann::ordered_json* container;
    std::unordered_set<std::string> keys;  // objects only
  };
  /// Puts `value` where the document expects its next value; returns where it went.
  nlohmann::ordered_json* place(nlohmann::ordered_json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    nlohmann::ordered_json& parent = *stack_.back().container;
    if (parent.is_array()) {
      parent.get_ref<nlohmann::ordered_json::array_t&>().push_back(std::move(value));
      return &parent.back();
    }
    append_key(parent, std::move(key_), std::move(value));
    return &parent.get_ref<nlohmann::ordered_json::object_t&>().back().second;
  }
  template <class Value>
  bool put(Value&& value) {
    place(nlohmann::ordered_json(std::forward<Value>(value)));
    return true;
  }
  bool open(nlohmann::ordered_json empty) {
    stack_.push_back({place(std::move(empty)), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& origin_;
  nlohmann::ordered_json root_;
  std::vector<frame> stack_;  // the open containers, outermost first; each is its parent's last value
  std::string key_;
};

}  // namespace detail

/// `text` parsed as an ordered_json, in time linear in its size.
/// @param[in] text    JSON text
/// @param[in] origin  its file, for messages
/// @throws io::malformed_file naming `origin` when it is not JSON, or an object holds a key twice
inline nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& origin) {
  detail::ordered_builder builder(origin);
  nlohmann::ordered_json::sax_parse(text, &builder);
  return builder.take();
}

}  // namespace clp_transfer::extend
