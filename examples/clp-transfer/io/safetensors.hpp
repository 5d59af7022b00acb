// Reading and writing safetensors checkpoints without holding tensor data in memory.
//
// A safetensors file is: an 8-byte little-endian length N, N bytes of UTF-8 JSON header, then
// the data section. The header maps each tensor name to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// with offsets relative to the first byte of the data section, plus an optional
// "__metadata__" object of string -> string.
//
// The reader parses and validates only the header, as strictly as the format's reference
// implementation: the tensors must tile the data section exactly (contiguous from offset 0, in
// offset order, no gap and nothing after the last one), names are unique, and the header is at
// most 100 MB. Tensor bytes are read on demand with pread, or mapped read-only (the embeddings
// the program computes from).
//
// Every problem throws clp::io::error, a clp::error, with a one-line message "<file>: <problem>".
// The writer writes the header first and then takes each tensor's bytes as a stream, so a
// multi-gigabyte tensor is copied file to file (copy_range) instead of through memory; it
// starts the disk writes as it goes, so that the flush at the end has little left to do.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <clp/error.hpp>
#include <nlohmann/json.hpp>

namespace clp::io {

/// What the I/O layer throws for a bad file or a failed system call: a clp::error (so one
/// `catch (const clp::error&)` takes the library's errors and these), whose message is one
/// line "<file>: <problem>".
class error : public clp::malformed_file {
 public:
  /// Transitional: the whole message, no fields (being replaced by clp::io_error and
  /// clp::malformed_file with error_facts).
  explicit error(std::string message) : clp::malformed_file({}, std::move(message)) {}
};

namespace detail {

/// A name or token as a JSON string literal: quoted, with control characters escaped, so
/// that names holding spaces or newlines stay unambiguous in one-line messages.
/// @param[in] text  UTF-8 text (invalid bytes are replaced, not rejected)
inline std::string quoted_name(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Throws io::error("<path>: <problem>"), flattening line breaks so that the message stays
/// on one line however it was assembled. A path that holds a line break itself is written
/// quoted, with the break escaped, rather than changed.
/// @param[in] path     file the problem is about
/// @param[in] problem  what is wrong
[[noreturn]] inline void fail(const std::filesystem::path& path, std::string problem) {
  std::replace_if(
      problem.begin(), problem.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  const std::string where = path.string();
  throw error((where.find_first_of("\n\r") == std::string::npos ? where : quoted_name(where)) + ": " + problem);
}

/// A JSON library exception as one line naming `path`: the parser's own text (which gives
/// the byte position) after `what` ("header is not valid JSON", ...). nlohmann reports a
/// number too large for a double ("9e999") as out_of_range, not parse_error, so every
/// nlohmann::json::exception comes through here.
/// @param[in] path   file that was being read
/// @param[in] what   what was wrong with it
/// @param[in] cause  the exception nlohmann threw
[[noreturn]] inline void fail_json(const std::filesystem::path& path, const std::string& what,
                                   const nlohmann::json::exception& cause) {
  fail(path, what + " (" + cause.what() + ")");
}

/// `problem` followed by the text of the current errno, for failed system calls.
/// @param[in] problem  what was being attempted
inline std::string with_errno(const std::string& problem) { return problem + ": " + std::strerror(errno); }

/// A JSON value as compact text for a message, cut to about 60 characters so that a huge
/// value cannot flood the line. Arrays and objects are only named: dump() recurses, and a
/// value nested a million deep would overflow the stack.
/// @param[in] value  any JSON value (nlohmann::json or ordered_json)
template <class Json>
std::string json_excerpt(const Json& value) {
  if (value.is_array()) return value.empty() ? "[]" : "an array";
  if (value.is_object()) return value.empty() ? "{}" : "an object";
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

/// "[2, 3]" for a shape, as used in messages.
/// @param[in] shape  dimensions
inline std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Owns a POSIX file descriptor and closes it once; move-only.
class file_descriptor {
 public:
  /// @param[in] fd  descriptor to own, or -1 for none
  explicit file_descriptor(int fd = -1) noexcept : fd_(fd) {}
  file_descriptor(file_descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;
  ~file_descriptor() { close(); }

  int get() const noexcept { return fd_; }

  /// Closes the descriptor; returns ::close's result (0 when there was none) so that
  /// writers can notice delayed write errors.
  int close() noexcept { return fd_ < 0 ? 0 : ::close(std::exchange(fd_, -1)); }

 private:
  int fd_;
};

/// Reads exactly `size` bytes at `offset` of `fd`, retrying short reads.
/// @param[in]  path    file behind `fd`, for messages
/// @param[in]  fd      open descriptor
/// @param[out] buffer  `size` writable bytes
/// @param[in]  size    bytes to read
/// @param[in]  offset  byte offset in the file
/// @param[in]  what    what is being read, for messages ("the header", "tensor 'x'")
inline void read_exactly(const std::filesystem::path& path, int fd, void* buffer, std::size_t size,
                         std::uint64_t offset, const std::string& what) {
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t got = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, with_errno("reading " + what));
    if (got == 0) fail(path, "file ended while reading " + what + " (truncated?)");
    out += got;
    size -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

/// Writes all `size` bytes to `fd` at its current position, retrying short writes.
/// @param[in] path  file behind `fd`, for messages
/// @param[in] fd    open descriptor
/// @param[in] data  `size` readable bytes
/// @param[in] size  bytes to write
inline void write_all(const std::filesystem::path& path, int fd, const void* data, std::size_t size) {
  const auto* in = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = ::write(fd, in, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail(path, with_errno("writing"));
    in += put;
    size -= static_cast<std::size_t>(put);
  }
}

/// Limits that separate a corrupt header from a large checkpoint.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
inline constexpr std::uint64_t max_tensor_bytes = std::uint64_t{1} << 62;

/// Element count of `shape`, or nullopt when a dimension is negative or the tensor would
/// exceed max_tensor_bytes; a zero dimension gives 0 whatever the others are.
/// @param[in] shape         dimensions
/// @param[in] element_size  bytes per element (> 0)
inline std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& shape, std::size_t element_size) {
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) return std::nullopt;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::uint64_t count = 1;
  for (std::int64_t d : shape) {
    if (count > max_tensor_bytes / element_size / static_cast<std::uint64_t>(d)) return std::nullopt;
    count *= static_cast<std::uint64_t>(d);
  }
  return count;
}

}  // namespace detail

/// The element types of safetensors that this layer reads and writes, by the names the
/// header uses (dtype_name). Sub-byte types (F4, F6_*) are left out: their sizes are not
/// whole bytes.
enum class dtype { boolean, u8, i8, f8_e4m3, f8_e5m2, u16, i16, f16, bf16, u32, i32, f32, u64, i64, f64 };

namespace detail {

struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;
};

inline constexpr dtype_info dtype_table[] = {
    {dtype::boolean, "BOOL", 1},    {dtype::u8, "U8", 1},   {dtype::i8, "I8", 1},   {dtype::f8_e4m3, "F8_E4M3", 1},
    {dtype::f8_e5m2, "F8_E5M2", 1}, {dtype::u16, "U16", 2}, {dtype::i16, "I16", 2}, {dtype::f16, "F16", 2},
    {dtype::bf16, "BF16", 2},       {dtype::u32, "U32", 4}, {dtype::i32, "I32", 4}, {dtype::f32, "F32", 4},
    {dtype::u64, "U64", 8},         {dtype::i64, "I64", 8}, {dtype::f64, "F64", 8}};

/// The table row of `type`, or nullptr for a value outside the enumeration.
inline const dtype_info* find_dtype(dtype type) {
  for (const dtype_info& info : dtype_table)
    if (info.type == type) return &info;
  return nullptr;
}

}  // namespace detail

/// The dtype a header names, e.g. "BF16"; nullopt for a name this layer does not know.
/// @param[in] name  dtype as written in a safetensors header (case matters, as in the format)
inline std::optional<dtype> parse_dtype(std::string_view name) {
  for (const detail::dtype_info& info : detail::dtype_table)
    if (info.name == name) return info.type;
  return std::nullopt;
}

/// The name a header uses for `type`, e.g. "BF16" ("?" for a value outside the enumeration).
/// @param[in] type  element type
inline std::string_view dtype_name(dtype type) {
  const detail::dtype_info* info = detail::find_dtype(type);
  return info ? info->name : std::string_view("?");
}

/// Bytes per element of `type` (0 for a value outside the enumeration).
/// @param[in] type  element type
inline std::size_t dtype_size(dtype type) {
  const detail::dtype_info* info = detail::find_dtype(type);
  return info ? info->size : 0;
}

/// A read-only mapping of part of a file, unmapped on destruction; move-only.
class mapped_bytes {
 public:
  mapped_bytes() = default;
  /// @param[in] base    what mmap returned
  /// @param[in] length  the mapped length
  /// @param[in] data    the first byte asked for, inside [base, base + length)
  mapped_bytes(void* base, std::size_t length, const void* data) noexcept : base_(base), length_(length), data_(data) {}
  mapped_bytes(mapped_bytes&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), length_(other.length_), data_(other.data_) {}
  mapped_bytes& operator=(mapped_bytes&& other) noexcept {
    if (this != &other) {
      unmap();
      base_ = std::exchange(other.base_, nullptr);
      length_ = other.length_;
      data_ = other.data_;
    }
    return *this;
  }
  mapped_bytes(const mapped_bytes&) = delete;
  mapped_bytes& operator=(const mapped_bytes&) = delete;
  ~mapped_bytes() { unmap(); }

