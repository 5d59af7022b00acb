// Tests for io/safetensors.hpp: round trips through the writer and reader, the header layout,
// streaming copies, and every validation error of the reader.
#include "io/safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "io/support/file_refusals.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/safetensors_bytes.hpp"
#include "support/temp_dir.hpp"

using clp_transfer::io::copy_range;
using clp_transfer::io::dtype;
using clp_transfer::io::safetensors_file;
using clp_transfer::io::safetensors_writer;
using clp_transfer::io::tensor_spec;
using namespace clp_test;

namespace {

/// `size` bytes counting up from `seed`, so that every tensor's bytes are distinct.
std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((seed + i * 7) & 0xff);
  return bytes;
}

/// A safetensors file from literal header text and `data_size` zero bytes of data.
std::string raw_file(const std::string& header, std::size_t data_size) {
  return safetensors_bytes(header, std::string(data_size, '\0'));
}

struct sample_tensor {
  tensor_spec spec;
  std::vector<std::byte> bytes;
};

/// Writes `tensors` to `file` in order, each with one append().
void write_all(const std::filesystem::path& file, const std::vector<sample_tensor>& tensors,
               const std::map<std::string, std::string>& metadata = {}) {
  std::vector<tensor_spec> specs;
  for (const sample_tensor& tensor : tensors) specs.push_back(tensor.spec);
  safetensors_writer writer(file, specs, metadata);
  for (const sample_tensor& tensor : tensors) writer.append(tensor.bytes.data(), tensor.bytes.size());
  writer.finish();
}

sample_tensor sample(const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape,
                     std::size_t element_size, unsigned seed) {
  std::size_t count = 1;
  for (std::int64_t d : shape) count *= static_cast<std::size_t>(d);
  return {{name, *clp_transfer::io::parse_dtype(dtype), shape, count * element_size},
          pattern(count * element_size, seed)};
}

}  // namespace

TEST_CASE("safetensors round trip keeps dtype, shape, bytes and order") {
  temp_dir dir;
  const std::vector<sample_tensor> tensors = {
      sample("f32", "F32", {2, 3}, 4, 1),   sample("f16", "F16", {4}, 2, 2),
      sample("bf16", "BF16", {2, 2}, 2, 3), sample("f64", "F64", {3}, 8, 4),
      sample("i64", "I64", {2}, 8, 5),      sample("u8", "U8", {5}, 1, 6),
      sample("bool", "BOOL", {3}, 1, 7),    sample("scalar", "F32", {}, 4, 8),
      sample("empty", "F32", {0, 4}, 4, 9), sample("after_empty", "I32", {1, 2}, 4, 10)};
  write_all(dir / "model.safetensors", tensors);

  const safetensors_file file(dir / "model.safetensors");
  REQUIRE(file.tensors().size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const clp_transfer::io::tensor_entry& read = file.tensors()[i];
    const tensor_spec& wrote = tensors[i].spec;
    INFO("tensor ", wrote.name);
    CHECK(read.name == wrote.name);
    CHECK(read.dtype == wrote.dtype);
    CHECK(read.shape == wrote.shape);
    CHECK(read.byte_size == wrote.byte_size);
    CHECK(read.element_size == clp_transfer::io::dtype_size(wrote.dtype));
    CHECK(file.read(read) == tensors[i].bytes);
  }
  CHECK(file.at("scalar").element_count() == 1);
  CHECK(file.at("scalar").shape.empty());
  CHECK(file.at("empty").element_count() == 0);
  CHECK(file.find("missing") == nullptr);
  CHECK(file.metadata().empty());
  CHECK(file.file_size() == std::filesystem::file_size(dir / "model.safetensors"));

  std::vector<std::byte> buffer(24);
  file.read(file.at("f32"), buffer.data(), buffer.size());
  CHECK(buffer == tensors[0].bytes);
  check_refusal(file_refusal_of([&] { file.read(file.at("f32"), buffer.data(), 23); }),
                clp::error_kind::invalid_argument, dir / "model.safetensors", {"\"f32\"", "24 bytes", "23"});
  check_refusal(file_refusal_of([&] { (void)file.at("missing"); }), clp::error_kind::invalid_argument,
                dir / "model.safetensors", {"no tensor \"missing\""});
}

