#include "io/tokenizer/spelling.hpp"

namespace clp_transfer {

namespace detail {

void flatten_steps(const nlohmann::json& component, const char* list_key, std::vector<const nlohmann::json*>& steps) {
  if (!component.is_object()) return;
  const auto type = component.find("type");
  if (type != component.end() && *type == "Sequence") {
    const auto list = component.find(list_key);
    if (list != component.end() && list->is_array())
      for (const nlohmann::json& step : *list) flatten_steps(step, list_key, steps);
    return;
  }
  steps.push_back(&component);
}

std::optional<std::string> literal_pattern(const nlohmann::json& step) {
  const auto pattern = step.find("pattern");
  if (pattern == step.end() || !pattern->is_object()) return std::nullopt;
  const auto literal = pattern->find("String");
  if (literal == pattern->end() || !literal->is_string()) return std::nullopt;
  return literal->get<std::string>();
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : " + ") + part;
  return text;
}

void read_decoder(const nlohmann::json& tokenizer, spelling_signals& found) {
  std::vector<const nlohmann::json*> steps;
  if (const auto it = tokenizer.find("decoder"); it != tokenizer.end()) flatten_steps(*it, "decoders", steps);
  for (const nlohmann::json* step : steps) {
    const std::string type = string_member(*step, "type");
    if (type == "ByteLevel") {
      found.add(token_spelling::byte_level, "decoder ByteLevel");
    } else if (type == "Metaspace") {
      const std::string mark = string_member(*step, "replacement", space_mark);
      if (mark == space_mark)
        found.add(token_spelling::sentencepiece, "decoder Metaspace '\xe2\x96\x81'");
      else
        found.unsupported.push_back("decoder Metaspace with replacement " + io::quoted_name(mark));
    } else if (type == "Replace") {
      // Replace '▁' -> ' ' is how SentencePiece-converted BPE tokenizers (Llama, Gemma) decode.
      const auto pattern = literal_pattern(*step);
      if (pattern == space_mark && string_member(*step, "content") == " ")
        found.add(token_spelling::sentencepiece, "decoder Replace '\xe2\x96\x81'->' '");
      else
        found.unsupported.push_back("decoder Replace of " + (pattern ? io::quoted_name(*pattern) : "a regex"));
    } else if (type == "ByteFallback") {
      found.byte_fallback.push_back("decoder ByteFallback");
    } else if (type == "WordPiece") {
      found.decoder_prefix = string_member(*step, "prefix", "##");
      found.add(token_spelling::wordpiece, "decoder WordPiece " + io::quoted_name(found.decoder_prefix));
    } else if (type == "Fuse" || type == "Strip") {
      // Joining and trimming the decoded pieces changes no token's bytes.
    } else {
      // BPEDecoder ("</w>" word ends), CTC, or a type this reader does not know.
      found.unsupported.push_back("decoder " + (type.empty() ? std::string("without a type") : type));
    }
  }
}

void read_pre_tokenizer(const nlohmann::json& tokenizer, spelling_signals& found) {
  std::vector<const nlohmann::json*> steps;
  if (const auto it = tokenizer.find("pre_tokenizer"); it != tokenizer.end())
    flatten_steps(*it, "pretokenizers", steps);
  for (const nlohmann::json* step : steps) {
    const std::string type = string_member(*step, "type");
    if (type == "ByteLevel") {
      found.add(token_spelling::byte_level, "pre_tokenizer ByteLevel");
    } else if (type == "Metaspace") {
      const std::string mark = string_member(*step, "replacement", space_mark);
      if (mark == space_mark)
        found.add(token_spelling::sentencepiece, "pre_tokenizer Metaspace '\xe2\x96\x81'");
      else
        found.unsupported.push_back("pre_tokenizer Metaspace with replacement " + io::quoted_name(mark));
    } else if (type == "BertPreTokenizer" || type == "Whitespace" || type == "WhitespaceSplit" ||
               type == "Punctuation" || type == "Digits" || type == "Split" || type == "CharDelimiterSplit" ||
               type == "UnicodeScripts") {
      // Splitting text into words leaves each piece's characters as they were.
      found.plain_compatible.push_back("pre_tokenizer " + type);
    } else {
      found.unsupported.push_back("pre_tokenizer " + (type.empty() ? std::string("without a type") : type));
    }
  }
}

void read_normalizer(const nlohmann::json& tokenizer, spelling_signals& found) {
  std::vector<const nlohmann::json*> steps;
  if (const auto it = tokenizer.find("normalizer"); it != tokenizer.end()) flatten_steps(*it, "normalizers", steps);
  for (const nlohmann::json* step : steps) {
    const std::string type = string_member(*step, "type");
    if (type == "Replace" && literal_pattern(*step) == " " && string_member(*step, "content") == space_mark)
      found.add(token_spelling::sentencepiece, "normalizer Replace ' '->'\xe2\x96\x81'");
    else if (type == "Prepend" && string_member(*step, "prepend") == space_mark)
      found.add(token_spelling::sentencepiece, "normalizer Prepend '\xe2\x96\x81'");
    // Other normalizers (NFC, Lowercase, BertNormalizer, Precompiled...) change the input
    // text, not what a token stands for.
  }
}

void read_model(const nlohmann::json& tokenizer, spelling_signals& found) {
  const auto model = tokenizer.find("model");
  if (model == tokenizer.end() || !model->is_object()) return;
  const std::string type = string_member(*model, "type");
  if (const auto it = model->find("byte_fallback"); it != model->end() && *it == true)
    found.byte_fallback.push_back("model byte_fallback");
  if (type == "WordPiece") {
    found.model_prefix = string_member(*model, "continuing_subword_prefix", "##");
    found.add(token_spelling::wordpiece, "model WordPiece " + io::quoted_name(found.model_prefix));
  } else if (const std::string prefix = string_member(*model, "continuing_subword_prefix"); !prefix.empty()) {
    // A BPE model may mark continuations like WordPiece does (empty in GPT-4o and Qwen).
    found.model_prefix = prefix;
    found.add(token_spelling::wordpiece, "model " + type + " continuing_subword_prefix " + io::quoted_name(prefix));
  }
  if (const std::string suffix = string_member(*model, "end_of_word_suffix"); !suffix.empty())
    found.unsupported.push_back("model end_of_word_suffix " + io::quoted_name(suffix));
  if (type == "WordLevel") found.plain_compatible.push_back("model WordLevel");
}

}  // namespace detail

