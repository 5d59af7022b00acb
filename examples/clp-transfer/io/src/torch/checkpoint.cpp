#include "io/torch/checkpoint.hpp"

namespace clp_transfer::io {

namespace detail {

void require_zip(const std::filesystem::path& path, int fd, std::uint64_t size) {
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 262)), '\0');
  read_exactly(path, fd, head.data(), head.size(), 0, "the first bytes");
  if (head.compare(0, 4, "PK\x03\x04") == 0) return;
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80)
    malformed(path,
              "written in torch's legacy format (a bare pickle, as torch.save wrote before torch 1.6 or "
              "with _use_new_zipfile_serialization=False), which is not read: save it again with a newer torch");
  if (head.size() >= 262 && head.compare(257, 5, "ustar") == 0)
    malformed(path, "written in torch's legacy tar format (torch 0.1 to 0.3), which is not read");
  malformed(path, "not a zip archive, as a pytorch_model.bin written by torch 1.6 or later is");
}

std::string archive_prefix(const std::filesystem::path& path, const std::vector<zip_entry>& entries) {
  std::string prefix;
  for (const zip_entry& entry : entries) {
    const std::size_t slash = entry.name.find('/');
    if (slash == std::string::npos || entry.name.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
    if (!prefix.empty())
      malformed(path, "holds two pickles, " + quoted_name(prefix + "/data.pkl") + " and " + quoted_name(entry.name) +
                          ": not one torch checkpoint");
    prefix = entry.name.substr(0, slash);
  }
  if (prefix.empty()) malformed(path, "a zip archive without a data.pkl record: not a torch checkpoint");
  for (const zip_entry& entry : entries)
    if (entry.name.compare(0, prefix.size() + 1, prefix + "/") != 0)
      malformed(path,
                "holds the record " + quoted_name(entry.name) + " outside the archive's folder " + quoted_name(prefix));
  return prefix;
}

std::string read_record(const std::filesystem::path& path, int fd, const zip_entry& entry) {
  if (entry.size > max_header_bytes)
    malformed(path,
              "record " + quoted_name(entry.name) + " is " + std::to_string(entry.size) + " bytes (corrupt file?)");
  std::string bytes(static_cast<std::size_t>(entry.size), '\0');
  read_exactly(path, fd, bytes.data(), bytes.size(), entry.offset, "record " + quoted_name(entry.name));
  return bytes;
}

tensor_entry resolve_tensor(const std::filesystem::path& path, const torch_tensor_record& record,
                            const zip_entry& storage) {
  const auto bad = [&](const std::string& problem) { malformed(path, problem, record.name); };
  tensor_entry tensor;
  tensor.name = record.name;
  tensor.dtype = record.dtype;
  tensor.element_size = dtype_size(record.dtype);
  tensor.shape = record.shape;
  const auto count = element_count(record.shape, tensor.element_size);
  if (!count) bad("has shape " + format_shape(record.shape) + ", a negative dimension or too many elements");
  if (storage.size / tensor.element_size != record.storage_elements || storage.size % tensor.element_size != 0)
    bad("has a storage of " + std::to_string(record.storage_elements) + " " + std::string(dtype_name(record.dtype)) +
        " elements, but its record " + quoted_name(storage.name) + " holds " + std::to_string(storage.size) + " bytes");
  tensor.byte_size = *count * tensor.element_size;
  tensor.offset = storage.offset;
  if (*count == 0) return tensor;
  std::int64_t expected = 1;  // row-major: each stride the product of the dimensions after it
  for (std::size_t d = record.shape.size(); d-- > 0;) {
    if (record.shape[d] != 1 && record.stride[d] != expected)
      bad("is not contiguous (shape " + format_shape(record.shape) + ", strides " + format_shape(record.stride) +
          "): only a tensor whose elements lie in one row-major range is read (save it with .contiguous())");
    expected *= record.shape[d];
  }
  if (record.storage_offset < 0 || static_cast<std::uint64_t>(record.storage_offset) > record.storage_elements ||
      *count > record.storage_elements - static_cast<std::uint64_t>(record.storage_offset))
    bad("runs past its storage: elements [" + std::to_string(record.storage_offset) + ", " +
        std::to_string(record.storage_offset) + " + " + std::to_string(*count) + ") of " +
        std::to_string(record.storage_elements));
  tensor.offset = storage.offset + static_cast<std::uint64_t>(record.storage_offset) * tensor.element_size;
  return tensor;
}

void check_torch_overlaps(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors) {
  const tensor_entry* furthest = nullptr;
  for (const tensor_entry& tensor : tensors) {
    if (tensor.byte_size == 0) continue;
    if (furthest && tensor.offset < furthest->offset + furthest->byte_size &&
        (tensor.offset != furthest->offset || tensor.byte_size != furthest->byte_size))
      malformed(path, "tensors " + quoted_name(furthest->name) + " and " + quoted_name(tensor.name) +
                          " share part of their bytes (a view of another tensor): save them with .clone()");
    if (!furthest || tensor.offset + tensor.byte_size > furthest->offset + furthest->byte_size) furthest = &tensor;
  }
}

}  // namespace detail

std::vector<tensor_entry> read_torch_checkpoint(const std::filesystem::path& path, int fd, std::uint64_t size) {
  detail::require_zip(path, fd, size);
  const std::vector<zip_entry> entries = read_zip_entries(path, fd, size);
  const std::string prefix = detail::archive_prefix(path, entries);
  std::unordered_map<std::string, const zip_entry*> by_name;
  for (const zip_entry& entry : entries) by_name.emplace(entry.name, &entry);
  if (const auto order = by_name.find(prefix + "/byteorder"); order != by_name.end()) {
    const std::string value = detail::read_record(path, fd, *order->second);
    if (value != "little")
      malformed(path, "has byte order " + quoted_name(value) + ": only little-endian checkpoints are read");
  }
  const std::string pickle_name = prefix + "/data.pkl";
  const std::string pickle = detail::read_record(path, fd, *by_name.at(pickle_name));
  const std::vector<torch_tensor_record> records = read_torch_state_dict(path, pickle_name, pickle);
  std::map<std::string, const torch_tensor_record*> storages;  // key -> the first tensor that reads it
  std::vector<tensor_entry> tensors;
  for (const torch_tensor_record& record : records) {
    if (record.name == "__metadata__")
      malformed(path, "names a tensor \"__metadata__\", the key safetensors (the output's format) reserves");
    const auto [first, fresh] = storages.emplace(record.storage_key, &record);
    if (!fresh && (first->second->dtype != record.dtype || first->second->storage_elements != record.storage_elements))
      malformed(path, "tensors " + quoted_name(first->second->name) + " and " + quoted_name(record.name) +
                          " read storage " + quoted_name(record.storage_key) + " with other types or sizes");
    const auto storage = by_name.find(prefix + "/data/" + record.storage_key);
    if (storage == by_name.end())
      malformed(path, "has no record " + quoted_name(prefix + "/data/" + record.storage_key) + " for its storage",
                record.name);
    tensors.push_back(detail::resolve_tensor(path, record, *storage->second));
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const tensor_entry& a, const tensor_entry& b) {
    return std::pair(a.offset, a.byte_size) < std::pair(b.offset, b.byte_size);
  });
  detail::check_torch_overlaps(path, tensors);
  return tensors;
}

}  // namespace clp_transfer::io