TEST_CASE("the written header is padded with spaces to a 4 KiB boundary") {
  temp_dir dir;
  // Names of every length mod 8 exercise every amount of padding.
  for (std::size_t length = 1; length <= 8; ++length) {
    const std::string name(length, 'w');
    write_all(dir / "a.safetensors", {sample(name, "F32", {2}, 4, 0)});
    const std::string bytes = read_file(dir / "a.safetensors");
    const std::uint64_t n = header_length(bytes);
    INFO("name length ", length);
    CHECK((8 + n) % 4096 == 0);
    const std::string header = bytes.substr(8, n);
    CHECK(header.substr(header.rfind('}') + 1).find_first_not_of(' ') == std::string::npos);
    CHECK(safetensors_file(dir / "a.safetensors").data_start() == 8 + n);
  }
}

TEST_CASE("an unaligned header is accepted") {
  temp_dir dir;
  const std::string header = R"({"x":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})";
  REQUIRE((8 + header.size()) % 8 != 0);
  write_file(dir / "u.safetensors", raw_file(header, 3));
  const safetensors_file file(dir / "u.safetensors");
  CHECK(file.at("x").offset == 8 + header.size());
}

TEST_CASE("__metadata__ survives a round trip") {
  temp_dir dir;
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "a b\nc"}};
  write_all(dir / "m.safetensors", {sample("x", "F32", {1}, 4, 0)}, metadata);
  CHECK(safetensors_file(dir / "m.safetensors").metadata() == metadata);
}

TEST_CASE("the writer keeps the caller's order in the header and the data") {
  temp_dir dir;
  write_all(dir / "o.safetensors",
            {sample("zeta", "F32", {2}, 4, 1), sample("alpha", "F32", {3}, 4, 2), sample("mid", "U8", {1}, 1, 3)});
  const std::string bytes = read_file(dir / "o.safetensors");
  const std::string header = bytes.substr(8, header_length(bytes));
  CHECK(header.find("\"zeta\"") < header.find("\"alpha\""));
  CHECK(header.find("\"alpha\"") < header.find("\"mid\""));

  const safetensors_file file(dir / "o.safetensors");
  REQUIRE(file.tensors().size() == 3);
  CHECK(file.tensors()[0].name == "zeta");
  CHECK(file.tensors()[1].name == "alpha");
  CHECK(file.tensors()[2].name == "mid");
  CHECK(file.tensors()[1].offset == file.data_start() + 8);
}

TEST_CASE("copy_range streams tensors from one file into another") {
  temp_dir dir;
  // Larger than the 8 MiB fallback buffer, so either path needs several rounds.
  const sample_tensor big = sample("big", "F32", {3, 1000, 1000}, 4, 11);
  const sample_tensor small = sample("small", "BF16", {7}, 2, 12);
  write_all(dir / "in.safetensors", {small, big});
  const safetensors_file in(dir / "in.safetensors");

  {
    safetensors_writer writer(dir / "out.safetensors", {big.spec, small.spec});
    for (const char* name : {"big", "small"})
      copy_range(in.descriptor(), static_cast<off_t>(in.at(name).offset), in.at(name).byte_size, writer);
    CHECK(writer.remaining() == 0);
    writer.finish();
  }
  const safetensors_file out(dir / "out.safetensors");
  CHECK(out.read(out.at("big")) == big.bytes);
  CHECK(out.read(out.at("small")) == small.bytes);

  safetensors_writer writer(dir / "short.safetensors", {big.spec});
  check_refusal(
      file_refusal_of([&] { copy_range(in.descriptor(), static_cast<off_t>(in.file_size() - 4), 4 * 1000, writer); }),
      file_kind::io, dir / "short.safetensors", {"source ended"});
}

TEST_CASE("map() gives the same bytes as read(), at any offset, and outlives a move") {
  temp_dir dir;
  // An odd-sized tensor first, so the next ones start at offsets that are not page- or even
  // 4-byte-aligned; the big one spans several pages.
  const sample_tensor odd = sample("odd", "U8", {5}, 1, 1);
  const sample_tensor big = sample("big", "F32", {3, 5000}, 4, 2);
  const sample_tensor tail = sample("tail", "BF16", {9}, 2, 3);
  write_all(dir / "m.safetensors", {odd, big, tail});
  const safetensors_file file(dir / "m.safetensors");
  CHECK(file.at("big").offset % 4 != 0);
  for (const sample_tensor* t : {&odd, &big, &tail}) {
    INFO("tensor ", t->spec.name);
    const clp_transfer::io::mapped_bytes mapped = file.map(file.at(t->spec.name));
    const auto* first = static_cast<const std::byte*>(mapped.data());
    CHECK(std::vector<std::byte>(first, first + t->bytes.size()) == t->bytes);
  }
  clp_transfer::io::mapped_bytes moved;
  {
    clp_transfer::io::mapped_bytes mapped = file.map(file.at("big"));
    moved = std::move(mapped);
  }
  const auto* first = static_cast<const std::byte*>(moved.data());
  CHECK(std::vector<std::byte>(first, first + big.bytes.size()) == big.bytes);
}

