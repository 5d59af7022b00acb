// `clp-transfer extend` run as a user runs it. The written folder is checked with a real
// tokenizer client (Hugging Face's JavaScript tokenizers under node, tests/tokenizer_client's
// runner; those checks skip where the client is absent): every source id decodes as before, text
// round-trips, each new token is what the client makes of its text. The rows are checked against
// oracles of their own: the source's bytes, the rows `clp-transfer transfer` writes for the same
// helper tokens, and the mean of the pieces' rows in a plain double loop. And each refusal: one
// line naming the file or option, and no output.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../../support/skip.hpp"
#include "extend/characters.hpp"
#include "extend/drift.hpp"
#include "extend/read_bpe_model.hpp"
#include "extend/sentencepiece_bpe.hpp"
#include "extend/wordpiece_files.hpp"
#include "extend/wordpiece_model.hpp"
#include "harness.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "model_fixtures.hpp"
#include "refusals.hpp"

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_extend {
namespace {

using namespace program_test;

const fs::path models_dir = CLP_EXAMPLE_MODELS_DIR;
const fs::path en_large = models_dir / "en-large";
const fs::path de_small = models_dir / "de-small";
const fs::path probes_dir = models_dir.parent_path() / "clp-transfer" / "extend" / "probes";
const fs::path data_dir = CLP_TEST_DATA_DIR;
const fs::path client_script = data_dir.parent_path() / "tokenizer_client" / "tokenize.mjs";
const fs::path client_package = data_dir / "fetched" / "tokenizers-js" / "package" / "dist" / "tokenizers.mjs";
const char* const embedding = "transformer.wte.weight";

// --- the real tokenizer client ----------------------------------------------------------------

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Whether node and the client package are here (without marking the case skipped).
bool client_here() { return fs::exists(client_package) && std::system("node --version >/dev/null 2>&1") == 0; }

/// Whether the client can run; marks the running case skipped when not.
bool client_available() {
  if (client_here()) return true;
  clp_test::skip(
      "no node or no @huggingface/tokenizers under tests/data/fetched (tests/data/fetch_tokenizer_client.sh)");
  return false;
}

/// The client's answer to `request` ({"encode": [...], "decode": [...], "model": [...]}) for the
/// tokenizer in `folder`.
nlohmann::json ask_client(const fs::path& folder, const nlohmann::json& request) {
  temp_dir dir;
  write_file(dir / "request.json", request.dump());
  const std::string command = "node " + shell_quoted(client_script.string()) + " " +
                              shell_quoted(client_package.string()) + " " + shell_quoted(folder.string()) + " " +
                              shell_quoted((dir / "request.json").string()) + " " +
                              shell_quoted((dir / "answer.json").string());
  REQUIRE(std::system(command.c_str()) == 0);
  return nlohmann::json::parse(read_file(dir / "answer.json"));
}

// --- running the program ----------------------------------------------------------------------

/// Runs `clp-transfer extend --source source --output out --report out.json --quiet extra...`;
/// requires success and returns the report.
nlohmann::json extend(const fs::path& source, const fs::path& out, std::vector<std::string> extra) {
  const fs::path report = out.string() + ".json";
  std::vector<std::string> args = {"extend",     "--source", source.string(), "--output",
                                   out.string(), "--report", report.string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  const program_result result = run_program(args);
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.empty());
  return nlohmann::json::parse(read_file(report));
}

/// Runs a transfer of `source` with `helper`'s vocabulary into `out`.
void transfer(const fs::path& source, const fs::path& helper, const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"transfer",      "--source", source.string(), "--helper",
                                   helper.string(), "--output", out.string(),    "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  const program_result result = run_program(args);
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
}

/// token -> id of a tokenizer.json's model.vocab.
std::map<std::string, std::int64_t> vocab_of(const fs::path& folder) {
  return nlohmann::json::parse(read_file(folder / "tokenizer.json"))["model"]["vocab"]
      .get<std::map<std::string, std::int64_t>>();
}

/// The bytes a byte-level token stands for (GPT-2's table, written out here: byte b is the
/// character b for the printable Latin-1 bytes, 256 + n for the n-th of the others).
std::string byte_level_bytes(const std::string& token) {
  std::map<std::uint32_t, unsigned char> byte_of;
  std::uint32_t next = 256;
  for (std::uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    byte_of[printable ? b : next++] = static_cast<unsigned char>(b);
  }
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    const auto c = static_cast<unsigned char>(token[i]);
    const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    std::uint32_t code = n == 1 ? c : c & (0xFF >> (n + 1));
    for (std::size_t k = 1; k < n; ++k) code = (code << 6) | (static_cast<unsigned char>(token[i + k]) & 0x3F);
    bytes += static_cast<char>(byte_of.at(code));
    i += n;
  }
  return bytes;
}

/// Tensor `tensor` of `file` (F32 or BF16, any shape) as the #rows by values-per-row matrix its
/// first dimension gives.
matrix read_rows(const fs::path& file, const std::string& tensor) {
  const clp_transfer::io::safetensors_file opened(file);
  const clp_transfer::io::tensor_entry& entry = opened.at(tensor);
  const std::int64_t rows = entry.shape.at(0);
  const std::int64_t cols = std::int64_t(entry.element_count()) / rows;
  return decode(tensor_bytes(file, tensor), std::string(clp_transfer::io::dtype_name(entry.dtype)), rows, cols);
}

/// Whether every element of `a`'s row `ra` is `b`'s row `rb` to float rounding.
bool same_row(const matrix& a, std::int64_t ra, const matrix& b, std::int64_t rb, double relative = 1e-6) {
  for (std::int64_t c = 0; c < a.cols; ++c)
    if (std::abs(a(ra, c) - b(rb, c)) > relative * (1 + std::abs(b(rb, c)))) return false;
  return true;
}

/// The ids the source tokenizer in `folder` splits each of `spelled` into, as a pre-token handed
/// to its BPE model: by the real client where it is here, else by the program's encoder (which
/// tests/tokenizer_client checks against that client).
std::vector<std::vector<std::int64_t>> pieces_of(const fs::path& folder, const std::vector<std::string>& spelled) {
  std::vector<std::vector<std::int64_t>> pieces;
  if (client_here()) {
    const nlohmann::json answer = ask_client(folder, {{"model", spelled}});
    for (const auto& ids : answer["model"]) pieces.push_back(ids.get<std::vector<std::int64_t>>());
    return pieces;
  }
  namespace x = clp_transfer::extend;
  const x::bpe_table table(x::read_bpe_model(nlohmann::json::parse(read_file(folder / "tokenizer.json")), "source"));
  for (const std::string& token : spelled) {
    std::vector<std::int64_t> ids;
    for (const x::token_id id : table.encode(token)) ids.push_back(id);
    pieces.push_back(ids);
  }
  return pieces;
}

/// Checks that each report token whose rows are "mean of pieces" has, in `tensor` of `output`,
/// the mean (in double) of the source rows of its pieces, those in `left_out` left out; returns
/// how many it checked.
std::size_t check_means_of_pieces(const fs::path& source, const fs::path& output, const nlohmann::json& report,
                                  const std::string& tensor, const std::set<std::int64_t>& left_out = {}) {
  const matrix before = read_rows(source / "model.safetensors", tensor);
  const matrix after = read_rows(output / "model.safetensors", tensor);
  std::vector<std::string> spelled;
  std::vector<std::int64_t> ids;
  for (const auto& token : report["tokens"])
    if (token["rows"] == "mean of pieces") {
      spelled.push_back(token["token"]);
      ids.push_back(token["id"]);
    }
  if (ids.empty()) return 0;
  const std::vector<std::vector<std::int64_t>> pieces = pieces_of(source, spelled);
  REQUIRE(pieces.size() == ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    CAPTURE(spelled[t]);
    std::vector<std::int64_t> kept;
    for (const std::int64_t piece : pieces[t])
      if (!left_out.count(piece)) kept.push_back(piece);
    REQUIRE(!kept.empty());
    matrix mean(1, before.cols);
    for (const std::int64_t piece : kept)
      for (std::int64_t c = 0; c < before.cols; ++c) mean(0, c) += before(piece, c) / double(kept.size());
    CHECK(same_row(after, ids[t], mean, 0));
  }
  return ids.size();
}

/// Rows of `tensor` in `file` [from, to) as bytes.
std::string row_bytes(const fs::path& file, const std::string& tensor, std::int64_t from, std::int64_t to,
                      std::int64_t row_size) {
  return tensor_bytes(file, tensor).substr(std::size_t(from * row_size), std::size_t((to - from) * row_size));
}

/// How many of the report's tokens with rows from the helper have, in `tensor` of `output`, a row
/// other than the one the transfer in `reference` wrote for the helper token with the same bytes.
/// `spelling` is the source's: "byte_level", "metaspace" or "wordpiece".
int rows_unlike_transfer(const nlohmann::json& report, const fs::path& output, const fs::path& reference,
                         const std::string& tensor, const std::string& spelling = "byte_level") {
  std::map<std::string, std::int64_t> helper_by_bytes;
  for (const auto& [token, id] : vocab_of(de_small)) helper_by_bytes.emplace(byte_level_bytes(token), id);
  const matrix after = read_rows(output / "model.safetensors", tensor);
  const matrix transferred = read_rows(reference / "model.safetensors", tensor);
  const auto bytes_of = [&](const std::string& token) {
    if (spelling == "byte_level") return byte_level_bytes(token);
    if (spelling == "wordpiece") return token.rfind("##", 0) == 0 ? token.substr(2) : " " + token;
    std::string bytes = token;
    for (std::size_t at; (at = bytes.find("\xE2\x96\x81")) != std::string::npos;) bytes.replace(at, 3, " ");
    return bytes;
  };
  int unlike = 0;
  for (const auto& token : report["tokens"]) {
    if (token["rows"] != "helper") continue;
    const std::int64_t helper_id = helper_by_bytes.at(bytes_of(token["token"]));
    if (!same_row(after, token["id"].get<std::int64_t>(), transferred, helper_id)) ++unlike;
  }
  return unlike;
}

/// en-large under `root`/padded with an untied head (lm_head.weight) and a per-token bias
/// (lm_head.bias), the embedding, head and bias padded to `rows` rows past its 5000 tokens.
fs::path make_padded_source(const fs::path& root, std::int64_t rows) {
  const fs::path folder = root / "padded";
  fs::create_directories(folder);
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                           "special_tokens_map.json", "generation_config.json"})
    fs::copy_file(en_large / name, folder / name);
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_file(en_large / "config.json"));
  config["vocab_size"] = rows;
  config["tie_word_embeddings"] = false;
  write_json(folder / "config.json", config);
  fixture_random random(47);
  const matrix wte = read_matrix(en_large / "model.safetensors", embedding);
  matrix padded = anisotropic_matrix(rows, wte.cols, 0.5, 0.2, random, "F32");
  std::copy(wte.values.begin(), wte.values.end(), padded.values.begin());
  std::vector<fixture_tensor> tensors;
  const clp_transfer::io::safetensors_file source(en_large / "model.safetensors");
  for (const clp_transfer::io::tensor_entry& t : source.tensors())
    if (t.name == embedding)
      tensors.push_back(matrix_tensor(embedding, padded, "F32"));
    else
      tensors.push_back({t.name, std::string(clp_transfer::io::dtype_name(t.dtype)), t.shape,
                         tensor_bytes(en_large / "model.safetensors", t.name)});
  tensors.push_back(
      matrix_tensor("lm_head.weight", anisotropic_matrix(rows, wte.cols, 1.0, 0.3, random, "F32"), "F32"));
  tensors.push_back(
      {"lm_head.bias", "F32", {rows}, encode(anisotropic_matrix(rows, 1, 0.0, 1.0, random, "F32"), "F32")});
  write_safetensors(folder / "model.safetensors", tensors);
  return folder;
}

