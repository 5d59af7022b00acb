// Small Hugging Face model folders for the program tests, written with the I/O layer's
// safetensors_writer: a GPT-2-like pair (tied F32 embeddings, byte-level BPE, one weight file)
// and a Llama-like pair (untied BF16 head, Unigram tokenizer, three shards and an index).
// Every value the program will read is kept here in double, exactly as stored, so that the
// tests can predict the output independently of the program.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "harness.hpp"
#include "support/sentencepiece_bytes.hpp"

namespace program_test {

/// Deterministic numbers for the fixtures (splitmix64, Box-Muller): the same on every platform.
class fixture_random {
 public:
  explicit fixture_random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t x = (state_ += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = double((next() >> 11) | 1u) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * uniform());
  }
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[next() % i]);
  }

 private:
  std::uint64_t state_;
};

// --- bfloat16, written out here rather than taken from Eigen so that the oracle does not share
// the program's conversion code.

/// The bfloat16 nearest to `x` (ties to even), as its 16 bits.
inline std::uint16_t bf16_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}

inline double from_bf16_bits(std::uint16_t half) {
  const std::uint32_t bits = std::uint32_t(half) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

inline double round_to_bf16(double x) { return from_bf16_bits(bf16_bits(static_cast<float>(x))); }

/// The spacing of bfloat16 values at |x| (8 significant bits).
inline double bf16_ulp(double x) {
  if (x == 0) return std::ldexp(1.0, -133);
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 8, -133));
}

/// A row-major matrix of the exact values stored in (or predicted for) a checkpoint.
struct matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> values;

  matrix() = default;
  matrix(std::int64_t r, std::int64_t c) : rows(r), cols(c), values(std::size_t(r * c), 0.0) {}
  double& operator()(std::int64_t r, std::int64_t c) { return values[std::size_t(r * cols + c)]; }
  double operator()(std::int64_t r, std::int64_t c) const { return values[std::size_t(r * cols + c)]; }
  const double* row(std::int64_t r) const { return values.data() + r * cols; }
  double* row(std::int64_t r) { return values.data() + r * cols; }
};

/// The bytes of `m` as safetensors stores a "F32" or "BF16" tensor (little-endian).
inline std::string encode(const matrix& m, const std::string& dtype) {
  std::string bytes;
  if (dtype == "F32") {
    bytes.resize(m.values.size() * 4);
    for (std::size_t i = 0; i < m.values.size(); ++i) {
      const float x = static_cast<float>(m.values[i]);
      std::memcpy(&bytes[i * 4], &x, 4);
    }
  } else if (dtype == "BF16") {
    bytes.resize(m.values.size() * 2);
    for (std::size_t i = 0; i < m.values.size(); ++i) {
      const std::uint16_t x = bf16_bits(static_cast<float>(m.values[i]));
      std::memcpy(&bytes[i * 2], &x, 2);
    }
  } else {
    throw std::logic_error("encode: dtype " + dtype);
  }
  return bytes;
}

/// The matrix held by `bytes` of an "F32" or "BF16" tensor of shape [rows, cols].
inline matrix decode(const std::string& bytes, const std::string& dtype, std::int64_t rows, std::int64_t cols) {
  matrix m(rows, cols);
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (dtype == "F32") {
      float x;
      std::memcpy(&x, &bytes[i * 4], 4);
      m.values[i] = x;
    } else {
      std::uint16_t x;
      std::memcpy(&x, &bytes[i * 2], 2);
      m.values[i] = from_bf16_bits(x);
    }
  }
  return m;
}

/// The bytes of tensor `name` of the safetensors file `file`.
inline std::string tensor_bytes(const fs::path& file, const std::string& name) {
  const clp_transfer::io::safetensors_file opened(file);
  const clp_transfer::io::tensor_entry& tensor = opened.at(name);
  std::string bytes(tensor.byte_size, '\0');
  opened.read(tensor, bytes.data(), bytes.size());
  return bytes;
}

