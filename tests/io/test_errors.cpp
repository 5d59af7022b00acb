// Tests of the file layer's errors (io/errors.hpp): their kinds as classes, the facts they carry
// as fields, and the one-line messages built from them, which never show the JSON library's own
// error codes.
#include "io/errors.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "io/json/file.hpp"
#include "io/safetensors/reader.hpp"
#include "support/error_of.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace io = clp_transfer::io;

TEST_CASE("file errors: the facts as fields, one line built from them, a hierarchy of their own") {
  const io::malformed_file wrong("m/model.safetensors", "has\nno rows", "wte.weight", 40);
  CHECK(std::string(wrong.what()) == "m/model.safetensors: tensor \"wte.weight\" has no rows");
  CHECK(wrong.file() == "m/model.safetensors");
  CHECK(wrong.tensor() == "wte.weight");
  CHECK(wrong.offset() == 40);
  CHECK(wrong.problem() == "has\nno rows");
  CHECK(wrong.facts().file == "m/model.safetensors");
  CHECK(wrong.facts().tensor == "wte.weight");

  const io::io_error broken("a\nb", "cannot open: No such file or directory");
  CHECK(std::string(broken.what()) == "\"a\\nb\": cannot open: No such file or directory");
  CHECK(broken.offset() == -1);

  const io::truncated_file cut("m/model.safetensors", 4096, 1000, "the header");
  CHECK(cut.expected_size() == 4096);
  CHECK(cut.actual_size() == 1000);
  CHECK(std::string(cut.what()) ==
        "m/model.safetensors: is truncated: it has 1000 bytes, but the header runs to byte 4096 (an interrupted "
        "download?); download it again");

  // Each is a file_error and a std::runtime_error, and none is an error of the library.
  CHECK_THROWS_AS(throw cut, io::malformed_file);
  CHECK_THROWS_AS(throw cut, io::file_error);
  CHECK_THROWS_AS(throw broken, std::runtime_error);
  bool library = false;
  try {
    throw wrong;
  } catch (const clp::error&) {
    library = true;
  } catch (const io::file_error&) {
  }
  CHECK(!library);
}

TEST_CASE("JSON errors read \"file: line L column C: what\", without the JSON library's codes") {
  // The parser's own message, as nlohmann::json writes it (its documented form).
  CHECK(io::json_reason("[json.exception.parse_error.101] parse error at line 3, column 14: syntax error while "
                        "parsing value - invalid literal; last read: 'no'") ==
        "line 3 column 14: syntax error while parsing value - invalid literal; last read: 'no'");
  CHECK(io::json_reason("[json.exception.out_of_range.406] number overflow parsing '9e999'") ==
        "number overflow parsing '9e999'");
  CHECK(io::json_reason("plain") == "plain");

  clp_test::temp_dir dir;
  const std::filesystem::path file = dir / "config.json";
  clp_test::write_file(file, "{\n  \"a\": 1,\n  \"b\": nope\n}");
  const std::string message = clp_test::error_of<io::malformed_file>([&] { io::read_json_file<nlohmann::json>(file); });
  CHECK(message.rfind(file.string() + ": line 3 column ", 0) == 0);
  CHECK(message.find(": not valid JSON: syntax error") != std::string::npos);
  CHECK(message.find("json.exception") == std::string::npos);
  CHECK(message.find("::") == std::string::npos);

  clp_test::write_file(file, R"({"a": 9e999})");
  const std::string overflow =
      clp_test::error_of<io::malformed_file>([&] { io::read_json_file<nlohmann::json>(file); });
  CHECK(overflow == file.string() + ": not valid JSON: number overflow parsing '9e999'");
}

TEST_CASE("a truncated safetensors file says so, with both sizes, and to download it again") {
  clp_test::temp_dir dir;
  const std::filesystem::path file = dir / "model.safetensors";
  const std::string header = R"({"t":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  bytes += header + std::string(16, 'x');
  clp_test::write_file(file, bytes.substr(0, bytes.size() - 6));
  const auto cut = clp_test::thrown<io::truncated_file>([&] { io::safetensors_file{file}; });
  REQUIRE(cut.has_value());
  CHECK(cut->expected_size() == bytes.size());
  CHECK(cut->actual_size() == bytes.size() - 6);
  CHECK(cut->file() == file);
  CHECK(std::string(cut->what()).find("download it again") != std::string::npos);
}

TEST_CASE("a name in a message is quoted whole up to 80 bytes, and a longer one cut to its start with its size") {
  using clp_transfer::io::quoted_name;
  CHECK(quoted_name("Haus") == "\"Haus\"");
  CHECK(quoted_name("a\nb") == "\"a\\nb\"");
  const std::string eighty(80, 'x');
  CHECK(quoted_name(eighty) == "\"" + eighty + "\"");
  // A token of 10^6 bytes in a file must not make a message of 10^6 bytes.
  const std::string huge = "\xC4\xA0" + std::string(1000000, 'a');
  CHECK(quoted_name(huge) == "\"\xC4\xA0" + std::string(58, 'a') + "...\" (1000002 bytes)");
  // The cut never splits a UTF-8 character: 59 'a' then a two-byte one across byte 60.
  const std::string multibyte = std::string(59, 'a') + "\xC3\xA4" + std::string(100, 'b');
  CHECK(quoted_name(multibyte) == "\"" + std::string(59, 'a') + "...\" (161 bytes)");
}
