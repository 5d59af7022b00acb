// A WordPiece model's files as extend reads and writes them: a tokenizer.json whose model is
// WordPiece (model.vocab, unk_token, continuing_subword_prefix "##", max_input_chars_per_word,
// a BertNormalizer and a BertPreTokenizer), or a bare vocab.txt (read by the file layer's
// reader) whose text rules come from tokenizer_config.json (do_lower_case, strip_accents,
// tokenize_chinese_chars; without them bert-base-uncased's: lowercase, accents stripped, CJK
// ideographs split). Written back: model.vocab and vocab.txt with the new pieces appended, every
// old key, line and byte as it was. What extend cannot reproduce is refused naming the file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/bert_text.hpp"
#include "extend/extension.hpp"
#include "extend/ordered_json.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/read_text_rules.hpp"
#include "extend/refusal.hpp"
#include "extend/tokenizer_writing.hpp"
#include "extend/wordpiece_model.hpp"
#include "io/json/file.hpp"
#include "io/tokenizer/wordpiece.hpp"

namespace clp_transfer::extend {

namespace detail {

/// The rules' description for a report.
inline std::string bert_description(const bert_normalizer& n) {
  return std::string("BERT's basic tokenizer (") + (n.lowercase ? "lowercase" : "cased") +
         (n.strip_accents ? ", accents stripped" : "") + (n.chinese_characters ? ", CJK split" : "") + ")";
}

/// The unknown piece's id; refuses a vocabulary without it.
inline token_id unknown_id(const std::unordered_map<std::string, token_id>& ids, const std::string& unknown,
                           const std::string& origin, const std::string& where) {
  const auto it = ids.find(unknown);
  if (it == ids.end())
    malformed_tokenizer(origin, where + " " + quoted_token(unknown) +
                                    " is not in the vocabulary: WordPiece writes a word it cannot match as it");
  return it->second;
}

}  // namespace detail

/// The WordPiece model of the tokenizer.json `tokenizer` (model.type "WordPiece").
/// @throws io::malformed_file for an impossible model (no unk_token in model.vocab, the empty
///         token), clp::invalid_argument for one extend does not reproduce (another prefix, a
///         normaliser or pre-tokenizer other than BERT's)
template <class Json>
wordpiece_model read_wordpiece_model(const Json& tokenizer, const std::string& origin) {
  if (!tokenizer.is_object()) malformed_tokenizer(origin, "is not a JSON object");
  const auto model_it = tokenizer.find("model");
  if (model_it == tokenizer.end() || !model_it->is_object()) malformed_tokenizer(origin, "has no \"model\" object");
  const Json& json_model = *model_it;
  wordpiece_model model;
  const auto vocab = json_model.find("vocab");
  if (vocab == json_model.end()) malformed_tokenizer(origin, "model has no \"vocab\"");
  if (vocab->is_object() && vocab->contains(""))
    malformed_tokenizer(origin, "model.vocab holds the empty token, which no word is");
  std::unordered_map<std::string, token_id> ids;
  detail::read_vocab(*vocab, origin, model.vocabulary, ids);
  const auto unknown = json_model.find("unk_token");
  if (unknown == json_model.end() || !unknown->is_string())
    malformed_tokenizer(origin, "model has no \"unk_token\": WordPiece writes a word it cannot match as it");
  model.vocabulary.unknown = detail::unknown_id(ids, unknown->template get<std::string>(), origin, "model.unk_token");
  if (detail::text_member(json_model, "continuing_subword_prefix", continuation_prefix) != continuation_prefix)
    unsupported(origin, "model.continuing_subword_prefix " +
                            quoted_token(detail::text_member(json_model, "continuing_subword_prefix")) +
                            " cannot be extended: extend writes \"##\" continuation pieces");
  if (const auto max = json_model.find("max_input_chars_per_word"); max != json_model.end() && !max->is_null()) {
    if (!max->is_number_integer() || max->template get<std::int64_t>() < 1)
      malformed_tokenizer(origin, "model.max_input_chars_per_word is not a count of characters from 1");
    model.max_input_chars_per_word = max->template get<std::size_t>();
  }
  text_rules& rules = model.vocabulary.rules;
  rules.spelling = symbol_spelling::wordpiece;
  std::vector<const Json*> steps;
  if (const auto it = tokenizer.find("normalizer"); it != tokenizer.end()) detail::flatten(*it, "normalizers", steps);
  rules.bert = {false, false, false, false};
  for (const Json* step : steps) {
    if (detail::text_member(*step, "type") != "BertNormalizer")
      unsupported(origin, "normalizer " + quoted_token(detail::text_member(*step, "type")) +
                              " cannot be extended with a WordPiece model (supported: BertNormalizer)");
    rules.bert.clean_text = detail::flag_member(*step, "clean_text", true);
    rules.bert.chinese_characters = detail::flag_member(*step, "handle_chinese_chars", true);
    rules.bert.lowercase = detail::flag_member(*step, "lowercase", true);
    rules.bert.strip_accents = detail::flag_member(*step, "strip_accents", rules.bert.lowercase);
  }
  steps.clear();
  if (const auto it = tokenizer.find("pre_tokenizer"); it != tokenizer.end())
    detail::flatten(*it, "pretokenizers", steps);
  if (steps.size() != 1 || detail::text_member(*steps.front(), "type") != "BertPreTokenizer")
    unsupported(origin, "a WordPiece model's pre_tokenizer must be one BertPreTokenizer for extend");
  rules.description = detail::bert_description(rules.bert);
  if (const auto added = tokenizer.find("added_tokens"); added != tokenizer.end() && added->is_array())
    for (const Json& entry : *added)
      if (const auto id = entry.find("id"); id != entry.end() && id->is_number_integer() && *id >= 0)
        model.vocabulary.reserved_ids.push_back(id->template get<token_id>());
  return model;
}

/// The WordPiece model of a bare vocab.txt `file` (read by the file layer's reader), its text
/// rules from `config` (the folder's tokenizer_config.json, null when absent); see the file's
/// comment.
/// @throws io::malformed_file naming `file` for an empty line, or no unknown piece
inline wordpiece_model read_vocab_txt_model(const std::filesystem::path& file, const nlohmann::json& config) {
  const io::token_vocabulary vocabulary = io::read_wordpiece_vocab(file);
  wordpiece_model model;
  std::unordered_map<std::string, token_id> ids;
  model.vocabulary.tokens.assign(std::size_t(vocabulary.size), std::string());
  for (const auto& [token, id] : vocabulary.ids) {
    if (token.empty())
      malformed_tokenizer(file.string(), "line " + std::to_string(id + 1) +
                                             " is empty: an empty token is no word, and extend "
                                             "appends lines after every line the file has");
    model.vocabulary.tokens[std::size_t(id)] = token;
    ids.emplace(token, token_id(id));
  }
  const auto flag = [&](const char* key, bool otherwise) {
    const auto it = config.is_object() ? config.find(key) : config.end();
    return config.is_object() && it != config.end() && it->is_boolean() ? it->get<bool>() : otherwise;
  };
  std::string unknown = "[UNK]";
  if (config.is_object())
    if (const auto it = config.find("unk_token"); it != config.end()) {
      if (it->is_string()) unknown = it->get<std::string>();
      if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        unknown = (*it)["content"].get<std::string>();
    }
  model.vocabulary.unknown = detail::unknown_id(ids, unknown, file.string(), "the unknown piece");
  text_rules& rules = model.vocabulary.rules;
  rules.spelling = symbol_spelling::wordpiece;
  rules.bert.clean_text = true;
  rules.bert.lowercase = flag("do_lower_case", true);
  rules.bert.strip_accents = flag("strip_accents", rules.bert.lowercase);
  rules.bert.chinese_characters = flag("tokenize_chinese_chars", true);
  rules.description = detail::bert_description(rules.bert);
  return model;
}

/// The tokenizer.json `document` (a WordPiece model's, the one the extension was built from)
/// with the new pieces appended to model.vocab.
inline nlohmann::ordered_json extended_wordpiece_json(nlohmann::ordered_json document, const bpe_extension& extension,
                                                      const std::string& origin) {
  auto model = document.find("model");
  if (model == document.end() || !model->is_object() || !model->contains("vocab"))
    malformed_tokenizer(origin, "has no \"model\" object with a \"vocab\"");
  detail::append_tokens((*model)["vocab"], extension, origin, "model.vocab");
  return document;
}

/// The vocab.txt `text` (`source_size` lines) with one line per new piece appended, in id
/// order, with the line end the file uses. The new ids must continue the lines.
/// @throws io::malformed_file naming `origin` when its lines are not `source_size`, or a new
///         id is not the next line
inline std::string extended_vocab_txt(std::string text, const bpe_extension& extension, std::size_t source_size,
                                      const std::string& origin) {
  const io::token_vocabulary lines = io::parse_wordpiece_vocab(origin, text);
  if (std::size_t(lines.size) != source_size)
    malformed_tokenizer(origin, "holds " + std::to_string(lines.size) + " lines, but the tokenizer the extension " +
                                    "was built from has " + std::to_string(source_size) + " pieces");
  const std::string end = text.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  if (!text.empty() && text.back() != '\n' && text.back() != '\r') text += end;
  std::vector<const written_token*> in_order;
  for (const written_token& token : extension.written) in_order.push_back(&token);
  std::sort(in_order.begin(), in_order.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  std::size_t next = source_size;
  for (const written_token* token : in_order) {
    if (std::size_t(token->id) != next)
      malformed_tokenizer(origin, "would need line " + std::to_string(token->id + 1) + " for the new piece " +
                                      quoted_token(extension.table.token(token->id)) + " after " +
                                      std::to_string(next) + " lines: a vocab.txt's ids are its lines");
    text += extension.table.token(token->id) + end;
    ++next;
  }
  return text;
}

}  // namespace clp_transfer::extend
