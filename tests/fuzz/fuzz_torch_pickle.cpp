// Fuzz target: the pickle interpreter with torch's allow-list (io/torch/pickle/machine.hpp,
// io/torch/pickle.hpp), on a data.pkl's bytes in memory. An accepted pickle is a state dict of
// distinct UTF-8 names, each a tensor of a known element type with one stride per dimension.
// Whatever the input, nothing outside the allow-list is named without a refusal: the hooks are
// the only way to a global, and they refuse the rest.
#include <string_view>
#include <unordered_set>

#include "fuzz_support.hpp"
#include "io/system/utf8.hpp"
#include "io/torch/pickle.hpp"

using namespace clp_fuzz;

namespace fuzz_torch_pickle {

CLP_FUZZ_TARGET(torch_pickle) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "pytorch_model.bin";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean(folder, [&] {
    const std::vector<clp_transfer::io::torch_tensor_record> records = clp_transfer::io::read_torch_state_dict(path, "a/data.pkl", bytes);
    std::unordered_set<std::string_view> names;
    for (const clp_transfer::io::torch_tensor_record& r : records) {
      if (!clp_transfer::io::valid_utf8(r.name)) finding("a name that is not UTF-8 was accepted");
      if (!names.insert(r.name).second) finding("a name twice", r.name);
      if (clp_transfer::io::dtype_size(r.dtype) == 0) finding("an unknown element type", r.name);
      if (r.shape.size() != r.stride.size()) finding("strides that do not match the shape", r.name);
    }
  });
  return 0;
}

}  // namespace fuzz_torch_pickle
