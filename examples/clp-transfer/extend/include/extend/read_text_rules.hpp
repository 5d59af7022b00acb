// text_rules read from a parsed tokenizer.json's normalizer and pre_tokenizer (see
// pre_tokenizer.hpp for what is supported); everything else is refused naming the step.
#pragma once

#include <string>
#include <vector>

#include "extend/pre_tokenizer.hpp"
#include "extend/refusal.hpp"

namespace clp_transfer::extend {

namespace detail {

/// The expressions of split_rule, as tokenizer.json writes them in a Split's "Regex".
inline const char* const gpt2_expression =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline const char* const llama3_expression =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline const char* const qwen2_expression =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// The steps of a component, Sequence components flattened in order; none for null.
template <class Json>
void flatten(const Json& component, const char* list_key, std::vector<const Json*>& steps) {
  if (!component.is_object()) return;
  const auto type = component.find("type");
  if (type != component.end() && *type == "Sequence") {
    const auto list = component.find(list_key);
    if (list != component.end() && list->is_array())
      for (const Json& step : *list) flatten(step, list_key, steps);
    return;
  }
  steps.push_back(&component);
}

template <class Json>
std::string text_member(const Json& object, const char* key, std::string otherwise = {}) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->template get<std::string>() : otherwise;
}

template <class Json>
bool flag_member(const Json& object, const char* key, bool otherwise) {
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->template get<bool>() : otherwise;
}

/// A Split step's split_rule; refuses another expression or behaviour.
template <class Json>
split_rule split_of(const Json& step, const std::string& origin) {
  std::string expression;
  if (const auto pattern = step.find("pattern"); pattern != step.end() && pattern->is_object())
    expression = text_member(*pattern, "Regex");
  const std::string behavior = text_member(step, "behavior");
  const bool invert = flag_member(step, "invert", false);
  // Isolated keeps each match as a pre-token; Removed with invert keeps the matches too.
  if (!((behavior == "Isolated" && !invert) || (behavior == "Removed" && invert)))
    unsupported(origin, "pre_tokenizer Split with behavior " + quoted_token(behavior) +
                            " cannot be extended (only Isolated splits are supported)");
  if (expression == gpt2_expression) return split_rule::gpt2;
  if (expression == llama3_expression) return split_rule::llama3;
  if (expression == qwen2_expression) return split_rule::qwen2;
  unsupported(origin, "pre_tokenizer Split with the expression " + quoted_token(expression.substr(0, 60)) +
                          (expression.size() > 60 ? "..." : "") +
                          " cannot be extended (only GPT-2's, Llama 3's and Qwen2's expressions are supported)");
}

/// The pre_tokenizer's steps into `rules`.
template <class Json>
void read_pre_tokenizer_steps(const Json& tokenizer, const std::string& origin, text_rules& rules, bool& byte_level,
                              bool& metaspace) {
  std::vector<const Json*> steps;
  if (const auto it = tokenizer.find("pre_tokenizer"); it != tokenizer.end()) flatten(*it, "pretokenizers", steps);
  for (const Json* step : steps) {
    const std::string type = text_member(*step, "type");
    if (type == "ByteLevel") {
      byte_level = true;
      rules.add_prefix_space = flag_member(*step, "add_prefix_space", true);
      if (flag_member(*step, "use_regex", true)) {
        if (rules.split != split_rule::none)
          unsupported(origin, "pre_tokenizer splits twice (a Split and ByteLevel's own expression)");
        rules.split = split_rule::gpt2;
      }
    } else if (type == "Split" && !byte_level) {
      if (rules.split != split_rule::none) unsupported(origin, "pre_tokenizer has two Split steps");
      rules.split = split_of(*step, origin);
    } else if (type == "Metaspace") {
      if (text_member(*step, "replacement", space_mark) != space_mark)
        unsupported(origin, "pre_tokenizer Metaspace with a replacement other than '\xE2\x96\x81'");
      metaspace = true;
      const std::string scheme = text_member(*step, "prepend_scheme", "always");
      const bool add_prefix = flag_member(*step, "add_prefix_space", true);
      rules.prepend = scheme == "never" || !add_prefix ? space_mark_prepend::never : space_mark_prepend::unless_marked;
      rules.split_at_space_marks = flag_member(*step, "split", true);
    } else {
      unsupported(origin, "pre_tokenizer " + (type.empty() ? std::string("without a type") : type) +
                              " cannot be extended (supported: ByteLevel, Split before it, Metaspace)");
    }
  }
}

/// The normalizer's steps into `rules`: NFC (taken as applied), or '▁' for spaces.
template <class Json>
void read_normalizer_steps(const Json& tokenizer, const std::string& origin, text_rules& rules, bool& metaspace) {
  std::vector<const Json*> steps;
  if (const auto it = tokenizer.find("normalizer"); it != tokenizer.end()) flatten(*it, "normalizers", steps);
  for (const Json* step : steps) {
    const std::string type = text_member(*step, "type");
    std::string literal;
    if (const auto pattern = step->find("pattern"); pattern != step->end() && pattern->is_object())
      literal = text_member(*pattern, "String");
    if (type == "NFC") continue;
    if (type == "Prepend" && text_member(*step, "prepend") == space_mark) {
      rules.prepend = space_mark_prepend::always;
    } else if (type == "Replace" && literal == " " && text_member(*step, "content") == space_mark) {
      metaspace = true;
    } else {
      unsupported(origin, "normalizer " + (type.empty() ? std::string("without a type") : type) +
                              " cannot be extended (supported: NFC, Prepend '\xE2\x96\x81', Replace ' ' -> "
                              "'\xE2\x96\x81')");
    }
  }
}

}  // namespace detail

/// How the tokenizer.json `tokenizer` turns text into pre-tokens; refuses what pre_tokenizer.hpp
/// does not support, and a tokenizer whose spelling is neither byte-level nor metaspace.
/// @param[in] tokenizer  a parsed tokenizer.json (nlohmann::json or ordered_json)
/// @param[in] origin     its file, for messages
template <class Json>
text_rules read_text_rules(const Json& tokenizer, const std::string& origin) {
  text_rules rules;
  bool byte_level = false, metaspace = false;
  detail::read_pre_tokenizer_steps(tokenizer, origin, rules, byte_level, metaspace);
  detail::read_normalizer_steps(tokenizer, origin, rules, metaspace);
  if (byte_level == metaspace)
    unsupported(origin, byte_level ? "declares both byte-level and '\xE2\x96\x81' spaces"
                                   : "declares no ByteLevel pre-tokenizer and no '\xE2\x96\x81' for spaces, so "
                                     "extend cannot tell how its tokens spell bytes");
  if (rules.split != split_rule::none && !byte_level)
    unsupported(origin, "a Split pre-tokenizer without ByteLevel cannot be extended");
  if (byte_level && rules.prepend != space_mark_prepend::never)
    unsupported(origin, "declares both byte-level and '\xE2\x96\x81' spaces");
  rules.spelling = byte_level ? symbol_spelling::byte_level : symbol_spelling::metaspace;
  static const char* const names[] = {"whole text", "GPT-2 expression", "Llama 3 expression", "Qwen2 expression"};
  rules.description = byte_level ? std::string("byte-level, ") + names[static_cast<int>(rules.split)]
                                 : std::string("'\xE2\x96\x81' for spaces") +
                                       (rules.split_at_space_marks ? ", split at each '\xE2\x96\x81'" : ", whole text");
  return rules;
}

}  // namespace clp_transfer::extend