  const void* data() const noexcept { return data_; }

 private:
  void unmap() noexcept {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = nullptr;
  }
  void* base_ = nullptr;
  std::size_t length_ = 0;
  const void* data_ = nullptr;
};

/// One tensor as the header describes it, with offsets resolved to the file.
struct tensor_entry {
  std::string name;
  io::dtype dtype = io::dtype::u8;
  std::size_t element_size = 0;  ///< bytes per element of `dtype`: dtype_size(dtype)
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;     ///< byte offset in the file (not in the data section)
  std::uint64_t byte_size = 0;  ///< product(shape) * element_size

  /// Number of elements: product(shape), 1 for a 0-d scalar.
  std::uint64_t element_count() const { return byte_size / element_size; }
};

/// A safetensors file opened for reading. Opening reads and validates the header only;
/// tensor bytes stay on disk until read() or copy_range() asks for them.
class safetensors_file {
 public:
  /// Opens `path` and validates its header; throws io::error naming the file.
  /// @param[in] path  safetensors file
  explicit safetensors_file(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = detail::file_descriptor(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd_.get() < 0) detail::fail(path_, detail::with_errno("cannot open"));
    struct stat info {};
    if (::fstat(fd_.get(), &info) != 0) detail::fail(path_, detail::with_errno("cannot stat"));
    if (!S_ISREG(info.st_mode)) detail::fail(path_, "not a regular file");
    file_size_ = static_cast<std::uint64_t>(info.st_size);
    parse_header();
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  std::uint64_t file_size() const noexcept { return file_size_; }
  /// Offset of the data section: 8 + header length.
  std::uint64_t data_start() const noexcept { return data_start_; }
  /// Tensors in file order, i.e. by position in the data section.
  const std::vector<tensor_entry>& tensors() const noexcept { return tensors_; }
  /// The "__metadata__" object; empty when the file has none.
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
  /// The open descriptor, valid while this object lives; pass it to copy_range().
  int descriptor() const noexcept { return fd_.get(); }

  /// The tensor called `name`, or nullptr.
  /// @param[in] name  tensor name
  const tensor_entry* find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
  }