/// Tensor `name` of `file` as a matrix; it must be 2-D F32 or BF16.
inline matrix read_matrix(const fs::path& file, const std::string& name) {
  const clp_transfer::io::safetensors_file opened(file);
  const clp_transfer::io::tensor_entry& tensor = opened.at(name);
  REQUIRE(tensor.shape.size() == 2);
  std::string bytes(tensor.byte_size, '\0');
  opened.read(tensor, bytes.data(), bytes.size());
  return decode(bytes, std::string(clp_transfer::io::dtype_name(tensor.dtype)), tensor.shape[0], tensor.shape[1]);
}

/// rows x cols values around a shared mean direction of norm `offset` with N(0, noise^2)
/// per entry, rounded to `dtype`: the anisotropy of trained embeddings, which keeps most
/// cosines positive. Rows listed in `zero_rows` are all zero (unused padding rows).
inline matrix anisotropic_matrix(std::int64_t rows, std::int64_t cols, double offset, double noise,
                                 fixture_random& random, const std::string& dtype,
                                 const std::vector<std::int64_t>& zero_rows = {}) {
  std::vector<double> direction(static_cast<std::size_t>(cols));
  double norm = 0;
  for (double& x : direction) {
    x = random.normal();
    norm += x * x;
  }
  for (double& x : direction) x *= offset / std::sqrt(norm);
  matrix m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const double x = direction[std::size_t(c)] + noise * random.normal();
      m(r, c) = dtype == "BF16" ? round_to_bf16(x) : double(static_cast<float>(x));
    }
  for (std::int64_t r : zero_rows) std::fill(m.row(r), m.row(r) + cols, 0.0);
  return m;
}

/// One tensor to write: its header entry and its bytes.
struct fixture_tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

/// A tensor of `size_bytes` random bytes (whatever they mean as numbers: the program must copy
/// them without looking).
inline fixture_tensor random_tensor(std::string name, std::string dtype, std::vector<std::int64_t> shape,
                                    std::size_t element_size, fixture_random& random) {
  std::size_t count = 1;
  for (std::int64_t d : shape) count *= std::size_t(d);
  std::string bytes(count * element_size, '\0');
  for (char& b : bytes) b = static_cast<char>(random.next() & 0xff);
  return {std::move(name), std::move(dtype), std::move(shape), std::move(bytes)};
}

inline fixture_tensor matrix_tensor(std::string name, const matrix& m, const std::string& dtype) {
  return {std::move(name), dtype, {m.rows, m.cols}, encode(m, dtype)};
}

/// Writes a safetensors file holding `tensors` in this order.
inline void write_safetensors(const fs::path& file, const std::vector<fixture_tensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {{"format", "pt"}}) {
  std::vector<clp_transfer::io::tensor_spec> specs;
  for (const fixture_tensor& t : tensors)
    specs.push_back({t.name, *clp_transfer::io::parse_dtype(t.dtype), t.shape, t.bytes.size()});
  clp_transfer::io::safetensors_writer writer(file, specs, metadata);
  for (const fixture_tensor& t : tensors) writer.append(t.bytes.data(), t.bytes.size());
  writer.finish();
}

inline void write_json(const fs::path& file, const nlohmann::ordered_json& json) { write_file(file, json.dump(2)); }

/// A model folder as the fixture wrote it: what a test needs to predict the program's output.
struct model_fixture {
  fs::path folder;
  std::string dtype;                ///< of the embedding (and head)
  std::vector<std::string> tokens;  ///< the token of each id; the vocabulary is tokens.size()
  std::string embedding_name;
  matrix embedding;
  std::string head_name;  ///< empty when the head is tied to the embedding
  matrix head;
  nlohmann::ordered_json config;
  /// Weight files in the order the program should reproduce them.
  std::vector<std::string> weight_files;
};

struct model_pair {
  model_fixture source, helper;
};

/// A made-up word, distinct for every n < 4096: three syllables of a 16-syllable alphabet.
inline std::string made_up_word(int n) {
  static const char* const syllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "te", "vi",
                                          "zo", "pa", "de", "gu", "ho", "ji", "wu", "be"};
  return std::string(syllables[(n >> 8) & 15]) + syllables[(n >> 4) & 15] + syllables[n & 15];
}

/// `count` words numbered from `first`, every other one with the word-start marker `marker`.
inline std::vector<std::string> made_up_tokens(int first, int count, const std::string& marker) {
  std::vector<std::string> tokens;
  for (int i = 0; i < count; ++i) tokens.push_back((i % 2 ? "" : marker) + made_up_word(first + i));
  return tokens;
}