/// en-large under `root`/shrunk with the embedding rows `shrunk` scaled to norm 1e-6, as rows a
/// model's training never reached are; every other file and tensor as shipped.
fs::path make_shrunk_source(const fs::path& root, const std::set<std::int64_t>& shrunk) {
  const fs::path folder = root / "shrunk";
  fs::create_directories(folder);
  for (const std::string& name : folder_entries(en_large))
    if (name != "model.safetensors") fs::copy_file(en_large / name, folder / name);
  const fs::path original = en_large / "model.safetensors";
  matrix wte = read_matrix(original, embedding);
  for (const std::int64_t r : shrunk) {
    double norm = 0;
    for (std::int64_t c = 0; c < wte.cols; ++c) norm += wte(r, c) * wte(r, c);
    for (std::int64_t c = 0; c < wte.cols; ++c) wte(r, c) *= 1e-6 / std::sqrt(norm);
  }
  const clp_transfer::io::safetensors_file file(original);
  std::vector<fixture_tensor> tensors;
  for (const clp_transfer::io::tensor_entry& t : file.tensors())
    tensors.push_back({t.name, std::string(clp_transfer::io::dtype_name(t.dtype)), t.shape,
                       t.name == embedding ? encode(wte, "F32") : tensor_bytes(original, t.name)});
  write_safetensors(folder / "model.safetensors", tensors, file.metadata());
  return folder;
}

/// The source ids the report lists as under-trained.
std::set<std::int64_t> flagged_ids(const nlohmann::json& report) {
  std::set<std::int64_t> ids;
  for (const auto& token : report["undertrained"]["tokens"]) ids.insert(token["id"].get<std::int64_t>());
  return ids;
}

}  // namespace

TEST_CASE("extend: the shipped pair in the real client keeps every id, round-trips text and reaches each new token") {
  if (!client_available()) return;
  const temp_dir dir;
  const fs::path out = dir / "out";
  const nlohmann::json report = extend(en_large, out, {"--helper", de_small.string()});
  CHECK(report["added"].get<double>() >= 0.95 * report["helper_missing"].get<double>());
  const std::string english = read_file(probes_dir / "en.txt"), german = read_file(probes_dir / "de.txt");
  nlohmann::json request = {
      {"encode", {english, german}}, {"decode", nlohmann::json::array()}, {"model", nlohmann::json::array()}};
  const std::map<std::string, std::int64_t> source_vocab = vocab_of(en_large);
  for (const auto& entry : source_vocab) request["decode"].push_back({entry.second});
  std::vector<std::int64_t> as_text, as_piece;
  for (const auto& token : report["tokens"]) {
    const std::string bytes = byte_level_bytes(token["token"]);
    if (clp_transfer::extend::is_utf8(bytes)) {
      request["encode"].push_back(bytes);
      as_text.push_back(token["id"]);
    } else {
      request["model"].push_back(token["token"]);
      as_piece.push_back(token["id"]);
    }
  }
  const nlohmann::json before = ask_client(en_large, request);
  const nlohmann::json after = ask_client(out, request);
  CHECK(after["decode"] == before["decode"]);
  const nlohmann::json decoded = ask_client(out, {{"decode", {after["encode"][0], after["encode"][1]}}});
  CHECK(decoded["decode"] == nlohmann::json({english, german}));
  int unreached = 0;
  for (std::size_t i = 0; i < as_text.size(); ++i)
    if (after["encode"][2 + i] != nlohmann::json({as_text[i]})) ++unreached;
  for (std::size_t i = 0; i < as_piece.size(); ++i)
    if (after["model"][i] != nlohmann::json({as_piece[i]})) ++unreached;
  CHECK(unreached == 0);
  CHECK(as_text.size() + as_piece.size() == report["tokens"].size());
  const std::map<std::string, std::int64_t> out_vocab = vocab_of(out);
  int moved = 0;
  for (const auto& [token, id] : source_vocab) moved += out_vocab.at(token) == id ? 0 : 1;
  CHECK(moved == 0);
  // German text costs at most 1.25 times the helper's own tokens, in the client's counts.
  const nlohmann::json helper = ask_client(de_small, {{"encode", {german}}});
  CHECK(double(after["encode"][1].size()) <= 1.25 * double(helper["encode"][0].size()));
  CHECK(after["encode"][1].size() < before["encode"][1].size());
}

