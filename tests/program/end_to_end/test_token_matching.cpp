// Matching tokens by bytes and special tokens by role, end to end: `clp-transfer overlap` on
// real tokenizers against tests/data/count_overlaps.py (the independent oracle), a source
// tokenizer respelled in another family's spelling, special tokens by role, and a spelling
// that cannot be told.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model_fixtures.hpp"
#include "output_checks.hpp"
#include "support/real_tokenizers.hpp"
#include "harness.hpp"

using namespace program_test;

namespace {

using clp_test::data_dir;
const fs::path example_models_dir = CLP_EXAMPLE_MODELS_DIR;

/// The tokenizer.json of the real tokenizer `name` (support/real_tokenizers.hpp); nullopt, the
/// running case marked skipped, when it is absent.
std::optional<fs::path> real_tokenizer(const std::string& name) {
  const auto folder = clp_test::needed_tokenizer(name);
  return folder ? std::optional(*folder / "tokenizer.json") : std::nullopt;
}

/// What tests/data/count_overlaps.py prints for a pair.
struct oracle_counts {
  std::int64_t shared_strings, size, exact_matches, byte_matches;
};

nlohmann::json overlap_json(const std::vector<std::string>& arguments) {
  const program_result result = run_program(arguments);
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.empty());
  return nlohmann::json::parse(result.out);
}

void check_counts(const fs::path& a, const fs::path& b, const oracle_counts& expected) {
  INFO(a.string(), " -> ", b.string());
  const nlohmann::json bytes = overlap_json({"overlap", a.string(), b.string(), "--json"});
  CHECK(bytes["match"] == "bytes");
  CHECK(bytes["overlap"] == expected.size);
  CHECK(bytes["exact_matches"] == expected.exact_matches);
  CHECK(bytes["byte_matches"] == expected.byte_matches);
  CHECK(bytes["shared_strings"] == expected.shared_strings);
  const nlohmann::json exact = overlap_json({"overlap", a.string(), b.string(), "--json", "--match", "exact"});
  CHECK(exact["match"] == "exact");
  CHECK(exact["overlap"] == expected.shared_strings);
  CHECK(exact["exact_matches"] == expected.shared_strings);
  CHECK(exact["byte_matches"] == 0);
}

// --- GPT-2's byte alphabet and SentencePiece's spelling, written here from their definitions ---

/// GPT-2's byte-level character (as UTF-8) -> byte.
const std::map<std::string, unsigned char>& byte_of_character() {
  static const std::map<std::string, unsigned char> table = [] {
    std::map<std::string, unsigned char> t;
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const unsigned code = printable ? unsigned(b) : 0x100u + unsigned(shifted++);
      std::string utf8 =
          code < 0x80 ? std::string(1, char(code)) : std::string{char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
      t[utf8] = static_cast<unsigned char>(b);
    }
    return t;
  }();
  return table;
}

/// The bytes of a byte-level token, or nullopt for a character outside the alphabet.
std::optional<std::string> byte_level_bytes(const std::string& token) {
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    const std::size_t length = (static_cast<unsigned char>(token[i]) & 0xE0) == 0xC0 ? 2 : 1;
    const auto it = byte_of_character().find(token.substr(i, length));
    if (it == byte_of_character().end()) return std::nullopt;
    bytes.push_back(char(it->second));
    i += length;
  }
  return bytes;
}

/// Whether `bytes` is valid UTF-8 (no overlong or surrogate check needed for these tests).
bool valid_utf8(const std::string& bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t length = c < 0x80             ? 1
                               : (c & 0xE0) == 0xC0 ? 2
                               : (c & 0xF0) == 0xE0 ? 3
                               : (c & 0xF8) == 0xF0 ? 4
                                                    : 0;
    if (length == 0 || i + length > bytes.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) & 0xC0) != 0x80) return false;
    i += length;
  }
  return true;
}

const std::string space_mark = "\xe2\x96\x81";

/// `bytes` as SentencePiece writes them: one byte that is not UTF-8 as "<0xNN>", else the text
/// with every space as "▁"; nullopt for several bytes that are not UTF-8 (no piece spells them).
std::optional<std::string> sentencepiece_spelling(const std::string& bytes) {
  if (!valid_utf8(bytes)) {
    if (bytes.size() != 1) return std::nullopt;
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", static_cast<unsigned char>(bytes[0]));
    return std::string(piece);
  }
  std::string text;
  for (char c : bytes) text += c == ' ' ? space_mark : std::string(1, c);
  return text;
}

/// The bytes of a SentencePiece piece with byte fallback.
std::string sentencepiece_bytes(const std::string& piece) {
  unsigned value = 0;
  if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>", &value) == 1) return std::string(1, char(value));
  std::string bytes;
  for (std::size_t i = 0; i < piece.size();)
    if (piece.compare(i, space_mark.size(), space_mark) == 0) {
      bytes += ' ';
      i += space_mark.size();
    } else {
      bytes += piece[i++];
    }
  return bytes;
}

