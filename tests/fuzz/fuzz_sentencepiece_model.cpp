// Fuzz target: the SentencePiece model reader (io/tokenizer/sentencepiece.hpp on
// io/tokenizer/protobuf_wire.hpp), on the model's bytes in memory. An accepted model has pieces, each
// non-empty UTF-8, distinct, of a type 1 to 6 (a byte piece spelt <0xNN>); its vocabulary has
// the ids [0, pieces); and it agrees with that vocabulary, as any model with its own must.
// Its bytes with two new pieces appended (append_sentencepiece_pieces, what extend writes) read
// back as the same model with those pieces after its own, every other field as it was. And
// where extend would grow it: a BPE model's reading indexes (every merge's sides and their
// concatenation are pieces); a Unigram model's encoder takes any text, and a piece scored above
// its text's best path, as extend scores one, is that text's path.
#include <string_view>
#include <unordered_set>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "extend/bpe_model.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/unigram_model.hpp"
#include "fuzz_vocabulary_checks.hpp"
#include "io/system/utf8.hpp"
#include "io/tokenizer/sentencepiece.hpp"

using namespace clp_fuzz;

namespace fuzz_sentencepiece_model {

void check_accepted(const fs::path& path, const clp_transfer::io::sentencepiece_model& model) {
  using clp_transfer::io::piece_type;
  if (model.pieces.empty()) finding("a model without pieces was accepted");
  std::unordered_set<std::string_view> seen;
  for (const clp_transfer::io::sentencepiece_piece& p : model.pieces) {
    if (p.piece.empty() || !clp_transfer::io::valid_utf8(p.piece)) finding("an empty or non-UTF-8 piece", p.piece);
    if (!seen.insert(p.piece).second) finding("a piece twice", p.piece);
    if (static_cast<int>(p.type) < 1 || static_cast<int>(p.type) > 6) finding("a type outside 1 to 6", p.piece);
    if (p.type == piece_type::byte && (p.piece.size() != 6 || p.piece.rfind("<0x", 0) != 0))
      finding("a byte piece that is not <0xNN>", p.piece);
  }
  const clp_transfer::io::token_vocabulary vocabulary = clp_transfer::io::sentencepiece_vocabulary(path, model);
  check_vocabulary(vocabulary);
  if (vocabulary.size != static_cast<std::int64_t>(model.pieces.size())) finding("ids other than the positions");
  clp_transfer::io::check_sentencepiece_agrees(path, model, path, vocabulary);
}

bool same_piece(const clp_transfer::io::sentencepiece_piece& a, const clp_transfer::io::sentencepiece_piece& b) {
  return a.piece == b.piece && a.type == b.type && std::memcmp(&a.score, &b.score, sizeof a.score) == 0;
}

void check_appended(const fs::path& path, std::string_view bytes, const clp_transfer::io::sentencepiece_model& model) {
  using namespace clp_transfer::io;
  std::unordered_set<std::string> names;
  for (const sentencepiece_piece& p : model.pieces) names.insert(p.piece);
  std::vector<sentencepiece_piece> added;
  for (const piece_type type : {piece_type::normal, piece_type::control}) {
    std::string name = model.pieces.front().piece + "\xE2\x96\x81";
    while (names.count(name)) name += "x";
    names.insert(name);
    added.push_back({name, type == piece_type::normal ? -1.5f : 0.25f, type});
  }
  sentencepiece_model again;
  try {
    again = parse_sentencepiece_model(path, append_sentencepiece_pieces(bytes, added));
  } catch (const std::exception& e) {
    finding("a model that was read could not be read with pieces appended", e.what());
  }
  if (again.pieces.size() != model.pieces.size() + added.size()) finding("appended pieces did not read back");
  for (std::size_t i = 0; i < again.pieces.size(); ++i)
    if (!same_piece(again.pieces[i], i < model.pieces.size() ? model.pieces[i] : added[i - model.pieces.size()]))
      finding("a piece changed when pieces were appended", again.pieces[i].piece);
  if (again.model_type != model.model_type || again.byte_fallback != model.byte_fallback ||
      again.escape_whitespaces != model.escape_whitespaces || again.normalizer_name != model.normalizer_name ||
      again.precompiled_charsmap != model.precompiled_charsmap || again.add_dummy_prefix != model.add_dummy_prefix ||
      again.remove_extra_whitespaces != model.remove_extra_whitespaces ||
      again.treat_whitespace_as_suffix != model.treat_whitespace_as_suffix)
    finding("a field other than the pieces changed when pieces were appended");
}

void check_extend_reading(const clp_transfer::io::sentencepiece_model& model) {
  using namespace clp_transfer::extend;
  if (sentencepiece_refusal(model)) return;
  if (model.model_type == "bpe") {
    const bpe_table table(sentencepiece_bpe_model(model.pieces, model));
    for (const clp_transfer::io::sentencepiece_piece& p : model.pieces)
      if (p.type == clp_transfer::io::piece_type::normal && p.piece.size() <= 64) (void)table.encode(p.piece);
    return;
  }
  // Unigram: the encoder takes any text, and a piece scored as extend scores it is its text's path.
  unigram_table table(sentencepiece_unigram_model(model));
  std::string text;
  for (std::size_t i = 0; i < model.pieces.size() && text.size() < 256; ++i) text += model.pieces[i].piece;
  (void)table.encode(text);
  if (!table.id(text) && !text.empty()) {
    const float best = table.best_score(text);
    if (std::isfinite(best) && std::fabs(best) < 1e30f) {
      const token_id id = table.add_piece(text, best + std::max(1e-4f, 1e-6f * std::fabs(best)));
      if (table.encode(text) != std::vector<token_id>{id})
        finding("a Unigram piece scored above its text's path is not its text's path");
    }
  }
}

CLP_FUZZ_TARGET(sentencepiece_model) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "tokenizer.model";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean(folder, [&] {
    const clp_transfer::io::sentencepiece_model model = clp_transfer::io::parse_sentencepiece_model(path, bytes);
    check_accepted(path, model);
    check_appended(path, bytes, model);
    check_extend_reading(model);
  });
  return 0;
}

}  // namespace fuzz_sentencepiece_model