  /// The tensor called `name`; throws naming the file when there is none.
  /// @param[in] name  tensor name
  const tensor_entry& at(std::string_view name) const {
    if (const tensor_entry* tensor = find(name)) return *tensor;
    detail::fail(path_, "no tensor " + detail::quoted_name(name));
  }

  /// Reads the bytes of `tensor` into a caller buffer.
  /// @param[in]  tensor       an entry of this file's tensors()
  /// @param[out] buffer       tensor.byte_size writable bytes
  /// @param[in]  buffer_size  size of `buffer`; must equal tensor.byte_size
  void read(const tensor_entry& tensor, void* buffer, std::size_t buffer_size) const {
    if (buffer_size != tensor.byte_size)
      detail::fail(path_, "tensor " + detail::quoted_name(tensor.name) + " holds " + std::to_string(tensor.byte_size) +
                              " bytes but the buffer holds " + std::to_string(buffer_size));
    detail::read_exactly(path_, fd_.get(), buffer, buffer_size, tensor.offset,
                         "tensor " + detail::quoted_name(tensor.name));
  }

  /// Maps the bytes of `tensor` read-only, with the pages populated up front (one system call
  /// instead of a page fault per 4 KiB, and no copy out of the page cache). The header was
  /// checked against the file's size, but like any mapping this one assumes that nobody
  /// truncates the file while it is mapped.
  /// @param[in] tensor  an entry of this file's tensors(), with byte_size > 0
  mapped_bytes map(const tensor_entry& tensor) const {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t start = tensor.offset / page * page;
    const auto length = static_cast<std::size_t>(tensor.offset + tensor.byte_size - start);
    void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_.get(), static_cast<off_t>(start));
    if (base == MAP_FAILED)
      detail::fail(path_, detail::with_errno("cannot map tensor " + detail::quoted_name(tensor.name)));
    return {base, length, static_cast<const char*>(base) + (tensor.offset - start)};
  }

