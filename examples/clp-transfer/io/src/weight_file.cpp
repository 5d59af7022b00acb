#include "io/weight_file.hpp"

namespace clp_transfer::io {

weight_file::weight_file(std::filesystem::path path, weight_format format) : path_(std::move(path)), format_(format) {
  fd_ = file_descriptor(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd_.get() < 0) failed(path_, "cannot open");
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) failed(path_, "cannot stat");
  if (!S_ISREG(info.st_mode)) throw io_error(path_, "not a regular file");
  file_size_ = static_cast<std::uint64_t>(info.st_size);
  if (format == weight_format::safetensors) {
    safetensors_header header = read_safetensors_header(path_, fd_.get(), file_size_);
    data_start_ = header.data_start;
    tensors_ = std::move(header.tensors);
    metadata_ = std::move(header.metadata);
  } else {
    tensors_ = read_torch_checkpoint(path_, fd_.get(), file_size_);
    metadata_ = {{"format", "pt"}};  // what transformers writes into the safetensors it saves
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
}

void weight_file::read(const tensor_entry& tensor, void* buffer, std::size_t buffer_size) const {
  if (buffer_size != tensor.byte_size)
    throw clp::invalid_argument(
        about(path_, tensor.name),
        "holds " + std::to_string(tensor.byte_size) + " bytes but the buffer holds " + std::to_string(buffer_size));
  read_exactly(path_, fd_.get(), buffer, buffer_size, tensor.offset, "tensor " + quoted_name(tensor.name));
}

std::vector<std::byte> weight_file::read(const tensor_entry& tensor) const {
  std::vector<std::byte> bytes(tensor.byte_size);
  read(tensor, bytes.data(), bytes.size());
  return bytes;
}

mapped_bytes weight_file::map(const tensor_entry& tensor) const {
  mapped_bytes bytes = mapped_bytes::populated(fd_.get(), tensor.offset, tensor.byte_size);
  if (bytes.data() == nullptr) failed(path_, "cannot map tensor " + quoted_name(tensor.name));
  return bytes;
}

}  // namespace clp_transfer::io
