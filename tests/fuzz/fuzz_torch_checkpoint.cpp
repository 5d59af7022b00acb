// Fuzz target: a whole pytorch_model.bin (io/torch/checkpoint.hpp: the zip archive, its pickle,
// the tensors resolved to ranges of the file). An accepted checkpoint's tensors lie inside the
// file, in offset order, sized by their shapes, sharing bytes only as whole ranges; read() and
// map() agree; and the safetensors writer copies them into a file the safetensors reader
// accepts with the same contents (the program's output path).
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "io/weight_file.hpp"

using namespace clp_fuzz;

namespace fuzz_torch_checkpoint {

using clp_transfer::io::tensor_entry;

void check_accepted(const fs::path& folder, const clp_transfer::io::weight_file& file) {
  const tensor_entry* previous = nullptr;
  for (const tensor_entry& tensor : file.tensors()) {
    if (tensor.element_count() * tensor.element_size != tensor.byte_size) finding("byte size", tensor.name);
    if (tensor.offset > file.file_size() || tensor.byte_size > file.file_size() - tensor.offset)
      finding("a tensor past the end of the file", tensor.name);
    if (previous && tensor.offset < previous->offset) finding("tensors out of offset order", tensor.name);
    if (previous && tensor.byte_size > 0 && previous->byte_size > 0 &&
        tensor.offset < previous->offset + previous->byte_size &&
        (tensor.offset != previous->offset || tensor.byte_size != previous->byte_size))
      finding("tensors sharing part of their bytes", tensor.name);
    if (tensor.byte_size > 0) previous = &tensor;
    if (tensor.byte_size == 0) continue;
    const std::vector<std::byte> bytes = file.read(tensor);
    const clp_transfer::io::mapped_bytes mapped = file.map(tensor);
    if (std::memcmp(mapped.data(), bytes.data(), bytes.size()) != 0) finding("map() and read() differ", tensor.name);
  }
  check_copy(folder, file);
}

CLP_FUZZ_TARGET(torch_checkpoint) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "pytorch_model.bin";
  write_bytes(path, data, size);
  expect_clean(folder, [&] { check_accepted(folder, clp_transfer::io::weight_file(path, clp_transfer::io::weight_format::torch)); });
  return 0;
}

}  // namespace fuzz_torch_checkpoint