  /// Reads the bytes of `tensor` into a new vector (for the embedding matrices; other
  /// tensors should go through copy_range()).
  /// @param[in] tensor  an entry of this file's tensors()
  std::vector<std::byte> read(const tensor_entry& tensor) const {
    std::vector<std::byte> bytes(tensor.byte_size);
    read(tensor, bytes.data(), bytes.size());
    return bytes;
  }

 private:
  using json = nlohmann::json;

  void parse_header() {
    if (file_size_ < 8)
      detail::fail(path_, "file is " + std::to_string(file_size_) +
                              " bytes, too short for a safetensors header (truncated or empty)");
    unsigned char length_bytes[8];
    detail::read_exactly(path_, fd_.get(), length_bytes, 8, 0, "the header length");
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
    if (length > file_size_ - 8)
      detail::fail(path_, "header length " + std::to_string(length) + " runs past the end of the file (" +
                              std::to_string(file_size_) + " bytes)");
    if (length > detail::max_header_bytes)
      detail::fail(path_, "header length " + std::to_string(length) + " exceeds the " +
                              std::to_string(detail::max_header_bytes / 1'000'000) + " MB limit (corrupt file?)");
    data_start_ = 8 + length;

    std::string text(length, '\0');
    detail::read_exactly(path_, fd_.get(), text.data(), text.size(), 8, "the header");
    const json header = parse_json(text);
    if (!header.is_object()) detail::fail(path_, "header is not a JSON object");

    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__")
        parse_metadata(value);
      else
        tensors_.push_back(parse_entry(name, value));
    }
    // nlohmann::json sorts keys, and the header's key order carries no meaning anyway: data
    // order does, for sequential copies. Sorting by (begin, end) puts an empty tensor before
    // the one starting where it sits; several empties at one offset stay in name order.
    std::stable_sort(tensors_.begin(), tensors_.end(), [](const tensor_entry& a, const tensor_entry& b) {
      return std::pair(a.offset, a.byte_size) < std::pair(b.offset, b.byte_size);
    });
    check_overlaps();
    check_coverage();
    for (std::size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
  }