TEST_CASE("extend: old rows are the source's bytes, new rows are transfer's rows for the same helper tokens") {
  const temp_dir dir;
  const std::int64_t row_size = 128 * 4;
  for (const std::vector<std::string>& options : {std::vector<std::string>{}, {"--weighting", "top-k"}}) {
    const std::string name = options.empty() ? "default" : options.back();
    CAPTURE(name);
    std::vector<std::string> extra = {"--helper", de_small.string()};
    extra.insert(extra.end(), options.begin(), options.end());
    const nlohmann::json report = extend(en_large, dir / ("extend-" + name), extra);
    transfer(en_large, de_small, dir / ("transfer-" + name), options);
    const fs::path out = dir / ("extend-" + name);
    CHECK(row_bytes(out / "model.safetensors", embedding, 0, 5000, row_size) ==
          tensor_bytes(en_large / "model.safetensors", embedding));
    CHECK(tensor_bytes(out / "model.safetensors", "transformer.h.0.attn.c_attn.weight") ==
          tensor_bytes(en_large / "model.safetensors", "transformer.h.0.attn.c_attn.weight"));
    const matrix after = read_matrix(out / "model.safetensors", embedding);
    std::int64_t last_id = 0;
    for (const auto& entry : vocab_of(out)) last_id = std::max(last_id, entry.second);
    CHECK(nlohmann::json::parse(read_file(out / "config.json"))["vocab_size"] == after.rows);
    CHECK(after.rows == last_id + 1);
    CHECK(report["output_rows"] == after.rows);
    CHECK(report["new_rows"]["helper"].get<int>() == report["added"].get<int>());
    CHECK(rows_unlike_transfer(report, out, dir / ("transfer-" + name), embedding) == 0);
    CHECK(check_means_of_pieces(en_large, out, report, embedding) > 0);  // the intermediates
  }
}