tokenizer_spelling spelling_from_declarations(const nlohmann::json& tokenizer) {
  tokenizer_spelling spelling;
  if (!tokenizer.is_object()) {
    spelling.evidence = "unknown: the tokenizer is not a JSON object";
    return spelling;
  }
  detail::spelling_signals found;
  detail::read_decoder(tokenizer, found);
  detail::read_pre_tokenizer(tokenizer, found);
  detail::read_normalizer(tokenizer, found);
  detail::read_model(tokenizer, found);
  spelling.byte_fallback = !found.byte_fallback.empty();

  std::vector<token_spelling> named;
  for (token_spelling kind : {token_spelling::byte_level, token_spelling::sentencepiece, token_spelling::wordpiece})
    if (!found.kinds[static_cast<std::size_t>(kind)].empty()) named.push_back(kind);

  if (!found.unsupported.empty()) {
    spelling.evidence = "unknown: declares " + detail::joined(found.unsupported) + ", which no spelling covers";
    return spelling;
  }
  if (named.size() > 1) {
    std::vector<std::string> sides;
    for (token_spelling kind : named)
      sides.push_back(detail::joined(found.kinds[static_cast<std::size_t>(kind)]) + " (" +
                      std::string(clp::token_spelling_name(kind)) + ")");
    spelling.evidence = "unknown: contradicting declarations " + sides[0] + " and " + sides[1];
    return spelling;
  }
  if (named.size() == 1) {
    const token_spelling kind = named.front();
    if (kind == token_spelling::wordpiece) {
      if (!found.model_prefix.empty() && !found.decoder_prefix.empty() && found.model_prefix != found.decoder_prefix) {
        spelling.evidence = "unknown: the model's continuation prefix " + io::quoted_name(found.model_prefix) +
                            " differs from the decoder's " + io::quoted_name(found.decoder_prefix);
        return spelling;
      }
      spelling.continuing_prefix = found.model_prefix.empty() ? found.decoder_prefix : found.model_prefix;
    }
    spelling.kind = kind;
    spelling.evidence = detail::joined(found.kinds[static_cast<std::size_t>(kind)]);
  } else if (!found.plain_compatible.empty()) {
    spelling.kind = token_spelling::plain;
    spelling.evidence = detail::joined(found.plain_compatible);
  } else {
    spelling.evidence = "unknown: declares no decoder, pre-tokenizer or model type that tells its spelling";
    return spelling;
  }
  if (spelling.byte_fallback) spelling.evidence += "; byte fallback: " + detail::joined(found.byte_fallback);
  return spelling;
}