TEST_CASE("durable and plain writers write the same bytes, across the 64 MiB writeback steps") {
  temp_dir dir;
  const sample_tensor big = sample("big", "U8", {(std::int64_t{64} << 20) + 4099}, 1, 5);
  const sample_tensor small = sample("small", "F32", {3}, 4, 6);
  write_all(dir / "in.safetensors", {small, big});
  const safetensors_file in(dir / "in.safetensors");
  for (const bool durable : {true, false}) {
    INFO("durable ", durable);
    const auto name = std::string(durable ? "durable" : "plain") + ".safetensors";
    {
      tensor_spec again = big.spec;
      again.name = "big again";
      safetensors_writer writer(dir / name, {big.spec, small.spec, again}, {}, durable);
      writer.append(big.bytes.data(), big.bytes.size());
      copy_range(in.descriptor(), static_cast<off_t>(in.at("small").offset), in.at("small").byte_size, writer);
      copy_range(in.descriptor(), static_cast<off_t>(in.at("big").offset), in.at("big").byte_size, writer);
      writer.finish();
    }
    const safetensors_file out(dir / name);
    CHECK(out.read(out.tensors()[0]) == big.bytes);
    CHECK(out.read(out.tensors()[1]) == small.bytes);
    CHECK(out.read(out.tensors()[2]) == big.bytes);
  }
}

TEST_CASE("append_to fills tensors interleaved, large aligned stretches directly, the bytes as written") {
  temp_dir dir;
  // Two large tensors (direct I/O where the file system allows it) after an odd one that leaves
  // the second unaligned in the file, and a small one; each written in pieces, interleaved.
  const sample_tensor odd = sample("odd", "U8", {5}, 1, 21);
  const sample_tensor first = sample("first", "BF16", {(3 << 20) + 1000}, 2, 22);
  const sample_tensor second = sample("second", "F32", {(1 << 20) + 3}, 4, 23);
  const sample_tensor small = sample("small", "U8", {17}, 1, 24);
  const std::vector<const sample_tensor*> all = {&first, &odd, &second, &small};
  for (const bool durable : {true, false}) {
    INFO("durable ", durable);
    {
      safetensors_writer writer(dir / "i.safetensors", {first.spec, odd.spec, second.spec, small.spec}, {}, durable);
      // Pieces of 1.5 MiB + 1 byte: some start 4 KiB-aligned in the file, some do not.
      const std::size_t piece = (std::size_t{3} << 19) + 1;
      std::vector<std::size_t> done(all.size(), 0);
      for (bool more = true; more;) {
        more = false;
        for (std::size_t t = all.size(); t-- > 0;) {
          const std::size_t size = std::min(piece, all[t]->bytes.size() - done[t]);
          if (size == 0) continue;
          writer.append_to(t, all[t]->bytes.data() + done[t], size);
          done[t] += size;
          more = true;
        }
      }
      CHECK(writer.remaining() == 0);
      writer.finish();
    }
    const safetensors_file out(dir / "i.safetensors");
    for (const sample_tensor* t : all) CHECK(out.read(out.at(t->spec.name)) == t->bytes);
  }

  // From memory aligned like the file, the large writes take the direct path; the bytes are the same.
  std::vector<std::byte> aligned_store(first.bytes.size() + 8192);
  auto* aligned = aligned_store.data() + (4096 - reinterpret_cast<std::uintptr_t>(aligned_store.data()) % 4096) % 4096;
  std::copy(first.bytes.begin(), first.bytes.end(), aligned);
  {
    safetensors_writer writer(dir / "a.safetensors", {first.spec, small.spec});
    writer.append_to(1, small.bytes.data(), small.bytes.size());
    writer.append_to(0, aligned, std::size_t{2} << 20);
    writer.append_to(0, aligned + (std::size_t{2} << 20), first.bytes.size() - (std::size_t{2} << 20));
    writer.finish();
  }
  const safetensors_file out(dir / "a.safetensors");
  CHECK(out.at("first").offset % 4096 == 0);
  CHECK(out.read(out.at("first")) == first.bytes);
  CHECK(out.read(out.at("small")) == small.bytes);

  // Past a tensor's end, or a tensor that is not there: refused, naming the file (and tensor).
  safetensors_writer writer(dir / "r.safetensors", {small.spec, odd.spec});
  check_refusal(file_refusal_of([&] { writer.append_to(1, odd.bytes.data(), 6); }), clp::error_kind::invalid_argument,
                dir / "r.safetensors", {"tensor \"odd\"", "6 more bytes do not fit: 5 remain"});
  check_refusal(file_refusal_of([&] { writer.append_to(2, odd.bytes.data(), 1); }), clp::error_kind::invalid_argument,
                dir / "r.safetensors", {"no tensor at position 2 of 2"});
  // append continues the first tensor not yet complete.
  writer.append_to(1, odd.bytes.data(), 5);
  writer.append(small.bytes.data(), small.bytes.size());
  CHECK(writer.remaining() == 0);
}

