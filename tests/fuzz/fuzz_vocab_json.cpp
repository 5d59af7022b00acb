// Fuzz target: the vocab.json reader (io/tokenizer/vocabulary.hpp, read_vocab_json). An accepted
// vocabulary has distinct ids in [0, size) with size = highest id + 1.
#include "fuzz_vocabulary_checks.hpp"

using namespace clp_fuzz;

namespace fuzz_vocab_json {

CLP_FUZZ_TARGET(vocab_json) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "vocab.json";
  write_bytes(path, data, size);
  expect_clean(folder, [&] { check_vocabulary(clp_transfer::io::read_vocab_json(path)); });
  return 0;
}

}  // namespace fuzz_vocab_json