inline std::vector<std::string> concatenated(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- GPT-2-like pair ------------------------------------------------------------------------

/// The sizes of the GPT-2-like pair, for tests that check counts.
struct gpt2_sizes {
  static constexpr std::int64_t shared_words = 560;  // more than one 512-row panel of the overlap
  static constexpr std::int64_t source_only = 200;
  static constexpr std::int64_t helper_only = 400;
  static constexpr std::int64_t source_vocab = shared_words + source_only + 1;  // + <|endoftext|>
  static constexpr std::int64_t helper_vocab = shared_words + helper_only + 1;
  static constexpr std::int64_t helper_padding = 11;  // zero rows no token names
  static constexpr std::int64_t helper_rows = helper_vocab + helper_padding;
  static constexpr std::int64_t overlap = shared_words + 1;
  static constexpr std::int64_t source_width = 64, helper_width = 32;
};

/// A byte-level BPE tokenizer.json (GPT-2 style) for `tokens` (id = position), with
/// <|endoftext|> also listed as an added token.
inline nlohmann::ordered_json bpe_tokenizer_json(const std::vector<std::string>& tokens) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  const auto eot = std::find(tokens.begin(), tokens.end(), "<|endoftext|>") - tokens.begin();
  nlohmann::ordered_json json;
  json["version"] = "1.0";
  json["truncation"] = nullptr;
  json["padding"] = nullptr;
  json["added_tokens"] = {{{"id", eot},
                           {"content", "<|endoftext|>"},
                           {"single_word", false},
                           {"lstrip", false},
                           {"rstrip", false},
                           {"normalized", true},
                           {"special", true}}};
  json["normalizer"] = nullptr;
  json["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}};
  json["post_processor"] = nullptr;
  json["decoder"] = {{"type", "ByteLevel"}};
  json["model"] = {{"type", "BPE"},
                   {"dropout", nullptr},
                   {"unk_token", nullptr},
                   {"continuing_subword_prefix", ""},
                   {"end_of_word_suffix", ""},
                   {"fuse_unk", false},
                   {"vocab", vocab},
                   {"merges", nlohmann::ordered_json::array({"Ġ t", "h e"})}};
  return json;
}

inline void write_gpt2_tokenizer_files(const model_fixture& model) {
  write_json(model.folder / "tokenizer.json", bpe_tokenizer_json(model.tokens));
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < model.tokens.size(); ++id) vocab[model.tokens[id]] = id;
  write_json(model.folder / "vocab.json", vocab);
  write_file(model.folder / "merges.txt", "#version: 0.2\nĠ t\nh e\n" + model.tokens[3] + " x\n");
}