  /// The header as JSON. A key repeated within one object is refused: nlohmann would keep the
  /// last silently, and two entries for one tensor name leave its bytes ambiguous.
  json parse_json(const std::string& text) const {
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
      detail::fail_json(path_, "header is not valid JSON", error);
    }
    if (!repeated.empty())
      detail::fail(path_, (repeated_depth <= 1 && repeated != "__metadata__" ? "tensor name " : "key ") +
                              detail::quoted_name(repeated) + " appears twice in the header");
    return header;
  }

  void parse_metadata(const json& value) {
    if (!value.is_object()) detail::fail(path_, "__metadata__ is not a JSON object of string -> string");
    for (const auto& [key, text] : value.items()) {
      if (!text.is_string())
        detail::fail(path_, "__metadata__ value of " + detail::quoted_name(key) + " is not a string");
      metadata_.emplace(key, text.get<std::string>());
    }
  }

  [[noreturn]] void bad_entry(const std::string& name, const std::string& problem) const {
    detail::fail(path_, "tensor " + detail::quoted_name(name) + ": " + problem);
  }

  tensor_entry parse_entry(const std::string& name, const json& value) const {
    if (!value.is_object()) bad_entry(name, "entry is not a JSON object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!value.contains(key)) bad_entry(name, std::string("missing \"") + key + "\"");

    tensor_entry tensor;
    tensor.name = name;
    const json& dtype_value = value["dtype"];
    if (!dtype_value.is_string()) bad_entry(name, "\"dtype\" is not a string");
    const auto type = parse_dtype(dtype_value.get<std::string>());
    if (!type) bad_entry(name, "unknown dtype " + detail::quoted_name(dtype_value.get<std::string>()));
    tensor.dtype = *type;
    tensor.element_size = dtype_size(*type);

    const json& shape = value["shape"];
    if (!shape.is_array()) bad_entry(name, "\"shape\" is not an array");
    for (const json& dimension : shape) {
      // Integers beyond int64 parse as unsigned; no real dimension comes near that.
      if (!dimension.is_number_integer() ||
          (dimension.is_number_unsigned() && dimension.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
        bad_entry(name, "\"shape\" holds " + detail::json_excerpt(dimension) + ", not a dimension");
      tensor.shape.push_back(dimension.get<std::int64_t>());
    }
    if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](auto d) { return d < 0; }))
      bad_entry(name, "negative dimension in shape " + detail::format_shape(tensor.shape));
    const auto count = detail::element_count(tensor.shape, tensor.element_size);
    if (!count) bad_entry(name, "shape " + detail::format_shape(tensor.shape) + " has too many elements (overflow)");

    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      bad_entry(name, "\"data_offsets\" is not a pair of non-negative integers");
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    const std::uint64_t data_size = file_size_ - data_start_;
    if (end < begin)
      bad_entry(name, "data_offsets end " + std::to_string(end) + " is before begin " + std::to_string(begin));
    if (end > data_size)
      bad_entry(name, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                          "] run past the end of the data section (" + std::to_string(data_size) + " bytes)");
    tensor.offset = data_start_ + begin;
    tensor.byte_size = end - begin;
    if (tensor.byte_size != *count * tensor.element_size)
      bad_entry(name, "holds " + std::to_string(tensor.byte_size) + " bytes but shape " +
                          detail::format_shape(tensor.shape) + " of " + std::string(dtype_name(tensor.dtype)) +
                          " needs " + std::to_string(*count * tensor.element_size));
    return tensor;
  }

  // Runs on tensors sorted by offset: a range overlaps an earlier one exactly when it starts
  // before the furthest end seen so far. Empty tensors occupy no bytes and never overlap.
  void check_overlaps() const {
    const tensor_entry* furthest = nullptr;
    for (const tensor_entry& tensor : tensors_) {
      if (tensor.byte_size == 0) continue;
      if (furthest && tensor.offset < furthest->offset + furthest->byte_size)
        detail::fail(path_, "tensors " + detail::quoted_name(furthest->name) + " and " +
                                detail::quoted_name(tensor.name) + " overlap in the data section");
      if (!furthest || tensor.offset + tensor.byte_size > furthest->offset + furthest->byte_size) furthest = &tensor;
    }
  }

  // Runs after check_overlaps, on tensors sorted by offset: each tensor must begin where the
  // previous one ended, from 0 to the end of the data section, as the reference validate()
  // requires. Bytes no tensor owns could only be hidden data or the trace of a broken writer.
  // Positions are those of data_offsets (relative to the data section). Empty tensors own no
  // bytes; they may sit at any offset inside the data section.
  void check_coverage() const {
    const std::uint64_t data_size = file_size_ - data_start_;
    std::uint64_t covered = 0;  // data bytes [0, covered) belong to the tensors seen so far
    const tensor_entry* previous = nullptr;
    for (const tensor_entry& tensor : tensors_) {
      if (tensor.byte_size == 0) continue;
      const std::uint64_t begin = tensor.offset - data_start_;
      if (begin != covered)
        detail::fail(path_, "data bytes [" + std::to_string(covered) + ", " + std::to_string(begin) +
                                ") belong to no tensor (a gap " +
                                (previous ? "between tensors " + detail::quoted_name(previous->name) + " and "
                                          : std::string("before the first tensor ")) +
                                detail::quoted_name(tensor.name) + ")");
      covered = begin + tensor.byte_size;
      previous = &tensor;
    }
    if (covered != data_size)
      detail::fail(path_, "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                              ") belong to no tensor (" + std::to_string(data_size - covered) + " bytes after " +
                              (previous ? "the last tensor " + detail::quoted_name(previous->name) : "the header") +
                              ")");
  }

  std::filesystem::path path_;
  detail::file_descriptor fd_;
  std::uint64_t file_size_ = 0;
  std::uint64_t data_start_ = 0;
  std::vector<tensor_entry> tensors_;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to be written: what the header will say about it.