TEST_CASE("the writer refuses wrong amounts of data and leaves no partial file") {
  temp_dir dir;
  const auto file = dir / "w.safetensors";
  const std::vector<tensor_spec> specs = {{"a", dtype::f32, {2}, 8}, {"b", dtype::u8, {3}, 3}};
  const std::vector<std::byte> bytes(16);

  SUBCASE("too few bytes: finish names the incomplete tensor and the file disappears") {
    {
      safetensors_writer writer(file, specs);
      writer.append(bytes.data(), 9);
      CHECK(writer.remaining() == 2);
      check_refusal(file_refusal_of([&] { writer.finish(); }), clp::error_kind::invalid_argument, file,
                    {"tensor \"b\"", "incomplete"});
    }
    CHECK_FALSE(std::filesystem::exists(file));
  }
  SUBCASE("too many bytes") {
    safetensors_writer writer(file, specs);
    check_refusal(file_refusal_of([&] { writer.append(bytes.data(), 12); }), clp::error_kind::invalid_argument, file,
                  {"do not fit"});
  }
  SUBCASE("byte size that does not fit the shape") {
    check_refusal(file_refusal_of([&] {
                    safetensors_writer(file, {{"a", dtype::f32, {2}, 7}});
                  }),
                  clp::error_kind::invalid_argument, file, {"tensor \"a\"", "byte size 7", "[2]"});
    CHECK_FALSE(std::filesystem::exists(file));
  }
  SUBCASE("unknown dtype, duplicate and reserved names") {
    // An unknown dtype can no longer be named; a value outside the enumeration is still refused.
    check_refusal(file_refusal_of([&] {
                    safetensors_writer(file, {{"a", static_cast<dtype>(99), {2}, 2}});
                  }),
                  clp::error_kind::invalid_argument, file, {"unknown dtype 99"});
    check_refusal(file_refusal_of([&] {
                    safetensors_writer(file, {specs[0], specs[0]});
                  }),
                  clp::error_kind::invalid_argument, file, {"listed twice"});
    check_refusal(file_refusal_of([&] {
                    safetensors_writer(file, {{"__metadata__", dtype::u8, {1}, 1}});
                  }),
                  clp::error_kind::invalid_argument, file, {"reserved"});
  }
}

