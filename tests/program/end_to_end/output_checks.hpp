// Checks of a model folder the program wrote: the files it must hold, every tensor but the
// embeddings byte-identical to the source, the rewritten config and index, the helper's
// tokenizer files, and the embedding rows against an oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "io/safetensors.hpp"
#include "model_fixtures.hpp"
#include "harness.hpp"

namespace program_test {

/// The tokenizer files the helper folder holds (those the output must copy).
inline std::set<std::string> helper_tokenizer_files(const model_fixture& helper) {
  std::set<std::string> names;
  for (const std::string& name : folder_entries(helper.folder))
    if (name == "tokenizer.json" || name == "tokenizer_config.json" || name == "special_tokens_map.json" ||
        name == "vocab.json" || name == "merges.txt" || fs::path(name).extension() == ".model")
      names.insert(name);
  return names;
}

/// The output holds exactly: the source's weight files (and index), config.json and the
/// helper's tokenizer files, nothing else; and nothing was left beside it.
inline void check_output_files(const model_pair& pair, const fs::path& output) {
  std::set<std::string> expected = helper_tokenizer_files(pair.helper);
  expected.insert(pair.source.weight_files.begin(), pair.source.weight_files.end());
  expected.insert("config.json");
  if (pair.source.weight_files.size() > 1) expected.insert("model.safetensors.index.json");
  const std::vector<std::string> entries = folder_entries(output);
  CHECK(std::set<std::string>(entries.begin(), entries.end()) == expected);
  CHECK(folder_entries(output.parent_path()) == std::vector<std::string>{output.filename().string()});
  for (const std::string& name : helper_tokenizer_files(pair.helper)) {
    INFO("tokenizer file ", name);
    CHECK(read_file(output / name) == read_file(pair.helper.folder / name));
  }
}

/// Same tensor names, dtypes, order and metadata in every weight file; the embedding (and
/// head) reshaped to the helper's rows; every other tensor byte-identical; the index's
/// weight_map unchanged and its total_size the new byte count.
inline void check_other_tensors(const model_pair& pair, const fs::path& output) {
  const model_fixture& source = pair.source;
  std::uint64_t total = 0;
  for (const std::string& file : source.weight_files) {
    INFO("weight file ", file);
    const clp_transfer::io::safetensors_file before(source.folder / file);
    const clp_transfer::io::safetensors_file after(output / file);
    CHECK(after.metadata() == before.metadata());
    REQUIRE(after.tensors().size() == before.tensors().size());
    for (std::size_t i = 0; i < before.tensors().size(); ++i) {
      const clp_transfer::io::tensor_entry& a = before.tensors()[i];
      const clp_transfer::io::tensor_entry& b = after.tensors()[i];
      INFO("tensor ", a.name);
      CHECK(b.name == a.name);
      CHECK(b.dtype == a.dtype);
      total += b.byte_size;
      if (a.name == source.embedding_name || a.name == source.head_name) {
        CHECK(b.shape == std::vector<std::int64_t>{pair.helper.embedding.rows, a.shape[1]});
        continue;
      }
      CHECK(b.shape == a.shape);
      CHECK(tensor_bytes(output / file, b.name) == tensor_bytes(source.folder / file, a.name));
    }
  }
  if (source.weight_files.size() > 1) {
    const auto before = nlohmann::json::parse(read_file(source.folder / "model.safetensors.index.json"));
    const auto after = nlohmann::json::parse(read_file(output / "model.safetensors.index.json"));
    CHECK(after["weight_map"] == before["weight_map"]);
    CHECK(after["metadata"]["total_size"] == total);
  }
}

/// config.json: the source's, in its key order, with vocab_size = the helper's rows and each
/// special-token id taken from the helper (dropped where the helper has none).
inline void check_config(const model_pair& pair, const fs::path& output) {
  const auto written = nlohmann::ordered_json::parse(read_file(output / "config.json"));
  nlohmann::json expected = pair.source.config;
  expected["vocab_size"] = pair.helper.embedding.rows;
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "sep_token_id",
                          "cls_token_id", "mask_token_id", "decoder_start_token_id"}) {
    if (pair.helper.config.contains(key)) expected[key] = pair.helper.config[key];
    else expected.erase(key);
  }
  CHECK(nlohmann::json(written) == expected);
  std::vector<std::string> kept_order, written_order;
  for (const auto& item : pair.source.config.items())
    if (written.contains(item.key())) kept_order.push_back(item.key());
  for (const auto& item : written.items())
    if (pair.source.config.contains(item.key())) written_order.push_back(item.key());
  CHECK(written_order == kept_order);
}

