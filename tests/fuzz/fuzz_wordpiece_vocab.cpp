// Fuzz target: a WordPiece vocab.txt as extend reads and writes it (extend/wordpiece_files.hpp on
// the file layer's io/tokenizer/wordpiece.hpp), and BERT's basic tokenizer and encoder on its text.
// The input is the vocab.txt; after a line "\x01" (when it has one) come the tokens to add, one a
// line (a leading space: a word start), else " zz" and "zz". An accepted vocabulary has one
// non-empty piece a line and its unknown piece. Extended, the vocab.txt written reads back as
// the same lines at the same ids, then each new piece at its id, its old bytes kept; the
// tokenizer.json written from it reads back with the same pieces; each new piece is what the
// extended encoder makes of its own text (a word start) or of a word extend finds for it (a
// continuation); and every word of the input's text encodes to ids of the vocabulary.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "extend/bert_text.hpp"
#include "extend/wordpiece_files.hpp"
#include "extend/wordpiece_model.hpp"
#include "fuzz_vocabulary_checks.hpp"
#include "io/tokenizer/wordpiece.hpp"

using namespace clp_fuzz;

namespace fuzz_wordpiece_vocab {

namespace x = clp_transfer::extend;

/// The tokenizer.json of `model`: its pieces as a WordPiece model.vocab, BERT's text rules.
nlohmann::ordered_json tokenizer_json_of(const x::wordpiece_model& model) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < model.vocabulary.tokens.size(); ++id) vocab[model.vocabulary.tokens[id]] = id;
  const x::bert_normalizer& n = model.vocabulary.rules.bert;
  return {{"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", n.clean_text},
            {"handle_chinese_chars", n.chinese_characters},
            {"strip_accents", n.strip_accents},
            {"lowercase", n.lowercase}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", model.vocabulary.tokens.at(std::size_t(*model.vocabulary.unknown))},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", model.max_input_chars_per_word},
            {"vocab", vocab}}}};
}

void check_accepted(const fs::path& path, const std::string& text, const x::wordpiece_model& model,
                    const std::vector<std::string>& asked) {
  const std::vector<std::string>& tokens = model.vocabulary.tokens;
  for (const std::string& token : tokens)
    if (token.empty()) finding("an empty piece was accepted");
  if (!model.vocabulary.unknown) finding("a vocabulary without its unknown piece was accepted");
  const x::bpe_extension extension = x::extend_wordpiece(model, asked);
  const std::string written = x::extended_vocab_txt(text, extension, tokens.size(), path.string());
  if (written.compare(0, text.size(), text) != 0) finding("an old byte of vocab.txt changed");
  const clp_transfer::io::token_vocabulary again = clp_transfer::io::parse_wordpiece_vocab(path, written);
  if (std::size_t(again.size) != tokens.size() + extension.written.size()) finding("new lines did not read back");
  for (std::size_t id = 0; id < tokens.size(); ++id)
    if (again.ids.at(tokens[id]) != std::int64_t(id)) finding("an old piece moved", tokens[id]);
  const x::wordpiece_table table = x::extended_wordpiece_table(model, extension);
  const std::vector<x::token_id> starts = [&] {
    std::vector<x::token_id> out;
    const x::wordpiece_table source(model);
    for (x::token_id id = 0; id < source.size(); ++id) {
      const std::string& piece = source.token(id);
      const auto c = x::decode_characters(piece);
      if (c.size() == 1 && !x::is_whitespace(c[0].code_point) && !x::is_bert_punctuation(c[0].code_point) &&
          !x::is_bert_chinese(c[0].code_point) &&
          x::bert_words(piece, model.vocabulary.rules.bert) == std::vector<std::string>{piece})
        out.push_back(id);
    }
    return out;
  }();
  for (const x::written_token& token : extension.written) {
    const std::string& piece = extension.table.token(token.id);
    if (again.ids.at(piece) != token.id) finding("a new piece is not at its id", piece);
    const bool continuation = piece.rfind("##", 0) == 0 && piece.size() > 2;
    if (continuation ? !x::continuation_word(table, piece.substr(2), token.id, starts)
                     : table.encode(piece) != std::vector<x::token_id>{token.id})
      finding("a new piece is not what the encoder emits where it stands", piece);
  }
  const nlohmann::ordered_json document =
      x::extended_wordpiece_json(tokenizer_json_of(model), extension, path.string());
  const x::wordpiece_model read = x::read_wordpiece_model(document, path.string());
  if (read.vocabulary.tokens != table.model().tokens) finding("the tokenizer.json written read back otherwise");
  for (const std::string& word : x::bert_words(text, model.vocabulary.rules.bert))
    for (const x::token_id id : table.encode(word))
      if (id < 0 || id >= table.size()) finding("an id outside the vocabulary", word);
}

CLP_FUZZ_TARGET(wordpiece_vocab) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "vocab.txt";
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find("\n\x01\n");
  const std::string text(input.substr(0, split == std::string_view::npos ? input.size() : split + 1));
  std::vector<std::string> asked;
  if (split == std::string_view::npos) {
    asked = {" zz", "zz"};
  } else {
    const std::string_view rest = input.substr(split + 3);
    for (std::size_t from = 0; from < rest.size() && asked.size() < 64;) {
      const std::size_t end = std::min(rest.find('\n', from), rest.size());
      asked.emplace_back(rest.substr(from, end - from));
      from = end + 1;
    }
  }
  write_bytes(path, text);
  // Lowercase or cased by the first byte: both normalisers see the input.
  const nlohmann::json config = {{"do_lower_case", !text.empty() && (text.front() & 1)}};
  expect_clean(
      folder,
      [&] {
        const x::wordpiece_model model = x::read_vocab_txt_model(path, config);
        check_accepted(path, text, model, asked);
      },
      true);
  return 0;
}

}  // namespace fuzz_wordpiece_vocab