struct tensor_spec {
  std::string name;
  io::dtype dtype = io::dtype::u8;
  std::vector<std::int64_t> shape;
  std::uint64_t byte_size = 0;  ///< must equal product(shape) * dtype_size(dtype)
};

class safetensors_writer;
inline void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

/// Writes a safetensors file as a stream: the constructor writes the header for all tensors
/// (laid out back to back in the given order), then append() and copy_range() supply the
/// tensor bytes in that same order, and finish() checks that every byte arrived.
/// A writer destroyed before finish() succeeded deletes its file, so no half-written
/// checkpoint is left behind.
///
/// A durable writer (the default) makes finish() flush the file to disk, so that a rename
/// after it is a commit point that survives a power loss. To keep that flush from costing a
/// second pass over the whole file, the disk writes are started (sync_file_range, which does
/// not wait) every 64 MiB as the bytes arrive, and proceed while later bytes are copied.
class safetensors_writer {
 public:
  /// Creates `path` (replacing a file there) and writes the header.
  /// @param[in] path      file to create
  /// @param[in] tensors   tensors in the order their bytes will be supplied
  /// @param[in] metadata  "__metadata__" entries; none are written when empty
  /// @param[in] durable   flush to disk in finish(); false leaves that to the kernel, like cp
  safetensors_writer(std::filesystem::path path, std::vector<tensor_spec> tensors,
                     const std::map<std::string, std::string>& metadata = {}, bool durable = true)
      : path_(std::move(path)), tensors_(std::move(tensors)), durable_(durable) {
    const std::string header = make_header(metadata);
    fd_ = detail::file_descriptor(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (fd_.get() < 0) detail::fail(path_, detail::with_errno("cannot create"));
    unsigned char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(header.size() >> (8 * i));
    try {
      detail::write_all(path_, fd_.get(), length_bytes, 8);
      detail::write_all(path_, fd_.get(), header.data(), header.size());
      unsynced_from_ = 8 + header.size();
    } catch (...) {
      discard();  // the destructor does not run for a constructor that throws
      throw;
    }
  }

  safetensors_writer(const safetensors_writer&) = delete;
  safetensors_writer& operator=(const safetensors_writer&) = delete;

  ~safetensors_writer() {
    if (!finished_) discard();
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  /// Tensor bytes still expected before finish().
  std::uint64_t remaining() const noexcept { return data_size_ - written_; }

  /// Appends tensor bytes; a call may cover part of a tensor or run across several.
  /// @param[in] data  `size` readable bytes
  /// @param[in] size  byte count; must not exceed remaining()
  void append(const void* data, std::size_t size) {
    expect(size);
    const auto* bytes = static_cast<const char*>(data);
    for (std::size_t done = 0; done < size;) {
      const std::size_t part = std::min(size - done, writeback_chunk);
      detail::write_all(path_, fd_.get(), bytes + done, part);
      done += part;
      arrived(part);
    }
  }

  /// Checks that every tensor received exactly its byte size, then flushes and closes the
  /// file. Flushing here makes a later rename of the output directory a safe commit point.
  void finish() {
    if (written_ != data_size_) {
      const tensor_spec& short_one = tensor_at(written_);
      detail::fail(path_, "tensor " + detail::quoted_name(short_one.name) +
                              " is incomplete: " + std::to_string(data_size_ - written_) + " of " +
                              std::to_string(data_size_) + " data bytes never arrived");
    }
    if (durable_ && ::fsync(fd_.get()) != 0) detail::fail(path_, detail::with_errno("flushing"));
    if (fd_.close() != 0) detail::fail(path_, detail::with_errno("closing"));
    finished_ = true;
  }

 private:
  friend void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out);

  // Builds the header text by hand rather than through nlohmann::ordered_json: the caller's
  // order must survive, and ordered_json inserts in linear time per key. The header is what
  // safetensors_file accepts: unique names, known dtypes, sizes that fit their shapes, and
  // tensors back to back from offset 0.
  std::string make_header(const std::map<std::string, std::string>& metadata) {
    using json = nlohmann::json;
    try {
      std::string header = "{";
      if (!metadata.empty()) header += "\"__metadata__\":" + json(metadata).dump();
      std::unordered_set<std::string_view> names;
      for (const tensor_spec& tensor : tensors_) {
        const std::string where = "tensor " + detail::quoted_name(tensor.name);
        if (tensor.name == "__metadata__") detail::fail(path_, "\"__metadata__\" is reserved");
        if (!names.insert(tensor.name).second) detail::fail(path_, where + " is listed twice");
        const std::size_t element_size = dtype_size(tensor.dtype);
        if (element_size == 0)
          detail::fail(path_, where + ": unknown dtype " + std::to_string(static_cast<int>(tensor.dtype)));
        const auto count = detail::element_count(tensor.shape, element_size);
        if (!count || *count * element_size != tensor.byte_size)
          detail::fail(path_, where + ": byte size " + std::to_string(tensor.byte_size) + " does not fit shape " +
                                  detail::format_shape(tensor.shape) + " of " + std::string(dtype_name(tensor.dtype)));
        const json entry = {{"dtype", dtype_name(tensor.dtype)},
                            {"shape", tensor.shape},
                            {"data_offsets", {data_size_, data_size_ + tensor.byte_size}}};
        if (header.size() > 1) header += ',';
        // dump(), not quoted_name(): a name that is not UTF-8 must be refused, not rewritten.
        header += json(tensor.name).dump() + ':' + entry.dump();
        data_size_ += tensor.byte_size;
      }
      header += '}';
      // Readers may map the data section and view it as typed arrays; 8-byte alignment of
      // 8 + header length keeps every element aligned.
      header.append((8 - header.size() % 8) % 8, ' ');
      if (header.size() > detail::max_header_bytes)
        detail::fail(path_, "header of " + std::to_string(header.size()) + " bytes exceeds the " +
                                std::to_string(detail::max_header_bytes / 1'000'000) + " MB limit of readers");
      return header;
    } catch (const json::exception& error) {  // type_error 316: a name or metadata that is not UTF-8
      detail::fail_json(path_, "cannot write the header", error);
    }
  }

  static constexpr std::size_t writeback_chunk = std::size_t{64} << 20;

  /// Counts `size` bytes that reached the file; once 64 MiB have arrived unsynced, starts
  /// their disk write. sync_file_range only starts it: its result is a hint, and finish()'s
  /// fsync reports any error.
  void arrived(std::size_t size) {
    written_ += size;
    unsynced_ += size;
    if (!durable_ || unsynced_ < writeback_chunk) return;
    ::sync_file_range(fd_.get(), static_cast<off_t>(unsynced_from_), static_cast<off_t>(unsynced_),
                      SYNC_FILE_RANGE_WRITE);
    unsynced_from_ += unsynced_;
    unsynced_ = 0;
  }

  void discard() noexcept {
    fd_.close();
    ::unlink(path_.c_str());
  }

  void expect(std::size_t size) const {
    if (size > remaining())
      detail::fail(path_, std::to_string(size) + " more bytes do not fit: " + std::to_string(remaining()) +
                              " of the data section remain");
  }

  const tensor_spec& tensor_at(std::uint64_t position) const {
    for (const tensor_spec& tensor : tensors_) {
      if (position < tensor.byte_size) return tensor;
      position -= tensor.byte_size;
    }
    return tensors_.back();
  }

  std::filesystem::path path_;
  std::vector<tensor_spec> tensors_;
  detail::file_descriptor fd_;
  std::uint64_t data_size_ = 0;
  std::uint64_t written_ = 0;
  bool durable_ = true;
  std::uint64_t unsynced_from_ = 0;  // file offset of the first byte whose write was not started
  std::uint64_t unsynced_ = 0;
  bool finished_ = false;
};

/// Streams `size` bytes starting at `offset` of `in_fd` into `out`, as the next tensor bytes.
/// Uses copy_file_range so that the kernel moves the data (or the filesystem shares extents);
/// where that is unavailable (EXDEV, ENOSYS, EINVAL, EOPNOTSUPP) it falls back to pread/write
/// through a buffer of at most 8 MiB. Neither way holds a whole tensor in memory.
/// @param[in]     in_fd   readable descriptor, e.g. safetensors_file::descriptor(); its file
///                        position is not used or changed
/// @param[in]     offset  byte offset in the source file, e.g. tensor_entry::offset
/// @param[in]     size    byte count, e.g. tensor_entry::byte_size
/// @param[in,out] out     writer receiving the bytes
inline void copy_range(int in_fd, off_t offset, std::size_t size, safetensors_writer& out) {
  out.expect(size);
  const std::string source_ended =
      "source ended before " + std::to_string(size) + " bytes from offset " + std::to_string(offset) + " were copied";
  off_t position = offset;
  std::size_t left = size;
  while (left > 0) {
    const ssize_t copied = ::copy_file_range(in_fd, &position, out.fd_.get(), nullptr,
                                             std::min(left, safetensors_writer::writeback_chunk), 0);
    if (copied > 0) {
      left -= static_cast<std::size_t>(copied);
      out.arrived(static_cast<std::size_t>(copied));
      continue;
    }
    if (copied == 0) detail::fail(out.path_, source_ended);
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
    detail::fail(out.path_, detail::with_errno("copying tensor data"));
  }
  if (left > 0) {
    std::vector<char> buffer(std::min<std::size_t>(left, std::size_t{8} << 20));
    while (left > 0) {
      const ssize_t got = ::pread(in_fd, buffer.data(), std::min(left, buffer.size()), position);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) detail::fail(out.path_, detail::with_errno("reading tensor data to copy"));
      if (got == 0) detail::fail(out.path_, source_ended);
      detail::write_all(out.path_, out.fd_.get(), buffer.data(), static_cast<std::size_t>(got));
      position += got;
      left -= static_cast<std::size_t>(got);
      out.arrived(static_cast<std::size_t>(got));
    }
  }
}

}  // namespace clp::io