/// source/: English-ish GPT-2 (tied F32 embedding, 761 x 64); helper/: a smaller GPT-2
/// (972 x 32) whose vocabulary shares 561 tokens with the source, lacks 200 of its tokens and
/// adds 400 of its own; its last 11 rows are zero padding. Both under `root`.
/// With `misaligned_embedding`, a 3-byte U8 tensor comes first in the source file, so the F32
/// embedding's bytes start at an offset that is not a multiple of 4 (the format allows it).
/// `source_width` widens the source embedding (and so the output) from its usual 64; the other
/// tensors, copied unread, keep their shapes.
inline model_pair make_gpt2_pair(const fs::path& root, std::uint64_t seed = 1, bool misaligned_embedding = false,
                                 std::int64_t source_width = gpt2_sizes::source_width) {
  using sizes = gpt2_sizes;
  fixture_random random(seed);
  const std::vector<std::string> named_shared = {"Ġthe", "the", "Ġder", ".", ","};
  const std::vector<std::string> shared = concatenated(
      named_shared, made_up_tokens(0, int(sizes::shared_words - std::int64_t(named_shared.size())), "Ġ"));
  const std::vector<std::string> source_only =
      concatenated({"Ġwould", "Ġwhich"}, made_up_tokens(1000, int(sizes::source_only) - 2, "Ġ"));
  const std::vector<std::string> helper_only =
      concatenated({"Ġund", "Ġdie", "Ã¤", "ĠmÃ¼ssen"}, made_up_tokens(2000, int(sizes::helper_only) - 4, "Ġ"));

  model_pair pair;
  model_fixture& source = pair.source;
  source.folder = root / "source";
  source.dtype = "F32";
  source.tokens = concatenated(shared, source_only);
  random.shuffle(source.tokens);
  source.tokens.push_back("<|endoftext|>");  // GPT-2 keeps it last
  source.embedding_name = "transformer.wte.weight";
  source.embedding = anisotropic_matrix(sizes::source_vocab, source_width, 0.8, 0.15, random, "F32");
  source.config = {{"activation_function", "gelu_new"},
                   {"architectures", {"GPT2LMHeadModel"}},
                   {"bos_token_id", sizes::source_vocab - 1},
                   {"eos_token_id", sizes::source_vocab - 1},
                   {"model_type", "gpt2"},
                   {"n_embd", source_width},
                   {"n_head", 4},
                   {"n_layer", 1},
                   {"n_positions", 32},
                   {"pad_token_id", sizes::source_vocab - 1},
                   {"vocab_size", sizes::source_vocab}};
  source.weight_files = {"model.safetensors"};
  fs::create_directories(source.folder);
  write_json(source.folder / "config.json", source.config);
  write_gpt2_tokenizer_files(source);
  std::vector<fixture_tensor> source_tensors = {
      random_tensor("transformer.h.0.attn.c_attn.weight", "F32", {64, 192}, 4, random),
      matrix_tensor(source.embedding_name, source.embedding, "F32"),
      random_tensor("transformer.ln_f.bias", "F32", {64}, 4, random),
      random_tensor("transformer.wpe.weight", "F32", {32, 64}, 4, random)};
  if (misaligned_embedding)
    source_tensors.insert(source_tensors.begin(), random_tensor("transformer.odd_flags", "U8", {3}, 1, random));
  write_safetensors(source.folder / "model.safetensors", source_tensors);

  model_fixture& helper = pair.helper;
  helper.folder = root / "helper";
  helper.dtype = "F32";
  helper.tokens = concatenated(shared, helper_only);
  random.shuffle(helper.tokens);
  helper.tokens.insert(helper.tokens.begin(), "<|endoftext|>");
  helper.embedding_name = "transformer.wte.weight";
  std::vector<std::int64_t> padding;
  for (std::int64_t r = sizes::helper_vocab; r < sizes::helper_rows; ++r) padding.push_back(r);
  helper.embedding = anisotropic_matrix(sizes::helper_rows, sizes::helper_width, 1.0, 0.25, random, "F32", padding);
  helper.config = {{"model_type", "gpt2"},
                   {"n_embd", sizes::helper_width},
                   {"n_layer", 1},
                   {"vocab_size", sizes::helper_rows},
                   {"bos_token_id", 0},
                   {"eos_token_id", 0}};
  helper.weight_files = {"model.safetensors"};
  fs::create_directories(helper.folder);
  write_json(helper.folder / "config.json", helper.config);
  write_gpt2_tokenizer_files(helper);
  write_file(helper.folder / "README.md", "# helper\nnot a tokenizer file\n");
  write_safetensors(helper.folder / "model.safetensors",
                    {matrix_tensor(helper.embedding_name, helper.embedding, "F32"),
                     random_tensor("transformer.wpe.weight", "F32", {32, 32}, 4, random)});
  return pair;
}

// --- Llama-like pair -----------------------------------------------------------------------

struct llama_sizes {
  static constexpr std::int64_t specials = 3, bytes = 256;
  static constexpr std::int64_t shared_words = 300, source_only = 150, helper_only = 250;
  static constexpr std::int64_t source_vocab = specials + bytes + shared_words + source_only;
  static constexpr std::int64_t helper_vocab = specials + bytes + shared_words + helper_only;
  static constexpr std::int64_t helper_padding = 7;
  static constexpr std::int64_t helper_rows = helper_vocab + helper_padding;
  static constexpr std::int64_t overlap = specials + bytes + shared_words;
  static constexpr std::int64_t source_width = 48, helper_width = 24;
};