TEST_CASE("the reader rejects malformed files with a one-line message naming the file") {
  temp_dir dir;
  const auto file = dir / "bad.safetensors";
  const auto error_for_header = [&](const std::string& header, std::size_t data_size) {
    write_file(file, raw_file(header, data_size));
    return file_refusal_of([&] { safetensors_file{file}; });
  };
  const auto entry = [](const std::string& body) { return R"({"t":{)" + body + "}}"; };

  SUBCASE("missing file") {
    check_refusal(file_refusal_of([&] { safetensors_file{dir / "none.safetensors"}; }), file_kind::io,
                  dir / "none.safetensors", {"cannot open", "No such file"});
  }
  SUBCASE("empty and truncated files") {
    write_file(file, "");
    check_refusal(file_refusal_of([&] { safetensors_file{file}; }), file_kind::malformed, file,
                  {"0 bytes", "truncated"});
    write_file(file, "abcde");
    check_refusal(file_refusal_of([&] { safetensors_file{file}; }), file_kind::malformed, file,
                  {"5 bytes", "truncated"});
  }
  SUBCASE("header length past the end of the file") {
    std::string bytes = raw_file("{}", 502);
    bytes[0] = '\x3f', bytes[1] = '\x42', bytes[2] = '\x0f';  // 999999
    write_file(file, bytes);
    const auto caught = file_refusal_of([&] { safetensors_file{file}; });
    check_refusal(caught, file_kind::truncated, file,
                  {"is truncated: it has 512 bytes, but the header runs to byte 1000007", "download it again"});
    const auto truncated = thrown<clp_transfer::io::truncated_file>([&] { safetensors_file{file}; });
    REQUIRE(truncated.has_value());
    CHECK(truncated->expected_size() == 1000007);
    CHECK(truncated->actual_size() == 512);
  }
  SUBCASE("absurd header length") {
    std::string bytes = raw_file("{}", 0);
    bytes[3] = '\x10';  // 268435458 bytes
    write_file(file, bytes);
    std::filesystem::resize_file(file, 300'000'000);  // sparse: costs no disk
    check_refusal(file_refusal_of([&] { safetensors_file{file}; }), file_kind::malformed, file, {"exceeds", "100 MB"});
  }
  SUBCASE("header not JSON or not an object") {
    check_refusal(error_for_header("{\"t\": nope\n}", 0), file_kind::malformed, file,
                  {": line 1 column ", ": header is not valid JSON: syntax error"});
    CHECK(error_for_header("{\"t\": nope\n}", 0)->message.find("json.exception") == std::string::npos);
    check_refusal(error_for_header("[1, 2]", 0), file_kind::malformed, file, {"not a JSON object"});
    check_refusal(error_for_header(R"({"t": 3})", 0), file_kind::malformed, file,
                  {"tensor \"t\"", "not a JSON object"});
  }
  SUBCASE("missing fields") {
    check_refusal(error_for_header(entry(R"("shape":[1],"data_offsets":[0,4])"), 4), file_kind::malformed, file,
                  {"tensor \"t\"", "missing \"dtype\""});
    check_refusal(error_for_header(entry(R"("dtype":"F32","data_offsets":[0,4])"), 4), file_kind::malformed, file,
                  {"missing \"shape\""});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[1])"), 4), file_kind::malformed, file,
                  {"missing \"data_offsets\""});
  }
  SUBCASE("fields of the wrong JSON type") {
    check_refusal(error_for_header(entry(R"("dtype":4,"shape":[1],"data_offsets":[0,4])"), 4), file_kind::malformed,
                  file, {"\"dtype\" is not a string"});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":"1","data_offsets":[0,4])"), 4), file_kind::malformed,
                  file, {"\"shape\" is not an array"});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[1.5],"data_offsets":[0,4])"), 4),
                  file_kind::malformed, file, {"not a dimension"});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[1],"data_offsets":[0])"), 4), file_kind::malformed,
                  file, {"\"data_offsets\" is not a pair"});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[1],"data_offsets":[-1,3])"), 4),
                  file_kind::malformed, file, {"\"data_offsets\" is not a pair"});
    check_refusal(error_for_header(R"({"__metadata__":{"a":1}})", 0), file_kind::malformed, file,
                  {"__metadata__", "not a string"});
  }
  SUBCASE("unknown dtype") {
    check_refusal(error_for_header(entry(R"("dtype":"Q4","shape":[1],"data_offsets":[0,4])"), 4), file_kind::malformed,
                  file, {"unknown dtype \"Q4\""});
  }
  SUBCASE("negative and overflowing shapes") {
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[-1,2],"data_offsets":[0,4])"), 4),
                  file_kind::malformed, file, {"negative dimension", "[-1, 2]"});
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4])"), 4),
                  file_kind::malformed, file, {"too many elements"});
    check_refusal(error_for_header(entry(R"("dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,4])"), 4),
                  file_kind::malformed, file, {"not a dimension"});
  }
  SUBCASE("data_offsets out of order or past the data") {
    check_refusal(error_for_header(entry(R"("dtype":"U8","shape":[1],"data_offsets":[4,3])"), 4), file_kind::malformed,
                  file, {"end 3 is before begin 4"});
    const std::string header = entry(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])");
    check_refusal(error_for_header(header, 4), file_kind::truncated, file,
                  {"it has " + std::to_string(8 + header.size() + 4) + " bytes",
                   "runs to byte " + std::to_string(8 + header.size() + 8)});
  }
  SUBCASE("byte size that does not match the shape") {
    check_refusal(error_for_header(entry(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,12])"), 16),
                  file_kind::malformed, file, {"holds 12 bytes", "[2, 2]", "needs 16"});
  }
  SUBCASE("overlapping tensors") {
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})",
                                   16),
                  file_kind::malformed, file, {"\"a\" and \"b\" overlap"});
    // Empty tensors own no bytes, so sharing an offset with another tensor is fine.
    write_file(file, raw_file(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                              R"("e":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})",
                              8));
    CHECK(safetensors_file(file).tensors().size() == 2);
  }
}

