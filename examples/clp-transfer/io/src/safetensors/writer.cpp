#include "io/safetensors/writer.hpp"

namespace clp_transfer::io {

namespace detail {

std::pair<std::string, std::uint64_t> header_text(const std::filesystem::path& path,
                                                  const std::vector<tensor_spec>& tensors,
                                                  const std::map<std::string, std::string>& metadata) {
  using json = nlohmann::json;
  const auto refuse = [&](const std::string& problem, const std::string& tensor = {}) {
    throw clp::invalid_argument(about(path, tensor), problem);
  };
  try {
    std::string header = "{";
    if (!metadata.empty()) header += "\"__metadata__\":" + json(metadata).dump();
    std::unordered_set<std::string_view> names;
    std::uint64_t data_size = 0;
    for (const tensor_spec& tensor : tensors) {
      if (tensor.name == "__metadata__") refuse("\"__metadata__\" is reserved");
      if (!names.insert(tensor.name).second) refuse("is listed twice", tensor.name);
      const std::size_t element_size = dtype_size(tensor.dtype);
      if (element_size == 0) refuse("unknown dtype " + std::to_string(static_cast<int>(tensor.dtype)), tensor.name);
      const auto count = element_count(tensor.shape, element_size);
      if (!count || *count * element_size != tensor.byte_size)
        refuse("byte size " + std::to_string(tensor.byte_size) + " does not fit shape " + format_shape(tensor.shape) +
                   " of " + std::string(dtype_name(tensor.dtype)),
               tensor.name);
      const json entry = {{"dtype", dtype_name(tensor.dtype)},
                          {"shape", tensor.shape},
                          {"data_offsets", {data_size, data_size + tensor.byte_size}}};
      if (header.size() > 1) header += ',';
      // dump(), not quoted_name(): a name that is not UTF-8 must be refused, not rewritten.
      header += json(tensor.name).dump() + ':' + entry.dump();
      data_size += tensor.byte_size;
    }
    header += '}';
    // Readers may map the data section and view it as typed arrays, which needs 8-byte
    // alignment of 8 + header length; a 4 KiB boundary also lets the writer write the tensors
    // with direct I/O.
    header.append((direct_io_alignment - (8 + header.size()) % direct_io_alignment) % direct_io_alignment, ' ');
    if (header.size() > max_header_bytes)
      refuse("header of " + std::to_string(header.size()) + " bytes exceeds the " +
             std::to_string(max_header_bytes / 1'000'000) + " MB limit of readers");
    return {std::move(header), data_size};
  } catch (const json::exception& error) {  // type_error 316: a name or metadata that is not UTF-8
    throw clp::invalid_argument(about(path), std::string("cannot write the header (") + error.what() + ")");
  }
}

}  // namespace detail

void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out) {
  out.expect(size);
  const auto source_ended = [&] {
    throw io_error(out.path(), "source ended before " + std::to_string(size) + " bytes from offset " +
                                   std::to_string(offset) + " were copied");
  };
  // The next part: what fits in the first incomplete tensor, and where it goes.
  const auto next_part = [&](std::size_t left) {
    const std::size_t tensor = out.first_incomplete();
    const std::size_t part =
        std::min<std::uint64_t>({left, writeback::chunk, out.tensors_[tensor].byte_size - out.written_[tensor]});
    return std::pair{tensor, part};
  };
  off_t position = offset;
  std::size_t left = size;
  while (left > 0) {
    const auto [tensor, part] = next_part(left);
    auto at = static_cast<off_t>(out.offsets_[tensor] + out.written_[tensor]);
    const off_t start = at;
    const ssize_t copied = ::copy_file_range(in_fd, &position, out.file_.descriptor(), &at, part, 0);
    if (copied > 0) {
      left -= static_cast<std::size_t>(copied);
      out.file_.written_elsewhere(static_cast<std::uint64_t>(start), static_cast<std::size_t>(copied));
      out.arrived(tensor, static_cast<std::size_t>(copied));
      continue;
    }
    if (copied == 0) source_ended();
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
    failed(out.path(), "copying tensor data");
  }
  if (left == 0) return;
  std::vector<char> buffer(std::min<std::size_t>(left, std::size_t{8} << 20));
  while (left > 0) {
    const ssize_t got = ::pread(in_fd, buffer.data(), std::min(left, buffer.size()), position);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) failed(out.path(), "reading tensor data to copy");
    if (got == 0) source_ended();
    out.append(buffer.data(), static_cast<std::size_t>(got));
    position += got;
    left -= static_cast<std::size_t>(got);
  }
}