/// A Unigram (SentencePiece) tokenizer.json for `tokens`: vocab as [piece, score] pairs, the
/// first three tokens also listed as added special tokens.
inline nlohmann::ordered_json unigram_tokenizer_json(const std::vector<std::string>& tokens) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::array();
  for (std::size_t id = 0; id < tokens.size(); ++id)
    vocab.push_back({tokens[id], id < 3 ? 0.0 : -0.01 * double(id)});
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (std::size_t id = 0; id < 3; ++id)
    added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  nlohmann::ordered_json json;
  json["version"] = "1.0";
  json["truncation"] = nullptr;
  json["padding"] = nullptr;
  json["added_tokens"] = added;
  json["normalizer"] = {{"type", "Sequence"},
                        {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  json["pre_tokenizer"] = nullptr;
  const auto unk = std::find(tokens.begin(), tokens.end(), "<unk>") - tokens.begin();
  json["model"] = {{"type", "Unigram"}, {"unk_id", unk}, {"vocab", vocab}, {"byte_fallback", true}};
  return json;
}

inline std::vector<std::string> byte_tokens() {
  std::vector<std::string> tokens;
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
  }
  return tokens;
}

/// source/: a Llama (BF16, untied lm_head, 709 x 48, three shards with
/// model.safetensors.index.json); helper/: a smaller Llama (816 x 24, one file) whose
/// SentencePiece vocabulary shares the special and byte tokens and 300 pieces with the source;
/// its special tokens sit at other ids, and its last 7 rows are zero padding.
inline model_pair make_llama_pair(const fs::path& root, std::uint64_t seed = 2) {
  using sizes = llama_sizes;
  fixture_random random(seed);
  const std::vector<std::string> named_shared = {"▁the", "▁der", "s", "▁Haus", "en"};
  const std::vector<std::string> shared = concatenated(
      named_shared, made_up_tokens(3000, int(sizes::shared_words - std::int64_t(named_shared.size())), "▁"));
  const std::vector<std::string> source_only = made_up_tokens(3500, int(sizes::source_only), "▁");
  const std::vector<std::string> helper_only =
      concatenated({"▁und", "▁müssen", "ä"}, made_up_tokens(3900, int(sizes::helper_only) - 3, "▁"));

  model_pair pair;
  model_fixture& source = pair.source;
  source.folder = root / "source";
  source.dtype = "BF16";
  std::vector<std::string> pieces = concatenated(shared, source_only);
  random.shuffle(pieces);
  source.tokens = concatenated(concatenated({"<unk>", "<s>", "</s>"}, byte_tokens()), pieces);
  source.embedding_name = "model.embed_tokens.weight";
  source.head_name = "lm_head.weight";
  source.embedding = anisotropic_matrix(sizes::source_vocab, sizes::source_width, 0.5, 0.1, random, "BF16");
  source.head = anisotropic_matrix(sizes::source_vocab, sizes::source_width, 1.5, 0.3, random, "BF16");
  source.config = {{"architectures", {"LlamaForCausalLM"}},
                   {"bos_token_id", 1},
                   {"eos_token_id", 2},
                   {"hidden_act", "silu"},
                   {"hidden_size", sizes::source_width},
                   {"intermediate_size", 96},
                   {"model_type", "llama"},
                   {"num_attention_heads", 4},
                   {"num_hidden_layers", 1},
                   {"pad_token_id", 0},
                   {"tie_word_embeddings", false},
                   {"torch_dtype", "bfloat16"},
                   {"vocab_size", sizes::source_vocab}};
  source.weight_files = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                         "model-00003-of-00003.safetensors"};
  fs::create_directories(source.folder);
  write_json(source.folder / "config.json", source.config);
  write_json(source.folder / "tokenizer.json", unigram_tokenizer_json(source.tokens));
  write_json(source.folder / "tokenizer_config.json", {{"tokenizer_class", "LlamaTokenizer"}, {"model_max_length", 64}});
  // The SentencePiece model the tokenizer.json was converted from: the program checks the two agree.
  write_file(source.folder / "tokenizer.model",
             clp_test::sentencepiece_model_bytes(clp_test::llama_style_entries(source.tokens)));
  const std::vector<std::vector<fixture_tensor>> shards = {
      {matrix_tensor(source.embedding_name, source.embedding, "BF16"),
       random_tensor("model.layers.0.self_attn.q_proj.weight", "BF16", {48, 48}, 2, random)},
      {random_tensor("model.layers.0.mlp.up_proj.weight", "BF16", {96, 48}, 2, random),
       random_tensor("model.layers.0.input_layernorm.weight", "BF16", {48}, 2, random)},
      {random_tensor("model.norm.weight", "BF16", {48}, 2, random),
       matrix_tensor(source.head_name, source.head, "BF16")}};
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  std::map<std::string, std::string> sorted_map;  // transformers writes the weight_map sorted by name
  std::size_t total_size = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    write_safetensors(source.folder / source.weight_files[s], shards[s]);
    for (const fixture_tensor& t : shards[s]) {
      sorted_map[t.name] = source.weight_files[s];
      total_size += t.bytes.size();
    }
  }
  for (const auto& [name, file] : sorted_map) weight_map[name] = file;
  write_json(source.folder / "model.safetensors.index.json",
             {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}});

  model_fixture& helper = pair.helper;
  helper.folder = root / "helper";
  helper.dtype = "BF16";
  pieces = concatenated(shared, helper_only);
  random.shuffle(pieces);
  helper.tokens = concatenated(concatenated({"<s>", "</s>", "<unk>"}, byte_tokens()), pieces);
  helper.embedding_name = "model.embed_tokens.weight";
  std::vector<std::int64_t> padding;
  for (std::int64_t r = sizes::helper_vocab; r < sizes::helper_rows; ++r) padding.push_back(r);
  helper.embedding =
      anisotropic_matrix(sizes::helper_rows, sizes::helper_width, 1.0, 0.25, random, "BF16", padding);
  helper.config = {{"model_type", "llama"},
                   {"hidden_size", sizes::helper_width},
                   {"vocab_size", sizes::helper_rows},
                   {"bos_token_id", 0},
                   {"eos_token_id", 1},
                   {"pad_token_id", 2},
                   {"unk_token_id", 2}};
  helper.weight_files = {"model.safetensors"};
  fs::create_directories(helper.folder);
  write_json(helper.folder / "config.json", helper.config);
  write_json(helper.folder / "tokenizer.json", unigram_tokenizer_json(helper.tokens));
  write_json(helper.folder / "tokenizer_config.json",
             {{"tokenizer_class", "LlamaTokenizer"}, {"bos_token", "<s>"}, {"eos_token", "</s>"}});
  write_json(helper.folder / "special_tokens_map.json",
             {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}});
  write_file(helper.folder / "tokenizer.model",
             clp_test::sentencepiece_model_bytes(clp_test::llama_style_entries(helper.tokens)));
  write_safetensors(helper.folder / "model.safetensors",
                    {matrix_tensor(helper.embedding_name, helper.embedding, "BF16"),
                     random_tensor("lm_head.weight", "BF16", {sizes::helper_rows, sizes::helper_width}, 2, random),
                     random_tensor("model.norm.weight", "BF16", {sizes::helper_width}, 2, random)});
  return pair;
}

