#include "io/safetensors/header.hpp"

namespace clp_transfer::io {

namespace detail {

nlohmann::json parse_header_json(const std::filesystem::path& path, const std::string& text) {
  using json = nlohmann::json;
  std::vector<std::unordered_set<std::string>> keys;  // one set per object being parsed
  std::string repeated;
  int repeated_depth = 0;
  const json::parser_callback_t check_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && repeated.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second) {
      repeated = parsed.get<std::string>();
      repeated_depth = depth;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, check_keys);
  } catch (const json::exception& error) {
    malformed_json(path, "header is not valid JSON", error);
  }
  if (!repeated.empty())
    malformed(path, (repeated_depth <= 1 && repeated != "__metadata__" ? "tensor name " : "key ") +
                        quoted_name(repeated) + " appears twice in the header");
  if (!header.is_object()) malformed(path, "header is not a JSON object");
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::filesystem::path& path, const nlohmann::json& value) {
  if (!value.is_object()) malformed(path, "__metadata__ is not a JSON object of string -> string");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) malformed(path, "__metadata__ value of " + quoted_name(key) + " is not a string");
    metadata.emplace(key, text.get<std::string>());
  }
  return metadata;
}

tensor_entry parse_entry_type(const std::filesystem::path& path, const std::string& name, const nlohmann::json& value) {
  const auto bad = [&](const std::string& problem) { malformed(path, problem, name); };
  if (!value.is_object()) bad("entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) bad(std::string("missing \"") + key + "\"");
  tensor_entry tensor;
  tensor.name = name;
  const nlohmann::json& dtype_value = value["dtype"];
  if (!dtype_value.is_string()) bad("\"dtype\" is not a string");
  const auto type = parse_dtype(dtype_value.get<std::string>());
  if (!type) bad("unknown dtype " + quoted_name(dtype_value.get<std::string>()));
  tensor.dtype = *type;
  tensor.element_size = dtype_size(*type);
  const nlohmann::json& shape = value["shape"];
  if (!shape.is_array()) bad("\"shape\" is not an array");
  for (const nlohmann::json& dimension : shape) {
    // Integers beyond int64 parse as unsigned; no real dimension comes near that.
    if (!dimension.is_number_integer() ||
        (dimension.is_number_unsigned() && dimension.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      bad("\"shape\" holds " + json_excerpt(dimension) + ", not a dimension");
    tensor.shape.push_back(dimension.get<std::int64_t>());
  }
  if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](auto d) { return d < 0; }))
    bad("negative dimension in shape " + format_shape(tensor.shape));
  return tensor;
}

tensor_entry parse_entry(const std::filesystem::path& path, const std::string& name, const nlohmann::json& value,
                         std::uint64_t data_start) {
  tensor_entry tensor = parse_entry_type(path, name, value);
  const auto bad = [&](const std::string& problem) { malformed(path, problem, name); };
  const auto count = element_count(tensor.shape, tensor.element_size);
  if (!count) bad("shape " + format_shape(tensor.shape) + " has too many elements (overflow)");
  const nlohmann::json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    bad("\"data_offsets\" is not a pair of non-negative integers");
  const auto begin = offsets[0].get<std::uint64_t>();
  const auto end = offsets[1].get<std::uint64_t>();
  if (end < begin) bad("data_offsets end " + std::to_string(end) + " is before begin " + std::to_string(begin));
  if (end > std::numeric_limits<std::uint64_t>::max() - data_start)
    bad("data_offsets end " + std::to_string(end) + " lies past the end of any file");
  tensor.offset = data_start + begin;
  tensor.byte_size = end - begin;
  if (tensor.byte_size != *count * tensor.element_size)
    bad("holds " + std::to_string(tensor.byte_size) + " bytes but shape " + format_shape(tensor.shape) + " of " +
        std::string(dtype_name(tensor.dtype)) + " needs " + std::to_string(*count * tensor.element_size));
  return tensor;
}