void file_writes::write(std::uint64_t at, const char* bytes, std::size_t size) {
  constexpr std::size_t align = direct_io_alignment;
  if (direct_fd_.get() >= 0 && size >= direct_io_min && (reinterpret_cast<std::uintptr_t>(bytes) - at) % align == 0) {
    // Buffered up to the first 4 KiB boundary and after the last; directly in between.
    const std::size_t head = std::min<std::size_t>(size, (align - at % align) % align);
    const std::size_t body = (size - head) / align * align;
    write_buffered(at, bytes, head);
    if (write_direct(at + head, bytes + head, body))
      write_buffered(at + head + body, bytes + head + body, size - head - body);
    else  // the file system refused: everything buffered from here on
      write_buffered(at + head, bytes + head, size - head);
  } else {
    write_buffered(at, bytes, size);
  }
}

bool file_writes::write_direct(std::uint64_t at, const char* bytes, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t put = ::pwrite(direct_fd_.get(), bytes + done, size - done, static_cast<off_t>(at + done));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && done == 0 && (errno == EINVAL || errno == EOPNOTSUPP)) {
      direct_fd_.close();
      return false;
    }
    if (put < 0) failed(path_, "writing");
    done += static_cast<std::size_t>(put);
    if (done % direct_io_alignment != 0 && done < size) {  // a short write left it unaligned
      write_buffered(at + done, bytes + done, size - done);
      return true;
    }
  }
  return true;
}

safetensors_writer::safetensors_writer(std::filesystem::path path, std::vector<tensor_spec> tensors,
                                       const std::map<std::string, std::string>& metadata, bool durable)
    : tensors_(std::move(tensors)), written_(tensors_.size(), 0), file_(std::move(path), durable) {
  auto [header, data_size] = detail::header_text(file_.path(), tensors_, metadata);
  data_size_ = data_size;
  file_.write(0, length_prefix(header.size()).data(), 8);
  file_.write(8, header.data(), header.size());
  std::uint64_t offset = 8 + header.size();
  for (const tensor_spec& tensor : tensors_) {
    offsets_.push_back(offset);
    offset += tensor.byte_size;
  }
}

void safetensors_writer::append(const void* data, std::size_t size) {
  expect(size);
  const auto* bytes = static_cast<const char*>(data);
  for (std::size_t done = 0; done < size;) {
    const std::size_t tensor = first_incomplete();
    const std::size_t part = std::min<std::uint64_t>(size - done, tensors_[tensor].byte_size - written_[tensor]);
    write_to(tensor, bytes + done, part);
    done += part;
  }
}

void safetensors_writer::append_to(std::size_t tensor, const void* data, std::size_t size) {
  if (tensor >= tensors_.size())
    throw clp::invalid_argument(about(path()), "has no tensor at position " + std::to_string(tensor) + " of " +
                                                   std::to_string(tensors_.size()));
  if (size > tensors_[tensor].byte_size - written_[tensor])
    throw clp::invalid_argument(about(path(), tensors_[tensor].name),
                                std::to_string(size) + " more bytes do not fit: " +
                                    std::to_string(tensors_[tensor].byte_size - written_[tensor]) + " remain");
  write_to(tensor, data, size);
}

void safetensors_writer::finish() {
  if (total_written_ != data_size_) {
    const std::size_t tensor = first_incomplete();
    throw clp::invalid_argument(about(path(), tensors_[tensor].name),
                                "is incomplete: " + std::to_string(data_size_ - total_written_) + " of " +
                                    std::to_string(data_size_) + " data bytes never arrived");
  }
  file_.commit();
}

}  // namespace clp_transfer::io