TEST_CASE("dtypes: every safetensors name this layer knows, its size, and names it does not") {
  // The names and sizes of the safetensors format (its Dtype enum), written out here.
  const std::vector<std::pair<std::string, std::size_t>> format = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
      {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  for (const auto& [name, size] : format) {
    INFO("dtype ", name);
    const auto type = clp_transfer::io::parse_dtype(name);
    REQUIRE(type.has_value());
    CHECK(clp_transfer::io::dtype_name(*type) == name);
    CHECK(clp_transfer::io::dtype_size(*type) == size);
  }
  CHECK(clp_transfer::io::parse_dtype("bf16") == std::nullopt);  // names are case-sensitive, as in the format
  CHECK(clp_transfer::io::parse_dtype("F4") == std::nullopt);    // sub-byte types are not read
  CHECK(clp_transfer::io::parse_dtype("") == std::nullopt);
  CHECK(clp_transfer::io::dtype_size(static_cast<dtype>(99)) == 0);
}

TEST_CASE("a failed open is an io::io_error, an error of the file layer and not of the library") {
  temp_dir dir;
  CHECK_THROWS_AS(safetensors_file(dir / "none.safetensors"), clp_transfer::io::io_error);
  CHECK_THROWS_AS(safetensors_file(dir / "none.safetensors"), clp_transfer::io::file_error);
  bool library = false;
  try {
    safetensors_file(dir / "none.safetensors");
  } catch (const clp::error&) {
    library = true;
  } catch (const std::exception&) {
  }
  CHECK(!library);
}

TEST_CASE("a file name with a line break is quoted, so the message stays one line") {
  temp_dir dir;
  const std::string message = error_of<clp_transfer::io::file_error>([&] { safetensors_file{dir / "two\nlines"}; });
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.rfind("\"" + dir.path.string() + "/two\\nlines\": cannot open", 0) == 0);
}