void check_overlaps(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors) {
  const tensor_entry* furthest = nullptr;
  for (const tensor_entry& tensor : tensors) {
    if (tensor.byte_size == 0) continue;
    if (furthest && tensor.offset < furthest->offset + furthest->byte_size)
      malformed(path, "tensors " + quoted_name(furthest->name) + " and " + quoted_name(tensor.name) +
                          " overlap in the data section");
    if (!furthest || tensor.offset + tensor.byte_size > furthest->offset + furthest->byte_size) furthest = &tensor;
  }
}

void check_coverage(const std::filesystem::path& path, const std::vector<tensor_entry>& tensors,
                    std::uint64_t data_start, std::uint64_t file_size) {
  const std::uint64_t data_size = file_size - data_start;
  std::uint64_t covered = 0;  // data bytes [0, covered) belong to the tensors seen so far
  const tensor_entry* previous = nullptr;
  for (const tensor_entry& tensor : tensors) {
    if (tensor.byte_size == 0) continue;
    const std::uint64_t begin = tensor.offset - data_start;
    if (begin != covered)
      malformed(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(begin) +
                          ") belong to no tensor (a gap " +
                          (previous ? "between tensors " + quoted_name(previous->name) + " and "
                                    : std::string("before the first tensor ")) +
                          quoted_name(tensor.name) + ")");
    covered = begin + tensor.byte_size;
    previous = &tensor;
  }
  if (covered != data_size)
    malformed(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                        ") belong to no tensor (" + std::to_string(data_size - covered) + " bytes after " +
                        (previous ? "the last tensor " + quoted_name(previous->name) : "the header") + ")");
}

std::uint64_t read_header_length(const std::filesystem::path& path, int fd, std::uint64_t file_size) {
  if (file_size < 8)
    malformed(path, "file is " + std::to_string(file_size) +
                        " bytes, too short for a safetensors header (truncated or empty)");
  unsigned char length_bytes[8];
  read_exactly(path, fd, length_bytes, 8, 0, "the header length");
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  if (length > max_header_bytes)
    malformed(path, "header length " + std::to_string(length) + " exceeds the " +
                        std::to_string(max_header_bytes / 1'000'000) + " MB limit (corrupt file?)");
  if (length > file_size - 8) throw truncated_file(path, 8 + length, file_size, "the header");
  return length;
}

}  // namespace detail

safetensors_header read_safetensors_header(const std::filesystem::path& path, int fd, std::uint64_t file_size) {
  const std::uint64_t length = detail::read_header_length(path, fd, file_size);
  safetensors_header header;
  header.data_start = 8 + length;
  std::string text(length, '\0');
  read_exactly(path, fd, text.data(), text.size(), 8, "the header");
  const nlohmann::json json = detail::parse_header_json(path, text);
  for (const auto& [name, value] : json.items()) {
    if (name == "__metadata__")
      header.metadata = detail::parse_metadata(path, value);
    else
      header.tensors.push_back(detail::parse_entry(path, name, value, header.data_start));
  }
  std::uint64_t data_end = header.data_start;
  for (const tensor_entry& tensor : header.tensors) data_end = std::max(data_end, tensor.offset + tensor.byte_size);
  if (data_end > file_size) throw truncated_file(path, data_end, file_size, "the tensor data its header lists");
  // nlohmann::json sorts keys, and the header's key order carries no meaning anyway: data order
  // does, for sequential copies. Sorting by (begin, end) puts an empty tensor before the one
  // starting where it sits; several empties at one offset stay in name order.
  std::stable_sort(header.tensors.begin(), header.tensors.end(), [](const tensor_entry& a, const tensor_entry& b) {
    return std::pair(a.offset, a.byte_size) < std::pair(b.offset, b.byte_size);
  });
  detail::check_overlaps(path, header.tensors);
  detail::check_coverage(path, header.tensors, header.data_start, file_size);
  return header;
}

}  // namespace clp_transfer::io
