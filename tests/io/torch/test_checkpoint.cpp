// Tests for reading pytorch_model.bin without running it (io/torch/checkpoint.hpp and what it
// stands on: io/torch/zip.hpp, io/torch/pickle/machine.hpp, io/torch/pickle.hpp, io/weight_file.hpp).
// The oracle for real files is their twin: tests/data/checkpoint_formats/make_fixtures.py wrote
// each state dict with torch.save and, from the same tensors, a safetensors file by the
// format's definition. Hand-built archives and pickles (support/zip_bytes.hpp) break one rule
// each; every refusal is checked for its kind, the file it names and its one-line message.
#include "io/weight_file.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include "io/safetensors.hpp"
#include "io/support/file_refusals.hpp"
#include "io/torch/pickle.hpp"
#include "support/files.hpp"
#include "support/refusals.hpp"
#include "support/temp_dir.hpp"
#include "support/zip_bytes.hpp"

namespace io = clp_transfer::io;
namespace fs = std::filesystem;
using namespace clp_test;
using namespace std::string_literals;

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_torch_checkpoint {
namespace {

const fs::path formats = fs::path(CLP_TEST_DATA_DIR) / "checkpoint_formats";

/// Checks that the torch checkpoint `bin` holds what its safetensors twin holds: the same
/// tensors in the same order, each of the same dtype, shape and bytes.
void check_same_tensors(const fs::path& bin, const fs::path& twin) {
  INFO("checkpoint ", bin);
  const io::weight_file torch(bin, io::weight_format::torch);
  const io::safetensors_file expected(twin);
  CHECK(torch.metadata() == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(torch.tensors().size() == expected.tensors().size());
  for (std::size_t i = 0; i < torch.tensors().size(); ++i) {
    const io::tensor_entry& got = torch.tensors()[i];
    const io::tensor_entry& want = expected.tensors()[i];
    INFO("tensor ", want.name);
    CHECK(got.name == want.name);
    CHECK(got.dtype == want.dtype);
    CHECK(got.shape == want.shape);
    CHECK(torch.read(got) == expected.read(want));
    if (got.byte_size > 0) {
      const io::mapped_bytes mapped = torch.map(got);
      CHECK(std::memcmp(mapped.data(), expected.read(want).data(), got.byte_size) == 0);
    }
  }
}

/// Writes `bytes` as dir/pytorch_model.bin and returns the refusal of opening it.
std::optional<file_refusal> refusal_of_bin(const temp_dir& dir, const std::string& bytes) {
  write_file(dir / "pytorch_model.bin", bytes);
  return file_refusal_of([&] { io::weight_file{dir / "pytorch_model.bin", io::weight_format::torch}; });
}

void check_bin_refusal(const temp_dir& dir, const std::string& bytes, std::initializer_list<std::string_view> words) {
  check_refusal(refusal_of_bin(dir, bytes), file_kind::malformed, dir / "pytorch_model.bin", words);
}

/// A float32 storage of `count` elements 0, 1, 2, ...
std::string floats(int count) {
  std::string bytes;
  for (int i = 0; i < count; ++i) {
    const float x = static_cast<float>(i);
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bytes += little_endian(bits, 4);
  }
  return bytes;
}

pickled_tensor float_tensor(std::string name, std::string key, std::int64_t elements, std::vector<std::int64_t> shape,
                            std::vector<std::int64_t> stride, std::int64_t offset = 0) {
  return {std::move(name), "FloatStorage", std::move(key), elements, offset, std::move(shape), std::move(stride)};
}

}  // namespace

TEST_CASE("torch.save's checkpoints read as their safetensors twins: F32, F16, BF16, I64, sharded") {
  check_same_tensors(formats / "helper_sentencepiece" / "pytorch_model.bin",
                     formats / "helper_sentencepiece" / "model.safetensors");
  check_same_tensors(formats / "helper_wordpiece" / "pytorch_model.bin",
                     formats / "helper_wordpiece" / "model.safetensors");
  for (const char* shard : {"00001", "00002"})
    check_same_tensors(formats / "source_bin" / (std::string("pytorch_model-") + shard + "-of-00002.bin"),
                       formats / "source" / (std::string("model-") + shard + "-of-00002.safetensors"));
}

TEST_CASE("a tied weight saved under two names is one range read twice, a view of part of a tensor refused") {
  const io::weight_file tied(formats / "refusals" / "tied.bin", io::weight_format::torch);
  REQUIRE(tied.tensors().size() == 2);
  CHECK(tied.tensors()[0].name == "embed.weight");  // same range: the state dict's order
  CHECK(tied.tensors()[1].name == "head.weight");
  CHECK(tied.tensors()[0].offset == tied.tensors()[1].offset);
  CHECK(tied.read(tied.tensors()[1]) == tied.read(tied.tensors()[0]));
  check_refusal(file_refusal_of([] {
                  io::weight_file{formats / "refusals" / "view.bin", io::weight_format::torch};
                }),
                file_kind::malformed, formats / "refusals" / "view.bin",
                {"tensors \"weight\" and \"row\" share part of their bytes"});
  check_refusal(file_refusal_of([] {
                  io::weight_file{formats / "refusals" / "transposed.bin", io::weight_format::torch};
                }),
                file_kind::malformed, formats / "refusals" / "transposed.bin",
                {"tensor \"weight\" is not contiguous (shape [3, 2], strides [1, 3])"});
  check_refusal(file_refusal_of([] {
                  io::weight_file{formats / "refusals" / "legacy.bin", io::weight_format::torch};
                }),
                file_kind::malformed, formats / "refusals" / "legacy.bin",
                {"torch's legacy format", "before torch 1.6"});
}

TEST_CASE("a pickle that names os.system or builtins.eval is refused by the global's name, and nothing runs") {
  // The fixtures' pickles would create these files when loaded (make_fixtures.py checked it).
  for (const auto& [fixture, global, trace] :
       {std::tuple("os_system.bin", "\"os.system\"", "/tmp/clp-transfer-pickle-ran-os-system"),
        std::tuple("builtins_eval.bin", "\"builtins.eval\"", "/tmp/clp-transfer-pickle-ran-builtins-eval")}) {
    INFO(fixture);
    std::error_code ignored;
    fs::remove(trace, ignored);
    const fs::path file = formats / "refusals" / fixture;
    check_refusal(file_refusal_of([&] {
                    io::weight_file{file, io::weight_format::torch};
                  }),
                  file_kind::malformed, file, {"data.pkl names the global", global, "nothing"});
    CHECK(!fs::exists(trace));
  }
}

TEST_CASE("hand-built checkpoints: a zip64 directory or none, a view inside a larger storage, a parameter") {
  temp_dir dir;
  const std::string pickle =
      state_dict_pickle({float_tensor("w", "0", 6, {2, 3}, {3, 1}), float_tensor("row", "1", 8, {4}, {1}, 4),
                         float_tensor("scalar", "2", 1, {}, {})});
  for (bool zip64 : {true, false}) {
    std::vector<zip_member> members{
        {"arch/data.pkl", pickle}, {"arch/data/0", floats(6)}, {"arch/data/1", floats(8)}, {"arch/data/2", floats(1)}};
    write_file(dir / "pytorch_model.bin", zip_bytes(members, zip64));
    const io::weight_file file(dir / "pytorch_model.bin", io::weight_format::torch);
    REQUIRE(file.tensors().size() == 3);
    CHECK(file.tensors()[0].shape == std::vector<std::int64_t>{2, 3});
    CHECK(file.read(file.tensors()[0]) == file.read(*file.find("w")));
    const io::tensor_entry& row = file.at("row");
    CHECK(row.byte_size == 16);
    std::vector<std::byte> expected(16);
    std::memcpy(expected.data(), floats(8).data() + 16, 16);  // elements 4..7 of storage 1
    CHECK(file.read(row) == expected);
    CHECK(file.at("scalar").shape.empty());
    CHECK(file.at("scalar").byte_size == 4);
  }
  // nn.Parameter: _rebuild_parameter(tensor, requires_grad, OrderedDict()), as torch.save writes
  // a module's parameters (a state dict saved with keep_vars=True).
  const std::string parameter = "\x80\x02}("s + pickle_str("p") + pickle_global("torch._utils", "_rebuild_parameter") +
                                "(" + pickle_tensor(float_tensor("x", "0", 2, {2}, {1})) + "\x88" +
                                pickle_global("collections", "OrderedDict") + ")RtRu.";
  write_file(dir / "pytorch_model.bin", torch_zip_bytes("p", parameter, {{"0", floats(2)}}));
  const io::weight_file file(dir / "pytorch_model.bin", io::weight_format::torch);
  REQUIRE(file.tensors().size() == 1);
  CHECK(file.tensors()[0].name == "p");
  CHECK(file.tensors()[0].shape == std::vector<std::int64_t>{2});
}

TEST_CASE("archives a torch checkpoint cannot be: each refused naming the file and what is wrong") {
  temp_dir dir;
  const std::string pickle = state_dict_pickle({float_tensor("w", "0", 4, {2, 2}, {2, 1})});
  const std::vector<std::pair<std::string, std::string>> storage{{"0", floats(4)}};
  SUBCASE("not a zip archive, an empty file, a tar archive") {
    check_bin_refusal(dir, "hello", {"not a zip archive"});
    check_bin_refusal(dir, "", {"not a zip archive"});
    std::string tar(512, '\0');
    tar.replace(257, 5, "ustar");
    check_bin_refusal(dir, tar, {"legacy tar format"});
  }
  SUBCASE("a truncated archive") {
    const std::string whole = torch_zip_bytes("a", pickle, storage);
    check_bin_refusal(dir, whole.substr(0, whole.size() - 30), {"no end of central directory record"});
  }
  SUBCASE("a compressed or an encrypted entry") {
    check_bin_refusal(dir, zip_bytes({{"a/data.pkl", pickle, 8}, {"a/data/0", floats(4)}}),
                      {"entry \"a/data.pkl\" is compressed (method 8)"});
    check_bin_refusal(dir, zip_bytes({{"a/data.pkl", pickle}, {"a/data/0", floats(4), 0, 1}}),
                      {"entry \"a/data/0\" is encrypted"});
  }
  SUBCASE("no data.pkl, two of them, a record outside the archive's folder, an entry twice") {
    check_bin_refusal(dir, zip_bytes({{"a/data/0", floats(4)}}), {"without a data.pkl record"});
    check_bin_refusal(dir, zip_bytes({{"a/data.pkl", pickle}, {"b/data.pkl", pickle}}), {"holds two pickles"});
    check_bin_refusal(dir, zip_bytes({{"a/data.pkl", pickle}, {"a/data/0", floats(4)}, {"evil.txt", "x"}}),
                      {"record \"evil.txt\" outside the archive's folder \"a\""});
    check_bin_refusal(dir, zip_bytes({{"a/data.pkl", pickle}, {"a/data/0", floats(4)}, {"a/data/0", floats(4)}}),
                      {"entry \"a/data/0\" appears twice"});
  }
  SUBCASE("a big-endian checkpoint") {
    check_bin_refusal(dir, torch_zip_bytes("a", pickle, storage, "big"), {"byte order \"big\"", "little-endian"});
  }
  SUBCASE("a storage without its record, or of another size than its persistent id says") {
    check_bin_refusal(dir, torch_zip_bytes("a", pickle, {{"1", floats(4)}}),
                      {"tensor \"w\" has no record \"a/data/0\""});
    check_bin_refusal(dir, torch_zip_bytes("a", pickle, {{"0", floats(5)}}),
                      {"tensor \"w\" has a storage of 4 F32 elements", "holds 20 bytes"});
  }
  SUBCASE("a tensor past its storage, or with a negative offset") {
    const std::string past = state_dict_pickle({float_tensor("w", "0", 4, {2, 2}, {2, 1}, 1)});
    check_bin_refusal(dir, torch_zip_bytes("a", past, storage), {"tensor \"w\" runs past its storage"});
    const std::string negative = state_dict_pickle({float_tensor("w", "0", 4, {2}, {1}, -1)});
    check_bin_refusal(dir, torch_zip_bytes("a", negative, storage), {"tensor \"w\" runs past its storage"});
  }
  SUBCASE("two tensors that read one storage as different types") {
    pickled_tensor half = float_tensor("h", "0", 8, {8}, {1});
    half.storage_type = "HalfStorage";
    const std::string mixed = state_dict_pickle({float_tensor("w", "0", 4, {4}, {1}), half});
    check_bin_refusal(dir, torch_zip_bytes("a", mixed, storage),
                      {"tensors \"w\" and \"h\" read storage \"0\" with other types or sizes"});
  }
  SUBCASE("a storage type outside the allow-list, and a rebuild function outside it") {
    pickled_tensor complex = float_tensor("c", "0", 2, {2}, {1});
    complex.storage_type = "ComplexFloatStorage";
    check_bin_refusal(dir, torch_zip_bytes("a", state_dict_pickle({complex}), storage),
                      {"names the global \"torch.ComplexFloatStorage\""});
    check_bin_refusal(
        dir,
        torch_zip_bytes("a", state_dict_pickle({float_tensor("w", "0", 4, {4}, {1})}, "_rebuild_sparse_tensor"),
                        storage),
        {"names the global \"torch._utils._rebuild_sparse_tensor\""});
  }
}

TEST_CASE("the pickle interpreter: plain data, memo and protocol 4 framing read, everything else refused") {
  const fs::path file = "model/pytorch_model.bin";
  const auto state_dict = [&](const std::string& pickle) {
    return io::read_torch_state_dict(file, "a/data.pkl", pickle);
  };
  const auto refused = [&](const std::string& pickle, std::initializer_list<std::string_view> words) {
    check_refusal(file_refusal_of([&] { state_dict(pickle); }), file_kind::malformed, file, words);
  };
  SUBCASE("an empty state dict, as a plain dict or an OrderedDict with _metadata") {
    CHECK(state_dict("\x80\x02}q\x00."s).empty());
    const std::string metadata = "\x80\x02" + pickle_global("collections", "OrderedDict") + "q\x00)R}"s +
                                 pickle_str("_metadata") + "h\x00)R"s + pickle_str("") + "}" + pickle_str("version") +
                                 "K\x01sssb.";
    CHECK(state_dict(metadata).empty());
  }
  SUBCASE("globals outside the allow-list, however they are named") {
    refused("\x80\x02" + pickle_global("os", "system") + pickle_str("touch x") + "\x85R.",
            {"a/data.pkl names the global \"os.system\"", "nothing in the file was run"});
    refused(
        "\x80\x04\x8c\x08"
        "builtins\x8c\x04"
        "eval\x93.",
        {"names the global \"builtins.eval\""});
    refused("\x80\x02(i__builtin__\nexec\n.", {"names the global \"__builtin__.exec\""});
    CHECK(state_dict("\x80\x02" + pickle_global("collections", "OrderedDict") + ")R.").empty());
  }
  SUBCASE("opcodes torch.save never writes") {
    refused("\x80\x02I1\n.", {"opcode INT, which no torch.save writes"});
    refused("\x80\x02\x81.", {"opcode NEWOBJ"});
    refused("\x80\x02\xff.", {"opcode 0xff"});
    refused("\x80\x01}.", {"pickle protocol 1"});
  }
  SUBCASE("a value that would contain itself, or is nested without end") {
    refused(
        "\x80\x02]q\x00h\x00"
        "a."s,
        {"to itself"});
    refused(
        "\x80\x02]q\x00]h\x00"
        "aa."s,
        {"after it was used"});
    refused("\x80\x02" + std::string(1001, '('), {"more than 1000 open MARKs"});
    refused("\x80\x02)" + std::string(1001, '\x85') + ".", {"nested deeper than 1000 levels"});
  }
  SUBCASE("a pickle cut short, or that leaves more than its value") {
    refused(
        "\x80\x02X\x10\x00\x00\x00"
        "abc"s,
        {"ends inside an opcode's argument"});
    refused("\x80\x02}", {"ends without STOP"});
    refused("\x80\x02}}.", {"STOP with 2 values"});
    refused("\x80\x02h\x05.", {"memo entry 5, which was never put"});
    refused(
        "\x80\x02"
        "a.",
        {"takes a value the stack does not hold"});
  }
  SUBCASE("a state dict that is no dict of tensors") {
    refused("\x80\x02]q\x00."s, {"no dict of tensor name -> tensor"});
    refused("\x80\x02}(" + pickle_str("w") + "K\x01u.", {"maps \"w\" to something other than a tensor"});
    refused(state_dict_pickle({float_tensor("w", "0", 4, {4}, {1}), float_tensor("w", "1", 4, {4}, {1})}),
            {"gives the tensor name \"w\" twice"});
    refused("\x80\x02}(" + pickle_str("\xed\xa0\x80") + "}u.", {"tensor name that is not UTF-8"});
  }
}

}  // namespace test_torch_checkpoint
