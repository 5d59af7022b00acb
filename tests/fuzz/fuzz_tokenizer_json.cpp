// Fuzz target: the tokenizer.json reader (io/tokenizer/tokenizer_json.hpp, read_tokenizer_json). An accepted
// vocabulary has distinct ids in [0, size) with size = highest id + 1.
#include "fuzz_vocabulary_checks.hpp"

using namespace clp_fuzz;

namespace fuzz_tokenizer_json {

CLP_FUZZ_TARGET(tokenizer_json) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "tokenizer.json";
  write_bytes(path, data, size);
  expect_clean(folder, [&] { check_vocabulary(clp_transfer::io::read_tokenizer_json(path).vocabulary); });
  return 0;
}

}  // namespace fuzz_tokenizer_json
