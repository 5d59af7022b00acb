// How a tokenizer spells the bytes its tokens stand for, read from the tokenizer's own
// declarations (tokenizer.json's decoder, pre_tokenizer, normalizer and model), never guessed
// from the characters of its tokens. Matching two vocabularies by bytes needs it; a spelling
// that cannot be told makes the program warn and match exactly.
#pragma once

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <clp/token_bytes.hpp>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/library_names.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/tokenizer_json.hpp"

namespace clp_transfer {

/// A tokenizer's spelling as its files declare it.
struct tokenizer_spelling {
  /// The spelling, or nullopt when the declarations do not tell it (or contradict each
  /// other): match this vocabulary exactly.
  std::optional<token_spelling> kind;
  /// Whether "<0xNN>" pieces are declared to stand for one byte each (model.byte_fallback,
  /// or a ByteFallback decoder). Reported for every kind; SentencePiece is where it matters.
  bool byte_fallback = false;
  /// wordpiece only: the prefix that marks a word's continuation (model and decoder agree).
  std::string continuing_prefix;
  /// What decided, for the report: "decoder ByteLevel + pre_tokenizer ByteLevel", or for an
  /// unknown spelling "unknown: <reason>". Byte fallback's declarations follow "; byte
  /// fallback: ".
  std::string evidence;
};

namespace detail {

/// The steps of one tokenizer.json component, with Sequence components flattened in order.
/// @param[in] component  tokenizer["decoder"] and the like; null or absent gives no steps
/// @param[in] list_key   the Sequence's list: "decoders", "pretokenizers" or "normalizers"
/// @param[out] steps     receives pointers into `component`
void flatten_steps(const nlohmann::json& component, const char* list_key, std::vector<const nlohmann::json*>& steps);

/// The string member `key` of `object`, or `otherwise` when absent or not a string.
inline std::string string_member(const nlohmann::json& object, const char* key, std::string otherwise = {}) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : otherwise;
}

/// A Replace step's literal pattern ({"String": "x"}), or nullopt for a regex or none.
std::optional<std::string> literal_pattern(const nlohmann::json& step);

/// What one declaration says: a spelling, byte fallback, something no spelling covers, or
/// that plain text is compatible with it.
struct spelling_signals {
  std::array<std::vector<std::string>, 4> kinds;  // by clp::token_spelling: the declarations for it
  std::vector<std::string> byte_fallback;
  std::vector<std::string> unsupported;
  std::vector<std::string> plain_compatible;
  std::string model_prefix, decoder_prefix;  // WordPiece continuation prefixes, when declared

  void add(token_spelling kind, std::string what) { kinds[static_cast<std::size_t>(kind)].push_back(std::move(what)); }
};

inline const std::string space_mark = "\xe2\x96\x81";  // U+2581, SentencePiece's "▁"

/// Joins `parts` with " + ".
std::string joined(const std::vector<std::string>& parts);

void read_decoder(const nlohmann::json& tokenizer, spelling_signals& found);

void read_pre_tokenizer(const nlohmann::json& tokenizer, spelling_signals& found);

void read_normalizer(const nlohmann::json& tokenizer, spelling_signals& found);

void read_model(const nlohmann::json& tokenizer, spelling_signals& found);

}  // namespace detail

/// The spelling a tokenizer.json declares. Reads only the small sections (decoder,
/// pre_tokenizer, normalizer, and model's type, byte_fallback, continuing_subword_prefix,
/// end_of_word_suffix), so `tokenizer` may come without model.vocab and model.merges.
///
/// Rules: each declaration below names a spelling; exactly one spelling named gives it,
/// two give "unknown" (they contradict), and a declaration no spelling covers (a
/// BPEDecoder's "</w>", a Metaspace with another mark, an unknown decoder) gives "unknown".
///   byte_level:    decoder ByteLevel, pre_tokenizer ByteLevel
///   sentencepiece: decoder Metaspace "▁", decoder Replace "▁"->" ", pre_tokenizer Metaspace
///                  "▁", normalizer Replace " "->"▁", normalizer Prepend "▁"
///   wordpiece:     model WordPiece, decoder WordPiece, a non-empty continuing_subword_prefix
/// With none of those, plain when the model is WordLevel or the pre-tokenizer only splits
/// text (Whitespace, BertPreTokenizer, Split...); otherwise unknown, since a tokenizer that
/// declares nothing may still spell bytes in a way it does not say.
/// Byte fallback: model.byte_fallback true or a ByteFallback decoder.
/// @param[in] tokenizer  a parsed tokenizer.json (an object)
tokenizer_spelling spelling_from_declarations(const nlohmann::json& tokenizer);