/// Checks `got` against the oracle's `expected`: copied rows bit-exact; synthesised rows
/// within 1e-4 relative error (F32, row norms) or within one bfloat16 ulp of the oracle
/// rounded to bfloat16 (BF16; plus 1e-5 of the row's largest entry, for entries so near zero
/// that float32 rounding in the sums alone exceeds their ulp). Rows on a top-k near tie are
/// skipped (float cosines may rank them either way); they must be rare.
inline void check_rows(const matrix& got, const matrix& expected, const oracle_rows& oracle, const std::string& dtype,
                       const char* what) {
  INFO("matrix: ", what);
  REQUIRE(got.rows == expected.rows);
  REQUIRE(got.cols == expected.cols);
  std::int64_t copied_mismatches = 0, skipped = 0, non_finite = 0, bf16_violations = 0, worst_row = -1;
  double worst = 0;
  for (std::int64_t r = 0; r < got.rows; ++r) {
    const double* g = got.row(r);
    const double* e = expected.row(r);
    for (std::int64_t c = 0; c < got.cols; ++c) non_finite += !std::isfinite(g[c]);
    if (oracle.copied[std::size_t(r)]) {
      copied_mismatches += !std::equal(g, g + got.cols, e);
      continue;
    }
    if (oracle.ambiguous[std::size_t(r)]) {
      ++skipped;
      continue;
    }
    double diff = 0, norm = 0, largest = 0;
    for (std::int64_t c = 0; c < got.cols; ++c) {
      diff += (g[c] - e[c]) * (g[c] - e[c]);
      norm += e[c] * e[c];
      largest = std::max(largest, std::abs(e[c]));
    }
    const double relative = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
    if (relative > worst) worst = relative, worst_row = r;
    if (dtype == "BF16")
      for (std::int64_t c = 0; c < got.cols; ++c) {
        const double rounded = round_to_bf16(e[c]);
        bf16_violations += std::abs(g[c] - rounded) > bf16_ulp(rounded) + 1e-5 * largest;
      }
  }
  INFO("worst relative row error ", worst, " at row ", worst_row);
  CHECK(non_finite == 0);
  CHECK(copied_mismatches == 0);
  CHECK(skipped * 20 <= got.rows);
  if (dtype == "F32") CHECK(worst <= 1e-4);
  else CHECK(bf16_violations == 0);
}

/// The output embedding (and head) of `output` against the oracle.
inline void check_embeddings(const model_pair& pair, const fs::path& output, const oracle_rows& oracle) {
  const model_fixture& source = pair.source;
  const std::string& first = source.weight_files.front();
  const std::string& last = source.weight_files.back();  // the fixtures put the head in the last file
  check_rows(read_matrix(output / first, source.embedding_name), oracle.embedding, oracle, source.dtype, "embedding");
  if (!source.head_name.empty())
    check_rows(read_matrix(output / last, source.head_name), oracle.head, oracle, source.dtype, "head");
}

/// Every file of folder `a` equals the file of the same name in `b`, and no file is extra.
inline void check_same_folders(const fs::path& a, const fs::path& b) {
  REQUIRE(folder_entries(a) == folder_entries(b));
  for (const std::string& name : folder_entries(a)) {
    INFO("file ", name);
    CHECK(read_file(a / name) == read_file(b / name));
  }
}

}  // namespace program_test