nlohmann::ordered_json read_json(const fs::path& file) { return nlohmann::ordered_json::parse(read_file(file)); }

/// Copies examples/models/en-large to `folder` with its tokenizer.json rewritten by `respell`
/// (token -> new token); vocab.json and merges.txt are left out, so tokenizer.json is the one
/// vocabulary. Returns the tokens by id of the new vocabulary.
template <class Respell>
std::vector<std::string> copy_en_large(const fs::path& folder, Respell respell) {
  fs::copy(example_models_dir / "en-large", folder);
  fs::remove(folder / "vocab.json");
  fs::remove(folder / "merges.txt");
  nlohmann::ordered_json tokenizer = read_json(folder / "tokenizer.json");
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  std::vector<std::string> tokens(tokenizer["model"]["vocab"].size());
  for (const auto& [token, id] : tokenizer["model"]["vocab"].items()) {
    const std::string spelled = respell(token);
    vocab[spelled] = id;
    tokens.at(id.template get<std::size_t>()) = spelled;
  }
  tokenizer["model"]["vocab"] = vocab;
  tokenizer["model"]["merges"] = nlohmann::ordered_json::array();
  write_file(folder / "tokenizer.json", tokenizer.dump(1));
  return tokens;
}

/// Removes the helper tokenizer's pre-tokenizer and decoder, the declarations its spelling is
/// read from, so the spelling cannot be told; returns that tokenizer.json.
fs::path declare_no_spelling(const workspace& ws) {
  const fs::path tokenizer = ws.pair.helper.folder / "tokenizer.json";
  nlohmann::ordered_json declarations = read_json(tokenizer);
  declarations["pre_tokenizer"] = nullptr;
  declarations["decoder"] = nullptr;
  write_file(tokenizer, declarations.dump());
  return tokenizer;
}

}  // namespace

TEST_CASE("overlap: exact and byte matches of GPT-2 and Qwen3 (shipped), as tests/data/count_overlaps.py counts them") {
  // python3 tests/data/count_overlaps.py A:spelling B:spelling gives every expected number.
  const fs::path gpt2 = data_dir / "gpt2" / "encoder.json";
  const auto qwen3 = real_tokenizer("qwen3");
  REQUIRE(qwen3);
  check_counts(gpt2, *qwen3, {42257, 42257, 42257, 0});

  // The text form prints both counts on a line of its own.
  const program_result text = run_program({"overlap", gpt2.string(), qwen3->string()});
  REQUIRE(text.exit_status == 0);
  const std::vector<std::string> lines = lines_of(text.out);
  REQUIRE(lines.size() == 4);
  CHECK(lines[3].find("matched by bytes: 42257 the same string, 0 other strings with the same bytes; 42257 strings "
                      "shared (A byte_level, B byte_level)") != std::string::npos);
}

TEST_CASE("real tokenizers: overlap of Llama 2 and Gemma 3 with Llama 3, and of Llama 3 with Qwen3, as counted") {
  const auto llama2 = real_tokenizer("llama2"), llama3 = real_tokenizer("llama3"), gemma3 = real_tokenizer("gemma3");
  const auto qwen3 = real_tokenizer("qwen3");
  if (!llama2 || !llama3 || !gemma3 || !qwen3) return;
  check_counts(*llama2, *llama3, {10606, 29110, 10472, 18638});
  check_counts(*gemma3, *llama3, {25036, 86435, 24877, 61558});
  check_counts(*llama3, *qwen3, {109566, 109566, 109566, 0});
}