/// tokenizer_config.json classes of byte-level BPE tokenizers kept as vocab.json +
/// merges.txt (the "Fast" variants are matched by dropping the suffix).
inline constexpr std::array<std::string_view, 14> byte_level_tokenizer_classes = {
    "GPT2Tokenizer",       "RobertaTokenizer", "BartTokenizer",     "LongformerTokenizer", "LEDTokenizer",
    "BlenderbotTokenizer", "MvpTokenizer",     "DebertaTokenizer",  "CodeGenTokenizer",    "GPTNeoXTokenizer",
    "Qwen2Tokenizer",      "WhisperTokenizer", "MarkupLMTokenizer", "LayoutLMv3Tokenizer"};

namespace detail {

/// The tokenizer_class a tokenizer_config.json names, or "" (no file, not an object, no class).
std::string tokenizer_class(const nlohmann::ordered_json* tokenizer_config);

}  // namespace detail

/// The spelling of a vocab.json or encoder.json, which declares none itself: byte_level for an
/// encoder.json (OpenAI's GPT-2 format, always byte-level); for a vocab.json, byte_level when
/// the tokenizer_config.json beside it names a byte-level BPE class
/// (byte_level_tokenizer_classes), unknown when it names another class, else byte_level when
/// merges.txt is beside it (the slow GPT-2 layout), else unknown.
/// @param[in] file              vocab.json or encoder.json (or any file of token -> id)
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
tokenizer_spelling spelling_of_vocab_file(const std::filesystem::path& file,
                                          const nlohmann::ordered_json* tokenizer_config);

/// The spelling of a SentencePiece model, which its normaliser declares: sentencepiece when it
/// escapes whitespace as "▁" (normalizer_spec.escape_whitespaces, true unless said otherwise),
/// else unknown. Byte fallback: trainer_spec.byte_fallback, or pieces of type byte.
/// @param[in] model  as read
/// @param[in] file   its file, whose name the evidence gives
tokenizer_spelling spelling_of_sentencepiece_model(const io::sentencepiece_model& model,
                                                   const std::filesystem::path& file);

/// tokenizer_config.json classes of WordPiece tokenizers kept as vocab.txt (the "Fast" variants
/// are matched by dropping the suffix).
inline constexpr std::array<std::string_view, 16> wordpiece_tokenizer_classes = {"BertTokenizer",
                                                                                 "DistilBertTokenizer",
                                                                                 "ElectraTokenizer",
                                                                                 "MobileBertTokenizer",
                                                                                 "SqueezeBertTokenizer",
                                                                                 "LayoutLMTokenizer",
                                                                                 "LxmertTokenizer",
                                                                                 "RetriBertTokenizer",
                                                                                 "FunnelTokenizer",
                                                                                 "MPNetTokenizer",
                                                                                 "ConvBertTokenizer",
                                                                                 "DPRContextEncoderTokenizer",
                                                                                 "DPRQuestionEncoderTokenizer",
                                                                                 "DPRReaderTokenizer",
                                                                                 "RealmTokenizer",
                                                                                 "TapasTokenizer"};

/// The spelling of a vocab.txt, which declares none itself: wordpiece with "##" continuations,
/// the format's own, unless the tokenizer_config.json beside it names a class that is not a
/// WordPiece tokenizer (wordpiece_tokenizer_classes): then unknown.
/// @param[in] file              vocab.txt
/// @param[in] tokenizer_config  the tokenizer_config.json beside it, as read; null when absent
tokenizer_spelling spelling_of_vocab_txt(const std::filesystem::path& file,
                                         const nlohmann::ordered_json* tokenizer_config);

/// The tokenizer_config.json beside `file`, read when it is there; throws naming it when it is
/// not JSON.
inline std::optional<nlohmann::ordered_json> tokenizer_config_beside(const std::filesystem::path& file) {
  const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  return io::read_json_file_if_present<nlohmann::ordered_json>(folder / "tokenizer_config.json");
}

/// The spelling of the tokenizer at `path`, which is read as the program reads vocabularies:
///   - a folder: the file io::find_vocabulary_file names, as below;
///   - a tokenizer.json (or any JSON object whose "model" is an object): its declarations, see
///     spelling_from_declarations;
///   - a SentencePiece model (*.model): see spelling_of_sentencepiece_model;
///   - a vocab.txt: see spelling_of_vocab_txt;
///   - a vocab.json or encoder.json (or any other object of token -> id): see
///     spelling_of_vocab_file.
/// Throws naming the file when it cannot be read or is not of its format.
/// @param[in] path  model folder or tokenizer file
tokenizer_spelling read_tokenizer_spelling(const std::filesystem::path& path);

}  // namespace clp_transfer