// --- a work directory per test --------------------------------------------------------------

/// A temp dir holding a model pair and an empty folder `out/` to receive `out/model`, so a test
/// can check that a refused run left nothing at all beside the output path.
struct workspace {
  temp_dir dir;
  model_pair pair;
  fs::path out_parent, output;

  template <class Maker>
  explicit workspace(Maker make) : pair(make(dir.path)), out_parent(dir / "out"), output(out_parent / "model") {
    fs::create_directories(out_parent);
  }

  /// `transfer --source S --helper H --output O` followed by `extra`; O is `output` unless
  /// `other_output` is given.
  std::vector<std::string> transfer(const std::vector<std::string>& extra = {}, const fs::path& other_output = {}) const {
    std::vector<std::string> args = {"transfer", "--source", pair.source.folder.string(), "--helper",
                                     pair.helper.folder.string(), "--output",
                                     (other_output.empty() ? output : other_output).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

inline workspace gpt2_workspace(bool misaligned_embedding = false,
                                std::int64_t source_width = gpt2_sizes::source_width) {
  return workspace(
      [=](const fs::path& root) { return make_gpt2_pair(root, 1, misaligned_embedding, source_width); });
}
inline workspace llama_workspace() { return workspace([](const fs::path& root) { return make_llama_pair(root); }); }

}  // namespace program_test