namespace detail {

std::string tokenizer_class(const nlohmann::ordered_json* tokenizer_config) {
  if (!tokenizer_config || !tokenizer_config->is_object()) return {};
  const auto it = tokenizer_config->find("tokenizer_class");
  return it != tokenizer_config->end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace detail

tokenizer_spelling spelling_of_vocab_file(const std::filesystem::path& file,
                                          const nlohmann::ordered_json* tokenizer_config) {
  tokenizer_spelling spelling;
  if (file.filename() == "encoder.json") {
    spelling.kind = token_spelling::byte_level;
    spelling.evidence = "encoder.json (OpenAI's GPT-2 format, always byte-level)";
    return spelling;
  }
  if (std::string name = detail::tokenizer_class(tokenizer_config); !name.empty()) {
    const std::string shown = name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "Fast") == 0) name.resize(name.size() - 4);
    if (std::find(byte_level_tokenizer_classes.begin(), byte_level_tokenizer_classes.end(), name) !=
        byte_level_tokenizer_classes.end()) {
      spelling.kind = token_spelling::byte_level;
      spelling.evidence = "tokenizer_config.json tokenizer_class " + shown;
    } else {
      spelling.evidence = "unknown: tokenizer_config.json names tokenizer_class " + shown +
                          ", not a byte-level BPE, and " + file.filename().string() + " declares nothing";
    }
    return spelling;
  }
  const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  if (std::filesystem::exists(folder / "merges.txt")) {
    spelling.kind = token_spelling::byte_level;
    spelling.evidence = file.filename().string() + " beside merges.txt (GPT-2's byte-level BPE layout)";
    return spelling;
  }
  spelling.evidence = "unknown: " + file.filename().string() +
                      " declares no spelling, and neither merges.txt nor a tokenizer_class is beside it";
  return spelling;
}

tokenizer_spelling spelling_of_sentencepiece_model(const io::sentencepiece_model& model,
                                                   const std::filesystem::path& file) {
  tokenizer_spelling spelling;
  const std::string described = file.filename().string() + " (SentencePiece " + model.model_type + " model";
  if (!model.escape_whitespaces) {
    spelling.evidence = "unknown: " + described + " that does not escape whitespace as '" + detail::space_mark +
                        "'), which no spelling covers";
    return spelling;
  }
  spelling.kind = token_spelling::sentencepiece;
  spelling.evidence = described + ", whitespace escaped as '" + detail::space_mark + "')";
  std::vector<std::string> fallback;
  if (model.byte_fallback) fallback.push_back("trainer_spec byte_fallback");
  if (model.has_byte_pieces()) fallback.push_back("byte pieces <0xNN>");
  spelling.byte_fallback = !fallback.empty();
  if (spelling.byte_fallback) spelling.evidence += "; byte fallback: " + detail::joined(fallback);
  return spelling;
}

tokenizer_spelling spelling_of_vocab_txt(const std::filesystem::path& file,
                                         const nlohmann::ordered_json* tokenizer_config) {
  tokenizer_spelling spelling;
  const std::string described = file.filename().string() + " (WordPiece: one token a line, continuations \"##\")";
  if (std::string name = detail::tokenizer_class(tokenizer_config); !name.empty()) {
    const std::string shown = name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "Fast") == 0) name.resize(name.size() - 4);
    if (std::find(wordpiece_tokenizer_classes.begin(), wordpiece_tokenizer_classes.end(), name) ==
        wordpiece_tokenizer_classes.end()) {
      spelling.evidence = "unknown: tokenizer_config.json names tokenizer_class " + shown +
                          ", not a WordPiece tokenizer, and " + file.filename().string() + " declares nothing";
      return spelling;
    }
    spelling.evidence = "tokenizer_config.json tokenizer_class " + shown + "; ";
  }
  spelling.kind = token_spelling::wordpiece;
  spelling.continuing_prefix = "##";
  spelling.evidence += described;
  return spelling;
}

tokenizer_spelling read_tokenizer_spelling(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(path);
    if (!source) io::no_vocabulary_file(path);
    return read_tokenizer_spelling(source->file);
  }
  if (!std::filesystem::exists(path)) io::missing_path(path);
  if (path.extension() == ".model") return spelling_of_sentencepiece_model(io::read_sentencepiece_model(path), path);
  if (path.filename() == "vocab.txt") {
    const auto config = tokenizer_config_beside(path);
    return spelling_of_vocab_txt(path, config ? &*config : nullptr);
  }
  if (path.filename() != "vocab.json" && path.filename() != "encoder.json") {
    const io::json_vocabulary read = io::read_json_vocabulary(path, io::tokenizer_json_options::declarations_only());
    if (read.is_tokenizer_json) return spelling_from_declarations(read.contents.declarations);
  }
  const auto config = tokenizer_config_beside(path);
  return spelling_of_vocab_file(path, config ? &*config : nullptr);
}

}  // namespace clp_transfer
