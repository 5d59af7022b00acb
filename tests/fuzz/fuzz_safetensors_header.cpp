// Fuzz target: the safetensors reader (io/safetensors.hpp). An accepted file must have its
// tensors tile the data section exactly, read() and map() must agree, and the writer must
// rewrite it (copying every tensor) into a file the reader accepts with the same contents.
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"

using namespace clp_fuzz;

namespace fuzz_safetensors_header {

using clp_transfer::io::safetensors_file;
using clp_transfer::io::tensor_entry;

void check_accepted(const fs::path& folder, const safetensors_file& file) {
  std::uint64_t covered = 0;
  for (const tensor_entry& tensor : file.tensors()) {
    if (tensor.element_size != clp_transfer::io::dtype_size(tensor.dtype)) finding("element size", tensor.name);
    if (tensor.element_count() * tensor.element_size != tensor.byte_size) finding("byte size", tensor.name);
    if (tensor.byte_size == 0) continue;
    if (tensor.offset != file.data_start() + covered) finding("tensors do not tile the data", tensor.name);
    covered += tensor.byte_size;
    const std::vector<std::byte> bytes = file.read(tensor);
    const clp_transfer::io::mapped_bytes mapped = file.map(tensor);
    if (std::memcmp(mapped.data(), bytes.data(), bytes.size()) != 0) finding("map() and read() differ", tensor.name);
  }
  if (file.data_start() + covered != file.file_size()) finding("bytes after the last tensor were accepted");

  check_copy(folder, file);
}

CLP_FUZZ_TARGET(safetensors_header) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "model.safetensors";
  write_bytes(path, safetensors_from_input(data, size));
  expect_clean(folder, [&] { check_accepted(folder, safetensors_file(path)); });
  return 0;
}

}  // namespace fuzz_safetensors_header
