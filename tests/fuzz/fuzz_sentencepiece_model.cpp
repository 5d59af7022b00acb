// Fuzz target: the SentencePiece model reader (io/tokenizer/sentencepiece.hpp on
// io/tokenizer/protobuf_wire.hpp), on the model's bytes in memory. An accepted model has pieces, each
// non-empty UTF-8, distinct, of a type 1 to 6 (a byte piece spelt <0xNN>); its vocabulary has
// the ids [0, pieces); and it agrees with that vocabulary, as any model with its own must.
#include <string_view>
#include <unordered_set>

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

CLP_FUZZ_TARGET(sentencepiece_model) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "tokenizer.model";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean(folder, [&] { check_accepted(path, clp_transfer::io::parse_sentencepiece_model(path, bytes)); });
  return 0;
}

}  // namespace fuzz_sentencepiece_model