TEST_CASE("strict layout: the tensors tile the data section exactly, as the reference validate()") {
  temp_dir dir;
  const auto file = dir / "strict.safetensors";
  const auto error_for_header = [&](const std::string& header, std::size_t data_size) {
    write_file(file, raw_file(header, data_size));
    return file_refusal_of([&] { safetensors_file{file}; });
  };

  SUBCASE("a gap between two tensors, with its byte positions") {
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                   R"("b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
                                   4),
                  file_kind::malformed, file,
                  {"data bytes [2, 3) belong to no tensor", "between tensors \"a\" and \"b\""});
  }
  SUBCASE("a gap before the first tensor") {
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", 3), file_kind::malformed,
                  file, {"data bytes [0, 1) belong to no tensor", "before the first tensor \"a\""});
  }
  SUBCASE("bytes after the last tensor") {
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 5), file_kind::malformed,
                  file, {"data bytes [2, 5) belong to no tensor", "3 bytes after the last tensor \"a\""});
    check_refusal(error_for_header("{}", 3), file_kind::malformed, file,
                  {"data bytes [0, 3) belong to no tensor", "after the header"});
  }
  SUBCASE("tensors listed out of data order are fine when they tile the data") {
    write_file(file, raw_file(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                              R"("a":{"dtype":"F32","shape":[],"data_offsets":[4,8]},)"
                              R"("c":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                              8));
    const safetensors_file opened(file);
    REQUIRE(opened.tensors().size() == 3);
    CHECK(opened.tensors()[0].name == "c");
    CHECK(opened.tensors()[1].name == "b");
    CHECK(opened.tensors()[2].name == "a");
    write_file(file, raw_file("{}", 0));
    CHECK(safetensors_file(file).tensors().empty());
  }
  SUBCASE("a repeated tensor name, or a repeated key inside an entry") {
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                   R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                                   4),
                  file_kind::malformed, file, {"tensor name \"a\" appears twice"});
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}})", 1),
                  file_kind::malformed, file, {"key \"dtype\" appears twice"});
    check_refusal(error_for_header(R"({"__metadata__":{"k":"1","k":"2"},"a":{"dtype":"U8","shape":[1],)"
                                   R"("data_offsets":[0,1]}})",
                                   1),
                  file_kind::malformed, file, {"key \"k\" appears twice"});
  }
  SUBCASE("a header that is not a JSON object") {
    for (const char* header : {"\"text\"", "null", "123", "[]"}) {
      INFO("header ", header);
      check_refusal(error_for_header(header, 0), file_kind::malformed, file, {"header is not a JSON object"});
    }
  }
  SUBCASE("__metadata__ maps strings to strings only") {
    check_refusal(error_for_header(R"({"__metadata__":["pt"]})", 0), file_kind::malformed, file,
                  {"__metadata__ is not a JSON object"});
    check_refusal(error_for_header(R"({"__metadata__":{"format":{"pt":"1"}}})", 0), file_kind::malformed, file,
                  {"__metadata__ value of \"format\" is not a string"});
    check_refusal(error_for_header(R"({"__metadata__":{"n":null}})", 0), file_kind::malformed, file,
                  {"\"n\" is not a string"});
  }
  SUBCASE("a number too large for a double, anywhere in the header") {
    // nlohmann throws out_of_range (not parse_error) for these; still one line naming the file.
    check_refusal(error_for_header(R"({"a":{"dtype":"U8","shape":[9e999],"data_offsets":[0,1]}})", 1),
                  file_kind::malformed, file, {"header is not valid JSON", "number overflow", "9e999"});
    check_refusal(error_for_header(R"({"__metadata__":{"x":"1"},"y":-1e400})", 0), file_kind::malformed, file,
                  {"number overflow"});
  }
  SUBCASE("a header length one byte over the 100 MB cap") {
    std::string bytes = raw_file("{}", 0);
    const std::uint64_t length = 100'000'001;
    bytes.replace(0, 8, length_prefix(length));
    write_file(file, bytes);
    std::filesystem::resize_file(file, 8 + length);  // sparse: costs no disk
    check_refusal(file_refusal_of([&] { safetensors_file{file}; }), file_kind::malformed, file,
                  {"header length 100000001 exceeds the 100 MB limit"});
  }
}

TEST_CASE("the writer's files pass the strict reader: back to back from offset 0, nothing after") {
  temp_dir dir;
  const std::vector<sample_tensor> tensors = {sample("first", "BF16", {3}, 2, 1), sample("none", "F32", {0}, 4, 2),
                                              sample("odd", "U8", {5}, 1, 3), sample("scalar", "F64", {}, 8, 4),
                                              sample("last_empty", "I16", {2, 0}, 2, 5)};
  write_all(dir / "w.safetensors", tensors, {{"format", "pt"}});
  const safetensors_file file(dir / "w.safetensors");
  std::uint64_t expected_offset = file.data_start();
  for (const sample_tensor& tensor : tensors) {
    INFO("tensor ", tensor.spec.name);
    CHECK(file.at(tensor.spec.name).offset == expected_offset);
    expected_offset += tensor.spec.byte_size;
  }
  CHECK(expected_offset == file.file_size());
}

TEST_CASE("the writer refuses names and metadata that are not UTF-8 rather than rewrite them") {
  temp_dir dir;
  const auto file = dir / "u.safetensors";
  check_refusal(file_refusal_of([&] {
                  safetensors_writer(file, {{"bad\xff", dtype::u8, {1}, 1}});
                }),
                clp::error_kind::invalid_argument, file, {"cannot write the header", "UTF-8"});
  CHECK_FALSE(std::filesystem::exists(file));
  check_refusal(file_refusal_of([&] {
                  safetensors_writer(file, {{"a", dtype::u8, {1}, 1}}, {{"k", "\xc3"}});
                }),
                clp::error_kind::invalid_argument, file, {"cannot write the header"});
}