TEST_CASE(
    "extend: a SentencePiece BPE or Unigram source gets its tokenizer.model extended, its rows as a "
    "tokenizer.json's get") {
  // en-large's weights under a real SentencePiece model of as many pieces (trained by
  // SentencePiece on the miniature's English text, tests/data/sentencepiece); SentencePiece's own
  // library checks such models in tests/tokenizer_client.
  for (const char* model_file : {"en_bpe.model", "en_unigram.model"}) {
    CAPTURE(model_file);
    const temp_dir dir;
    const fs::path source = dir / "sp-source", out = dir / "extended";
    fs::create_directories(source);
    for (const char* name : {"config.json", "model.safetensors"}) fs::copy_file(en_large / name, source / name);
    fs::copy_file(data_dir / "sentencepiece" / model_file, source / "tokenizer.model");
    const nlohmann::json report = extend(source, out, {"--helper", de_small.string()});
    transfer(source, de_small, dir / "transferred", {});
    CHECK(report["added"].get<double>() >= 0.95 * report["helper_missing"].get<double>());
    CHECK(fs::exists(out / "tokenizer.model"));
    CHECK(!fs::exists(out / "tokenizer.json"));
    // The written model: the source's bytes, then one record a new piece, in id order.
    const std::string before = read_file(source / "tokenizer.model"), after = read_file(out / "tokenizer.model");
    CHECK(after.compare(0, before.size(), before) == 0);
    const clp_transfer::io::sentencepiece_model written =
        clp_transfer::io::parse_sentencepiece_model(out / "tokenizer.model", after);
    REQUIRE(written.pieces.size() == std::size_t(5000) + report["tokens"].size());
    for (const auto& token : report["tokens"])
      CHECK(written.pieces[token["id"].get<std::size_t>()].piece == token["token"].get<std::string>());
    CHECK(row_bytes(out / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
          tensor_bytes(en_large / "model.safetensors", embedding));
    CHECK(read_matrix(out / "model.safetensors", embedding).rows == std::int64_t(written.pieces.size()));
    CHECK(rows_unlike_transfer(report, out, dir / "transferred", embedding, "metaspace") == 0);
  }
}

/// A Llama-2-style tokenizer.json converted from the SentencePiece BPE model `file`, as Hugging
/// Face converts one: its pieces at their ids, <unk>, <s> and </s> as added special tokens, the
/// merges SentencePiece's order gives (the extend module's reading of the model; the model and
/// this file must agree for extend to write both).
nlohmann::ordered_json tokenizer_json_of(const fs::path& file) {
  const clp_transfer::io::sentencepiece_model model = clp_transfer::io::read_sentencepiece_model(file);
  const clp_transfer::extend::bpe_model bpe = clp_transfer::extend::sentencepiece_bpe_model(model.pieces, model);
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object(), merges = nlohmann::ordered_json::array();
  for (std::size_t id = 0; id < model.pieces.size(); ++id) vocab[model.pieces[id].piece] = id;
  for (const auto& [left, right] : bpe.merges)
    merges.push_back(bpe.tokens[std::size_t(left)] + " " + bpe.tokens[std::size_t(right)]);
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (int id = 0; id < 3; ++id)
    added.push_back({{"id", id},
                     {"content", model.pieces[std::size_t(id)].piece},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  nlohmann::ordered_json json;
  json["version"] = "1.0";
  json["truncation"] = nullptr;
  json["padding"] = nullptr;
  json["added_tokens"] = added;
  json["normalizer"] = {{"type", "Sequence"},
                        {"normalizers",
                         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}};
  json["pre_tokenizer"] = nullptr;
  json["model"] = {{"type", "BPE"},         {"dropout", nullptr}, {"unk_token", "<unk>"}, {"fuse_unk", true},
                   {"byte_fallback", true}, {"vocab", vocab},     {"merges", merges}};
  return json;
}

TEST_CASE(
    "extend: a tokenizer.json with the SentencePiece model it was converted from gets both extended, in "
    "agreement") {
  const temp_dir dir;
  const fs::path source = dir / "two-files", out = dir / "extended";
  fs::create_directories(source);
  for (const char* name : {"config.json", "model.safetensors"}) fs::copy_file(en_large / name, source / name);
  fs::copy_file(data_dir / "sentencepiece" / "en_bpe.model", source / "tokenizer.model");
  write_json(source / "tokenizer.json", tokenizer_json_of(source / "tokenizer.model"));
  const nlohmann::json report = extend(source, out, {"--helper", de_small.string()});
  CHECK(report["files_left_out"].empty());
  const clp_transfer::io::sentencepiece_model model =
      clp_transfer::io::read_sentencepiece_model(out / "tokenizer.model");
  const clp_transfer::extend::bpe_table from_model(clp_transfer::extend::sentencepiece_bpe_model(model.pieces, model));
  const clp_transfer::extend::bpe_table from_json(clp_transfer::extend::read_bpe_model(
      nlohmann::json::parse(read_file(out / "tokenizer.json")), (out / "tokenizer.json").string()));
  REQUIRE(model.pieces.size() == std::size_t(5000) + report["tokens"].size());
  for (const std::string& text : {read_file(probes_dir / "en.txt"), read_file(probes_dir / "de.txt")})
    CHECK(clp_transfer::extend::encode_text(from_model, text) == clp_transfer::extend::encode_text(from_json, text));
  CHECK(row_bytes(out / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
        tensor_bytes(en_large / "model.safetensors", embedding));
  // Under --drift-budget the model is left out, as it was before models were extended.
  const nlohmann::json budgeted =
      extend(source, dir / "budgeted", {"--helper", de_small.string(), "--drift-budget", "0.05"});
  CHECK(budgeted["files_left_out"].size() == 1);
  CHECK(!fs::exists(dir / "budgeted" / "tokenizer.model"));
}

TEST_CASE("extend: without a helper each new row is the mean of the source rows of its pieces") {
  const temp_dir dir;
  write_file(dir / "tokens.txt",
             " Hausmeister\n \xC3\x9C"
             "bermut\nsch\xC3\xB6n\n");
  const nlohmann::json report =
      extend(en_large, dir / "out", {"--no-helper", "--tokens", (dir / "tokens.txt").string()});
  CHECK(report["helper"].is_null());
  CHECK(report["asked"] == 3);
  CHECK(report["added"] == 3);
  CHECK(report["new_rows"]["mean_of_pieces"] == report["tokens"].size());
  CHECK(row_bytes(dir / "out" / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
        tensor_bytes(en_large / "model.safetensors", embedding));
  CHECK(check_means_of_pieces(en_large, dir / "out", report, embedding) == report["tokens"].size());
  // The drift is measured on the English probe built into the program: its words, counted here.
  std::size_t words = 0;
  const std::string probe = read_file(probes_dir / "en.txt");
  for (std::size_t i = 0; i < probe.size(); ++i)
    if (!std::isspace(static_cast<unsigned char>(probe[i])) &&
        (i == 0 || std::isspace(static_cast<unsigned char>(probe[i - 1]))))
      ++words;
  CHECK(report["drift"]["words"] == words);
  CHECK(report["drift"]["probe"] == "built-in English probe");
  // The written folder checked as verify checks it: nothing found, here as by verify itself.
  CHECK(report["output_check"]["folder"] == (dir / "out").string());
  CHECK(report["output_check"]["findings"].empty());
  CHECK(run_program({"verify", (dir / "out").string(), "--quiet"}).exit_status == 0);
}

TEST_CASE("extend: --method mean-of-pieces makes every new row the mean of its pieces, with a helper too") {
  const temp_dir dir;
  const nlohmann::json report =
      extend(en_large, dir / "out", {"--helper", de_small.string(), "--method", "mean-of-pieces", "--add", "300"});
  CHECK(report["added"] == 300);
  CHECK(report["new_rows"]["method"] == "mean-of-pieces");
  CHECK(report["new_rows"]["helper"] == 0);
  CHECK(check_means_of_pieces(en_large, dir / "out", report, embedding) == report["tokens"].size());
}

TEST_CASE("extend: --undertrained synthesise keeps flagged source rows out of the means of pieces, and keeps them") {
  const temp_dir dir;
  write_file(dir / "tokens.txt",
             " Hausmeister\n \xC3\x9C"
             "bermut\nsch\xC3\xB6n\n");
  const std::vector<std::string> listed = {"--no-helper", "--tokens", (dir / "tokens.txt").string()};
  // The first piece of each new token shrunk: the screen must flag it and the means leave it out.
  const nlohmann::json plain =
      extend(en_large, dir / "plain", listed);  // named: a loop over a temporary's part dangles
  std::vector<std::string> spelled;
  for (const auto& token : plain["tokens"]) spelled.push_back(token["token"]);
  std::set<std::int64_t> shrunk;
  for (const std::vector<std::int64_t>& pieces : pieces_of(en_large, spelled))
    if (pieces.size() > 1) shrunk.insert(pieces.front());
  REQUIRE(shrunk.size() >= 2);
  const fs::path source = make_shrunk_source(dir.path, shrunk);
  for (const std::string mode : {"synthesise", "report", "keep"}) {
    CAPTURE(mode);
    std::vector<std::string> extra = listed;
    extra.insert(extra.end(), {"--undertrained", mode});
    const nlohmann::json report = extend(source, dir / mode, extra);
    CHECK(report["undertrained"]["mode"] == mode);
    CHECK(row_bytes(dir / mode / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
          tensor_bytes(source / "model.safetensors", embedding));
    if (mode == "keep") {
      CHECK(report["undertrained"]["screened"] == false);
    } else {
      const std::set<std::int64_t> flagged = flagged_ids(report);
      for (const std::int64_t r : shrunk) CHECK(flagged.count(r) == 1);
      CHECK(report["undertrained"]["left_out_of_new_rows"] == (mode == "synthesise" ? flagged.size() : 0));
    }
    const std::set<std::int64_t> left_out = mode == "synthesise" ? flagged_ids(report) : std::set<std::int64_t>();
    CHECK(check_means_of_pieces(source, dir / mode, report, embedding, left_out) == report["tokens"].size());
  }
}

TEST_CASE("extend: --undertrained with a helper gives transfer's rows under the same mode, the screen changing them") {
  const temp_dir dir;
  // Every 40th row the source shares with the helper shrunk: transfer's screen drops those pairs.
  const std::map<std::string, std::int64_t> helper = vocab_of(de_small);
  std::set<std::int64_t> shrunk;
  std::size_t shared = 0;
  for (const auto& [token, id] : vocab_of(en_large))
    if (helper.count(token) && shared++ % 40 == 0) shrunk.insert(id);
  const fs::path source = make_shrunk_source(dir.path, shrunk);
  std::map<std::string, matrix> rows;
  for (const std::string mode : {"synthesise", "keep"}) {
    CAPTURE(mode);
    const fs::path out = dir / ("extend-" + mode), reference = dir / ("transfer-" + mode);
    const nlohmann::json report =
        extend(source, out, {"--helper", de_small.string(), "--undertrained", mode, "--add", "400"});
    transfer(source, de_small, reference, {"--undertrained", mode});
    CHECK(row_bytes(out / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
          tensor_bytes(source / "model.safetensors", embedding));
    CHECK(rows_unlike_transfer(report, out, reference, embedding) == 0);
    if (mode == "synthesise") CHECK(report["undertrained"]["left_out_of_new_rows"].get<std::size_t>() >= shrunk.size());
    rows.emplace(mode, read_matrix(out / "model.safetensors", embedding));
  }
  std::int64_t changed = 0;
  for (std::int64_t r = 5000; r < rows.at("keep").rows; ++r)
    changed += !same_row(rows.at("keep"), r, rows.at("synthesise"), r);
  CHECK(changed > 0);
}

TEST_CASE("extend: padding rows are filled before the matrix grows, in the embedding, the untied head and its bias") {
  const temp_dir dir;
  const std::int64_t rows = 5056;
  const fs::path source = make_padded_source(dir.path, rows);
  transfer(source, de_small, dir / "transfer", {});
  for (const std::string add : {"10", "all"}) {
    CAPTURE(add);
    const fs::path out = dir / ("extend-" + add);
    std::vector<std::string> extra = {"--helper", de_small.string()};
    if (add != "all") extra.insert(extra.end(), {"--add", add});
    const nlohmann::json report = extend(source, out, extra);
    const std::int64_t written = std::int64_t(report["tokens"].size());
    const std::int64_t filled = std::min(written, rows - 5000);
    CHECK(report["padding_rows_filled"] == filled);
    CHECK(report["rows_grown"] == std::max<std::int64_t>(0, written - filled));
    const std::int64_t out_rows = std::max(rows, 5000 + written);
    CHECK(nlohmann::json::parse(read_file(out / "config.json"))["vocab_size"] == out_rows);
    for (const auto& [tensor, row_size] : std::vector<std::pair<std::string, std::int64_t>>{
             {embedding, 128 * 4}, {"lm_head.weight", 128 * 4}, {"lm_head.bias", 4}}) {
      CAPTURE(tensor);
      const fs::path file = out / "model.safetensors";
      CHECK(tensor_bytes(file, tensor).size() == std::size_t(out_rows * row_size));
      CHECK(row_bytes(file, tensor, 0, 5000, row_size) ==
            row_bytes(source / "model.safetensors", tensor, 0, 5000, row_size));
      // Padding rows no new token took keep the source's bytes.
      CHECK(row_bytes(file, tensor, 5000 + filled, rows, row_size) ==
            row_bytes(source / "model.safetensors", tensor, 5000 + filled, rows, row_size));
      CHECK(rows_unlike_transfer(report, out, dir / "transfer", tensor) == 0);
      check_means_of_pieces(source, out, report, tensor);
    }
  }
}
namespace {

/// Checks the refusal docs/troubleshooting.md lists under `id`, of `extend extra... --output
/// dir/out --quiet`: one line naming `culprit` with `key_word`, exit status 1, and no output
/// folder or report left behind.
void check_refusal(const temp_dir& dir, const std::string& id, std::vector<std::string> extra,
                   const std::string& culprit, std::string_view key_word) {
  CAPTURE(culprit);
  std::vector<std::string> args = {
      "extend", "--output", (dir / "out").string(), "--report", (dir / "out.json").string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  const program_result result = run_program(args);
  refused(id, result, culprit);
  CHECK(result.err.find(key_word) != std::string::npos);
  CHECK(!fs::exists(dir / "out"));
  CHECK(!fs::exists(dir / "out.json"));
}

/// A copy of en-large's config and weights under `root`/`name` with `tokenizer` (a file of that
/// name) as its only tokenizer file.
fs::path source_with_tokenizer(const fs::path& root, const std::string& name, const fs::path& tokenizer) {
  const fs::path folder = root / name;
  fs::create_directories(folder);
  fs::copy_file(en_large / "config.json", folder / "config.json");
  fs::copy_file(en_large / "model.safetensors", folder / "model.safetensors");
  fs::copy_file(tokenizer, folder / tokenizer.filename());
  return folder;
}

// --- WordPiece sources ------------------------------------------------------------------------

/// en-large's vocabulary respelled as a cased WordPiece vocab.txt (tests/data/wordpiece).
const fs::path en_vocab_txt = data_dir / "wordpiece" / "en_vocab.txt";

/// The ids the program's WordPiece encoder gives `text`, as the client reports ids.
std::vector<std::int64_t> wordpiece_ids(const clp_transfer::extend::wordpiece_table& table, const std::string& text) {
  std::vector<std::int64_t> ids;
  for (const clp_transfer::extend::token_id id : clp_transfer::extend::encode_text(table, text)) ids.push_back(id);
  return ids;
}

/// The first `count` non-empty lines of the German then the English probe: texts for a client.
std::vector<std::string> probe_lines(std::size_t count) {
  std::vector<std::string> texts;
  for (const char* probe : {"de.txt", "en.txt"}) {
    std::istringstream lines_of_probe(read_file(probes_dir / probe));
    for (std::string line; std::getline(lines_of_probe, line) && texts.size() < count;)
      if (!line.empty()) texts.push_back(line);
  }
  return texts;
}

/// The lines of a vocab.txt (each ended by "\n").
std::vector<std::string> vocab_lines(const fs::path& file) {
  std::vector<std::string> lines;
  const std::string text = read_file(file);
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t end = text.find('\n', from);
    lines.push_back(text.substr(from, end - from));
    from = end + 1;
  }
  return lines;
}

/// en-large's config and weights under `root`/`name` with en_vocab_txt as a cased BERT vocab.txt
/// and its tokenizer_config.json; with `tokenizer_json`, also the tokenizer.json a Hugging Face
/// conversion of it holds (a WordPiece model, BERT's normaliser and pre-tokenizer).
/// With `vocab_txt` another vocabulary (`lowercase` as bert-base-uncased), the weights en-large's
/// config with a random 32-wide embedding of as many rows.
fs::path make_wordpiece_source(const fs::path& root, const std::string& name, bool tokenizer_json,
                               const fs::path& vocab_txt = en_vocab_txt, bool lowercase = false) {
  const fs::path folder = root / name;
  fs::create_directories(folder);
  if (vocab_txt == en_vocab_txt) {
    fs::copy_file(en_large / "config.json", folder / "config.json");
    fs::copy_file(en_large / "model.safetensors", folder / "model.safetensors");
  } else {
    const auto rows = std::int64_t(vocab_lines(vocab_txt).size());
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_file(en_large / "config.json"));
    config["vocab_size"] = rows;
    config["n_embd"] = 32;
    write_json(folder / "config.json", config);
    fixture_random random(56);
    write_safetensors(folder / "model.safetensors",
                      {matrix_tensor(embedding, anisotropic_matrix(rows, 32, 0.5, 0.2, random, "F32"), "F32")});
  }
  fs::copy_file(vocab_txt, folder / "vocab.txt");
  write_json(folder / "tokenizer_config.json", nlohmann::ordered_json{{"tokenizer_class", "BertTokenizer"},
                                                                      {"do_lower_case", lowercase},
                                                                      {"unk_token", "[UNK]"},
                                                                      {"sep_token", "[SEP]"},
                                                                      {"pad_token", "[PAD]"},
                                                                      {"cls_token", "[CLS]"},
                                                                      {"mask_token", "[MASK]"}});
  if (!tokenizer_json) return folder;
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  const std::vector<std::string> lines = vocab_lines(vocab_txt);
  for (std::size_t id = 0; id < lines.size(); ++id) {
    vocab[lines[id]] = id;
    if (lines[id] == "[PAD]" || lines[id] == "[UNK]" || lines[id] == "[CLS]" || lines[id] == "[SEP]" ||
        lines[id] == "[MASK]")
      added.push_back({{"id", id},
                       {"content", lines[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
  }
  write_json(folder / "tokenizer.json",
             nlohmann::ordered_json{{"version", "1.0"},
                                    {"truncation", nullptr},
                                    {"padding", nullptr},
                                    {"added_tokens", added},
                                    {"normalizer",
                                     {{"type", "BertNormalizer"},
                                      {"clean_text", true},
                                      {"handle_chinese_chars", true},
                                      {"strip_accents", nullptr},
                                      {"lowercase", lowercase}}},
                                    {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                                    {"post_processor", nullptr},
                                    {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
                                    {"model",
                                     {{"type", "WordPiece"},
                                      {"unk_token", "[UNK]"},
                                      {"continuing_subword_prefix", "##"},
                                      {"max_input_chars_per_word", 100},
                                      {"vocab", vocab}}}});
  return folder;
}

/// The oracle of WordPiece's encoder, written from BERT's description and nothing of the
/// program: greedy longest-match-first over the word's UTF-8 characters, "##" before every
/// match after the first, the unknown piece for a word past 100 characters or one it cannot
/// match to the end.
std::vector<std::int64_t> greedy_longest_match(const std::map<std::string, std::int64_t>& vocab,
                                               const std::string& word) {
  std::vector<std::string> characters;
  for (std::size_t i = 0; i < word.size();) {
    const auto c = static_cast<unsigned char>(word[i]);
    const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    characters.push_back(word.substr(i, n));
    i += n;
  }
  const std::int64_t unknown = vocab.at("[UNK]");
  if (characters.size() > 100) return {unknown};
  std::vector<std::int64_t> ids;
  for (std::size_t start = 0; start < characters.size();) {
    std::size_t end = characters.size();
    for (; end > start; --end) {
      std::string piece = start > 0 ? "##" : "";
      for (std::size_t k = start; k < end; ++k) piece += characters[k];
      if (const auto it = vocab.find(piece); it != vocab.end()) {
        ids.push_back(it->second);
        break;
      }
    }
    if (end == start) return {unknown};
    start = end;
  }
  return ids;
}

/// The words of `text` as a cased BERT splits the tests' probes: at whitespace, and each
/// punctuation character a word (ASCII's symbols, and the quotation marks and dashes of
/// U+2010..U+2027, all the probes hold beyond ASCII letters and German ones).
std::vector<std::string> oracle_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) words.push_back(word);
    word.clear();
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    const std::string character = text.substr(i, n);
    i += n;
    const bool space = character == " " || character == "\n" || character == "\t" || character == "\r";
    const bool ascii_symbol = n == 1 && std::ispunct(c);
    const bool general_punctuation = n == 3 && character >= "\xE2\x80\x90" && character <= "\xE2\x80\xA7";
    if (space) {
      end_word();
    } else if (ascii_symbol || general_punctuation) {
      end_word();
      words.push_back(character);
    } else {
      word += character;
    }
  }
  end_word();
  return words;
}

/// token -> id of a vocab.txt (its line from 0).
std::map<std::string, std::int64_t> vocab_txt_ids(const fs::path& file) {
  std::map<std::string, std::int64_t> ids;
  const std::vector<std::string> lines = vocab_lines(file);
  for (std::size_t id = 0; id < lines.size(); ++id) ids.emplace(lines[id], std::int64_t(id));
  return ids;
}

/// A word in which the oracle emits the continuation piece `piece` ("##t"): one of the
/// vocabulary's one-character word-start pieces (a letter or digit of ASCII or Latin-1) before
/// t, split by the oracle into that piece and `piece`; "" when there is none.
std::string oracle_continuation_word(const std::map<std::string, std::int64_t>& vocab, const std::string& piece) {
  const std::string text = piece.substr(2);
  for (const auto& [start, id] : vocab) {
    const bool one_character = start.size() == 1 ? std::isalnum(static_cast<unsigned char>(start[0])) != 0
                                                 : start.size() == 2 && static_cast<unsigned char>(start[0]) == 0xC3;
    if (!one_character) continue;
    if (greedy_longest_match(vocab, start + text) == std::vector<std::int64_t>{id, vocab.at(piece)})
      return start + text;
  }
  return "";
}

}  // namespace

TEST_CASE("extend: refusals name the file or option in one line and leave no output") {
  const temp_dir dir;
  const std::vector<std::string> helper = {"--helper", de_small.string()};
  const auto with_helper = [&](std::vector<std::string> args) {
    args.insert(args.end(), helper.begin(), helper.end());
    return args;
  };
  const fs::path formats = data_dir / "checkpoint_formats";
  // A list of random bytes: nothing can be added, and the line that says so stays a line (the
  // first token and its reason cut short; check_refusal asks for under 600 characters).
  {
    std::string noise;
    std::uint64_t state = 7;
    for (int i = 0; i < 3000; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const char c = static_cast<char>(state >> 56);
      noise += (i % 61 == 60) ? '\n' : (c == '\n' || c == '\r' ? 'x' : c);
    }
    write_file(dir / "noise.txt", noise + "\n");
    check_refusal(dir, "extend-token-list", {"--source", en_large.string(), "--tokens", (dir / "noise.txt").string()},
                  (en_large / "tokenizer.json").string(), "extension adds no token");
  }
  // A probe without a word would measure a drift of 0 of 0 words.
  write_file(dir / "empty-probe.txt", " \n\t\n");
  check_refusal(dir, "extend-probe",
                with_helper({"--source", en_large.string(), "--probe", (dir / "empty-probe.txt").string()}),
                (dir / "empty-probe.txt").string(), "holds no word");
  check_refusal(dir, "extend-probe",
                with_helper({"--source", en_large.string(), "--probe-new", (dir / "empty-probe.txt").string()}),
                (dir / "empty-probe.txt").string(), "holds no word");
  // A SentencePiece model of type word: no merges and no scores to place a new piece by.
  write_file(dir / "spiece.model",
             clp_test::sentencepiece_model_bytes(clp_test::llama_style_entries({"<unk>", "<s>", "</s>",
                                                                                "\xE2\x96\x81"
                                                                                "a"}),
                                                 3));
  const fs::path sentencepiece = source_with_tokenizer(dir.path, "spm", dir / "spiece.model");
  check_refusal(dir, "extend-source-tokenizer", with_helper({"--source", sentencepiece.string()}),
                (sentencepiece / "spiece.model").string(), "SentencePiece model of type word cannot be extended");
  // A SentencePiece BPE source is extended, but the drift budget's guard is not offered for it yet.
  fs::copy_file(data_dir / "sentencepiece" / "en_bpe.model", dir / "tokenizer.model");
  const fs::path bpe_model = source_with_tokenizer(dir.path, "spm-bpe", dir / "tokenizer.model");
  check_refusal(dir, "extend-source-tokenizer", with_helper({"--source", bpe_model.string(), "--drift-budget", "0"}),
                (bpe_model / "tokenizer.model").string(), "--drift-budget is not supported for a SentencePiece source");
  // WordPiece: a vocab.txt with an empty line or a line twice, a tokenizer.json whose unknown
  // piece is not in its vocabulary or whose pre-tokenizer is not BERT's, a drift budget.
  {
    const std::string lines = read_file(en_vocab_txt);
    const std::size_t tenth = [&] {
      std::size_t at = 0;
      for (int i = 0; i < 10; ++i) at = lines.find('\n', at) + 1;
      return at;
    }();
    write_file(dir / "vocab.txt", lines.substr(0, tenth) + "\n" + lines.substr(tenth));
    const fs::path empty_line = source_with_tokenizer(dir.path, "wp-empty-line", dir / "vocab.txt");
    check_refusal(dir, "extend-tokenizer-malformed", with_helper({"--source", empty_line.string()}),
                  (empty_line / "vocab.txt").string(), "line 11 is empty");
    write_file(dir / "vocab.txt", lines + lines.substr(0, tenth));
    const fs::path twice = source_with_tokenizer(dir.path, "wp-twice", dir / "vocab.txt");
    check_refusal(dir, "vocab-txt-invalid", with_helper({"--source", twice.string()}), (twice / "vocab.txt").string(),
                  "both hold the token");
    const fs::path wordpiece = make_wordpiece_source(dir.path, "wp-json", true);
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(read_file(wordpiece / "tokenizer.json"));
    document["model"]["unk_token"] = "<unk>";
    const fs::path no_unknown = make_wordpiece_source(dir.path, "wp-no-unknown", true);
    write_json(no_unknown / "tokenizer.json", document);
    check_refusal(dir, "extend-tokenizer-malformed", with_helper({"--source", no_unknown.string()}),
                  (no_unknown / "tokenizer.json").string(), "\"<unk>\" is not in the vocabulary");
    document["model"]["unk_token"] = "[UNK]";
    document["pre_tokenizer"] = {{"type", "Whitespace"}};
    const fs::path whitespace = make_wordpiece_source(dir.path, "wp-whitespace", true);
    write_json(whitespace / "tokenizer.json", document);
    check_refusal(dir, "extend-source-tokenizer", with_helper({"--source", whitespace.string()}),
                  (whitespace / "tokenizer.json").string(), "BertPreTokenizer");
    check_refusal(dir, "extend-source-tokenizer", with_helper({"--source", wordpiece.string(), "--drift-budget", "0"}),
                  (wordpiece / "tokenizer.json").string(), "--drift-budget is not supported for a WordPiece source");
  }
  write_json(dir / "tokenizer.json", unigram_tokenizer_json({"<unk>", "<s>", "</s>",
                                                             "\xE2\x96\x81"
                                                             "a"}));
  const fs::path unigram = source_with_tokenizer(dir.path, "unigram", dir / "tokenizer.json");
  check_refusal(dir, "extend-source-tokenizer", with_helper({"--source", unigram.string()}),
                (unigram / "tokenizer.json").string(), "Unigram");

  write_file(dir / "present.txt", " Haus\n the\n");
  check_refusal(dir, "extend-token-list",
                {"--source", en_large.string(), "--no-helper", "--tokens", (dir / "present.txt").string()},
                (dir / "present.txt").string(), "entry 2 \" the\" is a token the source has");
  write_file(dir / "empty.txt", " Haus\n\n Maus\n");
  check_refusal(dir, "extend-token-list",
                with_helper({"--source", en_large.string(), "--tokens", (dir / "empty.txt").string()}),
                (dir / "empty.txt").string(), "entry 2 is empty");
  check_refusal(dir, "extend-token-list", with_helper({"--source", en_large.string(), "--add", "0"}), "--add",
                "at least 1");
  write_file(dir / "crlf.txt", " Haus\r\n Maus\r\n");
  check_refusal(dir, "extend-token-list",
                with_helper({"--source", en_large.string(), "--tokens", (dir / "crlf.txt").string()}),
                (dir / "crlf.txt").string(), "CRLF");
  fs::create_directories(dir / "a-folder");
  check_refusal(dir, "extend-token-list",
                with_helper({"--source", en_large.string(), "--tokens", (dir / "a-folder").string()}),
                (dir / "a-folder").string(), "is a folder");
  // A line of 10^5 or 10^6 bytes is refused before any model is read, naming its line, in a
  // short message (not the line itself).
  for (const std::size_t size : {std::size_t(100000), std::size_t(1000000)}) {
    write_file(dir / "long.txt", " Haus\n " + std::string(size, 'x') + "\n");
    check_refusal(dir, "extend-token-list",
                  with_helper({"--source", en_large.string(), "--tokens", (dir / "long.txt").string()}),
                  (dir / "long.txt").string(), "entry 2 is " + std::to_string(size + 1) + " bytes long");
  }
  // A source that is not there, or not a folder: transfer's words.
  check_refusal(dir, "missing-path", with_helper({"--source", (dir / "nowhere").string()}), (dir / "nowhere").string(),
                "no such file or folder");
  write_file(dir / "plain", "not a model");
  check_refusal(dir, "not-a-folder", with_helper({"--source", (dir / "plain").string()}), (dir / "plain").string(),
                "not a folder");
  check_refusal(dir, "extend-token-list", with_helper({"--source", en_large.string(), "--drift-budget", "1.5"}),
                "--drift-budget", "from 0 to 1");
  check_refusal(dir, "extend-no-helper", {"--source", en_large.string(), "--no-helper"}, "--tokens",
                "without --helper");
  check_refusal(
      dir, "extend-no-helper",
      {"--source", en_large.string(), "--no-helper", "--tokens", (dir / "empty.txt").string(), "--weighting", "top-k"},
      "--weighting", "without --helper");

  // A usage error (CLI11's) is one line too, with the usual status of a usage error.
  const program_result both =
      run_program({"extend", "--source", en_large.string(), "--helper", de_small.string(), "--add", "3", "--tokens",
                   (dir / "empty.txt").string(), "--output", (dir / "out").string()});
  CHECK(both.exit_status == 2);
  CHECK(std::count(both.err.begin(), both.err.end(), '\n') == 1);
  CHECK(both.err.find("--tokens") != std::string::npos);
  CHECK(!fs::exists(dir / "out"));
}

TEST_CASE("extend: a WordPiece vocab.txt source keeps every line and row, and adds pieces greedy matching emits") {
  const temp_dir dir;
  const fs::path source = make_wordpiece_source(dir.path, "wordpiece", false);
  const fs::path out = dir / "extended";
  const nlohmann::json report =
      extend(source, out, {"--helper", de_small.string(), "--probe-new", (probes_dir / "de.txt").string()});
  transfer(source, de_small, dir / "transferred", {});
  const std::vector<std::string> before = vocab_lines(source / "vocab.txt");
  const std::vector<std::string> after = vocab_lines(out / "vocab.txt");
  // Old lines and rows as they were; new rows transfer's for the same helper tokens.
  CHECK(read_file(out / "vocab.txt").substr(0, read_file(source / "vocab.txt").size()) ==
        read_file(source / "vocab.txt"));
  CHECK(after.size() == before.size() + report["added"].get<std::size_t>());
  CHECK(row_bytes(out / "model.safetensors", embedding, 0, 5000, 128 * 4) ==
        tensor_bytes(source / "model.safetensors", embedding));
  CHECK(rows_unlike_transfer(report, out, dir / "transferred", embedding, "wordpiece") == 0);
  CHECK(report["new_rows"]["helper"].get<int>() + report["new_rows"]["source_copy"].get<int>() ==
        report["added"].get<int>());
  CHECK(report["intermediates"] == 0);
  CHECK(report["added"].get<std::size_t>() + report["left_out_count"].get<std::size_t>() +
            report["already_present"].get<std::size_t>() ==
        report["asked"].get<std::size_t>());
  CHECK(report["added_share_of_asked"].get<double>() > 0.9);
  for (const auto& entry : report["left_out"]) CHECK(!entry["reason"].get<std::string>().empty());

  // Each added piece is what the oracle emits: a word-start piece for its own text, a "##" piece
  // after a one-character word start.
  const std::map<std::string, std::int64_t> old_ids = vocab_txt_ids(source / "vocab.txt");
  const std::map<std::string, std::int64_t> new_ids = vocab_txt_ids(out / "vocab.txt");
  std::size_t starts = 0, continuations = 0;
  for (const auto& token : report["tokens"]) {
    const std::string piece = token["token"];
    CAPTURE(piece);
    REQUIRE(new_ids.at(piece) == token["id"].get<std::int64_t>());
    if (piece.rfind("##", 0) == 0) {
      ++continuations;
      CHECK(!oracle_continuation_word(new_ids, piece).empty());
    } else {
      ++starts;
      CHECK(greedy_longest_match(new_ids, piece) == std::vector<std::int64_t>{token["id"].get<std::int64_t>()});
    }
  }
  CHECK(starts > 0);
  CHECK(continuations > 0);

  // The drift the report gives is the oracle's: probe words whose ids change.
  std::size_t changed = 0, words = 0;
  std::istringstream probe(read_file(probes_dir / "en.txt"));
  for (std::string word; probe >> word;) {
    ++words;
    std::vector<std::int64_t> old_word, new_word;
    for (const std::string& part : oracle_words(word)) {
      const auto a = greedy_longest_match(old_ids, part), b = greedy_longest_match(new_ids, part);
      old_word.insert(old_word.end(), a.begin(), a.end());
      new_word.insert(new_word.end(), b.begin(), b.end());
    }
    changed += old_word != new_word ? 1 : 0;
  }
  CHECK(report["drift"]["words"] == words);
  CHECK(report["drift"]["changed"] == changed);
  CHECK(changed > 0);
  MESSAGE("WordPiece en-large + de-small: added ", report["added"], " of ", report["asked"], " (", starts,
          " word starts, ", continuations, " continuations), drift ", changed, " of ", words, ", German tokens a word ",
          report["fertility"]["extended"], " (source ", report["fertility"]["source"], ", helper ",
          report["fertility"]["helper"], ")");
}

TEST_CASE(
    "extend: a WordPiece tokenizer.json source in the real client: same ids as extend's encoder, each piece emitted") {
  const temp_dir dir;
  const fs::path source = make_wordpiece_source(dir.path, "wordpiece-json", true);
  const fs::path out = dir / "extended";
  const nlohmann::json report = extend(source, out, {"--helper", de_small.string()});
  // model.vocab: the old keys in their order with their ids, then the new ones; vocab.txt agrees.
  const auto source_vocab = nlohmann::ordered_json::parse(read_file(source / "tokenizer.json"))["model"]["vocab"];
  const auto written = nlohmann::ordered_json::parse(read_file(out / "tokenizer.json"));
  const auto& vocab = written["model"]["vocab"];
  REQUIRE(vocab.size() == source_vocab.size() + report["added"].get<std::size_t>());
  auto old_entry = source_vocab.begin();
  auto new_entry = vocab.begin();
  for (; old_entry != source_vocab.end(); ++old_entry, ++new_entry) {
    REQUIRE(old_entry.key() == new_entry.key());
    REQUIRE(old_entry.value() == new_entry.value());
  }
  const std::vector<std::string> lines = vocab_lines(out / "vocab.txt");
  REQUIRE(lines.size() == vocab.size());
  for (std::size_t id = 0; id < lines.size(); ++id) CHECK(vocab.at(lines[id]) == id);
  CHECK(read_file(out / "tokenizer_config.json") == read_file(source / "tokenizer_config.json"));

  // The program's encoder of the written file.
  namespace x = clp_transfer::extend;
  const x::wordpiece_table extended(x::read_wordpiece_model(written, "written"));
  const x::wordpiece_table original(
      x::read_wordpiece_model(nlohmann::ordered_json::parse(read_file(source / "tokenizer.json")), "source"));
  std::vector<std::string> texts = probe_lines(120);
  texts.push_back("Caf\xC3\xA9 \xE2\x80\x9EHaus\xE2\x80\x9C,\tna\xC3\xAFve\x01 \xE4\xB8\xAD\xE6\x96\x87 don't!");
  // Each added piece where it stands: its own text, or a word that ends in it.
  const std::map<std::string, std::int64_t> ids = vocab_txt_ids(out / "vocab.txt");
  std::vector<std::vector<std::int64_t>> expected_pieces;
  const std::size_t first_piece_text = texts.size();
  for (const auto& token : report["tokens"]) {
    const std::string piece = token["token"];
    const bool continuation = piece.rfind("##", 0) == 0;
    const std::string word = continuation ? oracle_continuation_word(ids, piece) : piece;
    CAPTURE(piece);
    REQUIRE(!word.empty());
    texts.push_back(word);
    expected_pieces.push_back(continuation
                                  ? std::vector<std::int64_t>{ids.at(word.substr(0, word.size() - piece.size() + 2)),
                                                              token["id"].get<std::int64_t>()}
                                  : std::vector<std::int64_t>{token["id"].get<std::int64_t>()});
  }
  if (!client_available()) return;
  const nlohmann::json answer = ask_client(out, {{"encode", texts}});
  const nlohmann::json answer_before = ask_client(source, {{"encode", texts}});
  std::size_t differ = 0;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    CAPTURE(texts[t]);
    const std::vector<std::int64_t> mine = wordpiece_ids(extended, texts[t]);
    const std::vector<std::int64_t> mine_before = wordpiece_ids(original, texts[t]);
    CHECK(answer["encode"][t].get<std::vector<std::int64_t>>() == mine);
    CHECK(answer_before["encode"][t].get<std::vector<std::int64_t>>() == mine_before);
    if (t >= first_piece_text) CHECK(mine == expected_pieces[t - first_piece_text]);
    differ += mine != mine_before ? 1 : 0;
  }
  CHECK(differ > 0);
}

TEST_CASE(
    "extend: bert-base-uncased's real vocabulary in the real client: lowercase, accents, CJK as it encodes them") {
  const fs::path vocab_txt = data_dir / "wordpiece" / "bert-base-uncased" / "vocab.txt";
  const temp_dir dir;
  const fs::path source = make_wordpiece_source(dir.path, "bert-uncased", true, vocab_txt, true);
  const fs::path out = dir / "extended";
  // The first 800 the helper has and the source lacks: enough of each kind, in a test's time.
  const nlohmann::json report =
      extend(source, out, {"--helper", de_small.string(), "--method", "mean-of-pieces", "--add", "800"});
  CHECK(report["added"].get<int>() > 300);
  CHECK(read_file(out / "vocab.txt").substr(0, read_file(vocab_txt).size()) == read_file(vocab_txt));
  // Cased and accented helper tokens are left out: the normaliser never leaves such a word.
  std::size_t normalised = 0;
  for (const auto& entry : report["left_out"])
    normalised += entry["reason"].get<std::string>().find("normaliser") != std::string::npos ? 1 : 0;
  CHECK(normalised > 0);
  namespace x = clp_transfer::extend;
  const x::wordpiece_table extended(
      x::read_wordpiece_model(nlohmann::ordered_json::parse(read_file(out / "tokenizer.json")), "written"));
  const x::wordpiece_table original(
      x::read_wordpiece_model(nlohmann::ordered_json::parse(read_file(source / "tokenizer.json")), "source"));
  std::vector<std::string> texts = probe_lines(120);
  // Accents, capitals, CJK, Hangul, a control and a zero-width character, a long word. (Not a
  // final sigma: the JavaScript client lowercases a word's last 'Σ' to 'ς' as Python does,
  // Hugging Face's Rust and extend to 'σ'.)
  texts.push_back(
      "\xC3\x9C\x62\x65r M\xC3\xBCnchen, CAF\xC3\x89 na\xC3\xAFve "
      "\xE4\xB8\xAD\xE6\x96\x87\xED\x95\x9C\xEA\xB5\xAD\x01x\xE2\x80\x8By " +
      std::string(120, 'a'));
  std::map<std::string, std::int64_t> ids = vocab_txt_ids(out / "vocab.txt");
  for (const auto& token : report["tokens"]) {
    const std::string piece = token["token"];
    texts.push_back(piece.rfind("##", 0) == 0 ? oracle_continuation_word(ids, piece) : piece);
  }
  if (!client_available()) return;
  const nlohmann::json answer = ask_client(out, {{"encode", texts}});
  const nlohmann::json answer_before = ask_client(source, {{"encode", texts}});
  for (std::size_t t = 0; t < texts.size(); ++t) {
    CAPTURE(texts[t]);
    const std::vector<std::int64_t> mine = wordpiece_ids(extended, texts[t]);
    const std::vector<std::int64_t> mine_before = wordpiece_ids(original, texts[t]);
    CHECK(answer["encode"][t].get<std::vector<std::int64_t>>() == mine);
    CHECK(answer_before["encode"][t].get<std::vector<std::int64_t>>() == mine_before);
  }
}

}  // namespace test_extend
