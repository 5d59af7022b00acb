// Fuzz target: the safetensors reader (io/safetensors.hpp). An accepted file must have its
// tensors tile the data section exactly, read() and map() must agree, and the writer must
// rewrite it (copying every tensor) into a file the reader accepts with the same contents.
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"

using namespace clp_fuzz;
using clp_transfer::io::safetensors_file;
using clp_transfer::io::tensor_entry;

namespace {

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

  std::vector<clp_transfer::io::tensor_spec> specs;
  for (const tensor_entry& tensor : file.tensors())
    specs.push_back({tensor.name, tensor.dtype, tensor.shape, tensor.byte_size});
  const fs::path copy = folder / "copy.safetensors";
  {
    clp_transfer::io::safetensors_writer writer(copy, specs, file.metadata(), /*durable=*/false);
    for (const tensor_entry& tensor : file.tensors())
      clp_transfer::io::copy_range(file.descriptor(), static_cast<off_t>(tensor.offset), tensor.byte_size, writer);
    writer.finish();
  }
  const safetensors_file reread(copy);
  if (reread.tensors().size() != file.tensors().size()) finding("the copy has another tensor count");
  if (reread.metadata() != file.metadata()) finding("the copy has other metadata");
  for (const tensor_entry& tensor : file.tensors()) {
    const tensor_entry* again = reread.find(tensor.name);
    if (!again || again->dtype != tensor.dtype || again->shape != tensor.shape)
      finding("the copy differs", tensor.name);
    if (reread.read(*again) != file.read(tensor)) finding("the copy's bytes differ", tensor.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path folder = scratch_folder::path();
  const fs::path path = folder / "model.safetensors";
  write_bytes(path, safetensors_from_input(data, size));
  expect_clean(folder, [&] { check_accepted(folder, safetensors_file(path)); });
  return 0;
}