TEST_CASE("a source tokenizer respelled as SentencePiece transfers bit for bit as the byte-level original") {
  // Source: en-large, once with its byte-level tokenizer and once respelled as Llama 2 spells
  // (Metaspace, byte fallback), token ids unchanged; helper: de-small (byte-level). The three
  // en-large tokens that are pieces of a UTF-8 character longer than one byte have no
  // SentencePiece spelling: both copies rename them, so both vocabularies stand for the same
  // bytes, id for id.
  temp_dir dir;
  std::map<std::string, std::string> renamed;
  const auto rename_unspellable = [&](const std::string& token) {
    const auto bytes = byte_level_bytes(token);
    REQUIRE(bytes);
    if (sentencepiece_spelling(*bytes)) return token;
    return renamed.emplace(token, "<unspellable " + std::to_string(renamed.size()) + ">").first->second;
  };
  copy_en_large(dir / "byte_level", rename_unspellable);
  CHECK(renamed.size() == 3);
  const std::vector<std::string> spelled = copy_en_large(dir / "sentencepiece", [&](const std::string& token) {
    const std::string kept = rename_unspellable(token);
    return kept == token ? *sentencepiece_spelling(*byte_level_bytes(token)) : kept;
  });
  {
    nlohmann::ordered_json tokenizer = read_json(dir / "sentencepiece" / "tokenizer.json");
    tokenizer["normalizer"] = {{"type", "Sequence"},
                               {"normalizers",
                                {{{"type", "Prepend"}, {"prepend", space_mark}},
                                 {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space_mark}}}}};
    tokenizer["pre_tokenizer"] = nullptr;
    tokenizer["decoder"] = {{"type", "Sequence"},
                            {"decoders",
                             {{{"type", "Replace"}, {"pattern", {{"String", space_mark}}}, {"content", " "}},
                              {{"type", "ByteFallback"}},
                              {{"type", "Fuse"}},
                              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
    tokenizer["model"]["byte_fallback"] = true;
    write_file(dir / "sentencepiece" / "tokenizer.json", tokenizer.dump(1));
  }
  const fs::path helper = example_models_dir / "de-small";
  const auto transfer = [&](const std::string& source) {
    const program_result result =
        run_program({"transfer", "--source", (dir / source).string(), "--helper", helper.string(), "--output",
                     (dir / ("out-" + source)).string(), "--report", (dir / (source + ".json")).string(), "--quiet"});
    INFO("stderr: ", result.err);
    REQUIRE(result.exit_status == 0);
    return read_json(dir / (source + ".json"));
  };
  const nlohmann::ordered_json same = transfer("byte_level"), respelled = transfer("sentencepiece");
  check_same_folders(dir / "out-byte_level", dir / "out-sentencepiece");

  CHECK(same["matching"]["source"]["spelling"] == "byte_level");
  CHECK(respelled["matching"]["source"]["spelling"] == "sentencepiece");
  CHECK(respelled["matching"]["used"] == "bytes");
  CHECK(same["overlap"] == respelled["overlap"]);
  CHECK(same["matching"]["byte_matches"] == 0);
  CHECK(respelled["matching"]["byte_matches"].get<std::int64_t>() > 500);  // every token with a space or past ASCII
  CHECK(respelled["matching"]["exact_matches"].get<std::int64_t>() +
            respelled["matching"]["byte_matches"].get<std::int64_t>() +
            respelled["matching"]["role_matches"].get<std::int64_t>() ==
        respelled["overlap"].get<std::int64_t>());

  // A cross-family transfer copies every row matched by bytes bit for bit from its source row:
  // the helper's byte-level tokens against the respelled source's pieces, read by this test.
  std::map<std::string, std::size_t> source_by_bytes;
  for (std::size_t id = spelled.size(); id-- > 0;) source_by_bytes[sentencepiece_bytes(spelled[id])] = id;
  const std::string name = "transformer.wte.weight";
  const std::string source_rows = tensor_bytes(dir / "sentencepiece" / "model.safetensors", name);
  const std::string output_rows = tensor_bytes(dir / "out-sentencepiece" / "model.safetensors", name);
  const std::size_t row_bytes = 128 * 4;
  std::int64_t copied = 0;
  const nlohmann::ordered_json helper_tokenizer = read_json(helper / "tokenizer.json");
  for (const auto& [token, id] : helper_tokenizer["model"]["vocab"].items()) {
    const auto bytes = byte_level_bytes(token);
    const auto source = bytes ? source_by_bytes.find(*bytes) : source_by_bytes.end();
    if (source == source_by_bytes.end()) continue;
    INFO("helper token ", token, " (", id, ") <- source ", spelled[source->second], " (", source->second, ")");
    CHECK(output_rows.compare(id.get<std::size_t>() * row_bytes, row_bytes, source_rows, source->second * row_bytes,
                              row_bytes) == 0);
    ++copied;
  }
  CHECK(copied == respelled["overlap"].get<std::int64_t>());
}

TEST_CASE("special tokens map by role: the helper's </s> as eos takes the source's <|endoftext|> row") {
  workspace ws = gpt2_workspace();
  model_fixture& helper = ws.pair.helper;
  const std::int64_t source_eos = gpt2_sizes::source_vocab - 1;
  REQUIRE(helper.tokens[0] == "<|endoftext|>");
  helper.tokens[0] = "</s>";  // config.json: bos = eos = 0
  write_gpt2_tokenizer_files(helper);
  nlohmann::ordered_json tokenizer = read_json(helper.folder / "tokenizer.json");
  tokenizer["added_tokens"] = nlohmann::ordered_json::array();  // it lists <|endoftext|>
  write_file(helper.folder / "tokenizer.json", tokenizer.dump());
  write_json(ws.pair.source.folder / "generation_config.json",
             {{"bos_token_id", source_eos}, {"eos_token_id", source_eos}, {"temperature", 0.7}});
  const fs::path report = ws.dir / "report.json";
  const program_result result = run_program(ws.transfer({"--report", report.string()}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.find("  special token      eos: helper </s> (0) <- source <|endoftext|> (" +
                        std::to_string(source_eos) + ")\n") != std::string::npos);

  const nlohmann::json matching = read_json(report)["matching"];
  REQUIRE(matching["special_tokens"].size() == 1);  // bos and eos are one token: mapped once, as eos
  CHECK(matching["special_tokens"][0] == nlohmann::json{{"role", "eos"},
                                                        {"helper_token", "</s>"},
                                                        {"helper_id", 0},
                                                        {"source_token", "<|endoftext|>"},
                                                        {"source_id", source_eos}});
  CHECK(matching["role_matches"] == 1);
  CHECK(matching["exact_matches"] == gpt2_sizes::overlap - 1);
  CHECK(read_json(report)["overlap"] == gpt2_sizes::overlap);

  const std::string name = ws.pair.source.embedding_name;
  const std::string source_rows = tensor_bytes(ws.pair.source.folder / "model.safetensors", name);
  const std::string output_rows = tensor_bytes(ws.output / "model.safetensors", name);
  const std::size_t row_bytes = gpt2_sizes::source_width * 4;
  CHECK(output_rows.compare(0, row_bytes, source_rows, std::size_t(source_eos) * row_bytes, row_bytes) == 0);

  // The output speaks the helper's ids: generation_config.json keeps the source's settings.
  const nlohmann::json generation = read_json(ws.output / "generation_config.json");
  CHECK(generation["temperature"] == 0.7);
  CHECK(generation["eos_token_id"] == 0);
  CHECK(generation["bos_token_id"] == 0);
  CHECK(read_json(ws.output / "config.json")["eos_token_id"] == 0);
}

TEST_CASE("a spelling that cannot be told: a warning and exact matching, an error when bytes were asked for") {
  workspace ws = gpt2_workspace();
  const fs::path tokenizer = declare_no_spelling(ws);

  SUBCASE("by default") {
    const fs::path report = ws.dir / "report.json";
    const program_result result = run_program(ws.transfer({"--report", report.string()}));
    INFO("stderr: ", result.err);
    REQUIRE(result.exit_status == 0);
    CHECK(result.err.find("clp-transfer: warning: " + tokenizer.string() + ": spelling unknown (declares no ") !=
          std::string::npos);
    CHECK(result.err.find("); matching exactly\n") != std::string::npos);
    const nlohmann::json matching = read_json(report)["matching"];
    CHECK(matching["asked"] == "bytes");
    CHECK(matching["used"] == "exact");
    CHECK(matching["helper"]["spelling"] == nullptr);
    CHECK(matching["exact_matches"] == gpt2_sizes::overlap);

    const program_result overlap = run_program({"overlap", ws.pair.source.folder.string(), tokenizer.string()});
    CHECK(overlap.exit_status == 0);
    CHECK(overlap.err.find("clp-transfer: warning: " + tokenizer.string() + ": spelling unknown") == 0);
    CHECK(overlap.out.find("matched exactly: " + std::to_string(gpt2_sizes::overlap)) != std::string::npos);
  }
  SUBCASE("--match bytes") {
    check_error_line(run_program(ws.transfer({"--match", "bytes", "--quiet"})), tokenizer.string(),
                     {"spelling unknown", "--match bytes"});
    CHECK(folder_entries(ws.out_parent).empty());
    check_error_line(run_program({"overlap", ws.pair.source.folder.string(), tokenizer.string(), "--match", "bytes"}),
                     tokenizer.string(), {"spelling unknown"});
  }
  SUBCASE("--match exact: no warning") {
    const program_result result = run_program(ws.transfer({"--match", "exact", "--quiet"}));
    CHECK(result.exit_status == 0);
    CHECK(result.err.empty());
  }
}

TEST_CASE("--match bytes on a spelling that cannot be told: the error is the tokenizer's own line, not wrapped") {
  workspace ws = gpt2_workspace();
  const fs::path tokenizer = declare_no_spelling(ws);
  const std::string expected = "clp-transfer: error: " + tokenizer.string() + ": spelling unknown (";
  const program_result transfer = run_program(ws.transfer({"--match", "bytes", "--quiet"}));
  CHECK(transfer.exit_status == 1);
  CHECK(transfer.err.rfind(expected, 0) == 0);
  const program_result overlap =
      run_program({"overlap", ws.pair.source.folder.string(), tokenizer.string(), "--match", "bytes"});
  CHECK(overlap.exit_status == 1);
  CHECK(overlap.err.rfind(expected, 0) == 0);
}
