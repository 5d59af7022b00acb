// Small model folders in the layouts of real architectures, for the end-to-end layout tests:
// GPT-2 (tied), Llama (untied lm_head, two shards), GPT-NeoX (padded F16 embed_in, F32 embed_out),
// BLOOM (word_embeddings beside word_embeddings_layernorm), BERT masked-LM (cls.predictions.bias,
// tied decoder), T5 (shared + encoder/decoder copies + untied lm_head), BART (shared + copies +
// final_logits_bias [1, vocab]) and Gemma-3 (multimodal, settings under text_config, image token
// ids). Each comes with a helper model sharing part of its vocabulary, and records every
// vocabulary-sized tensor with the values it holds and what the output must hold for it, so that
// a test can check each against the oracle (clp_oracle.hpp) independently of the program.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "model_fixtures.hpp"

namespace program_test {

// --- float16, written out here (the program's conversion is Eigen's) -------------------------

/// The spacing of float16 values at |x| (11 significant bits; subnormals from 2^-14).
inline double f16_ulp(double x) {
  if (x == 0) return std::ldexp(1.0, -24);
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 11, -24));
}

/// The float16 nearest to `x` (ties to even), as a double; |x| must stay below 65504.
inline double round_to_f16(double x) {
  const double ulp = f16_ulp(x);
  return std::nearbyint(x / ulp) * ulp;
}

/// The 16 bits of a value float16 represents exactly.
inline std::uint16_t f16_bits(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  x = std::abs(x);
  if (x == 0) return sign;
  int exponent = 0;
  const double mantissa = std::frexp(x, &exponent);  // x = mantissa * 2^exponent
  if (exponent - 1 >= -14)
    return std::uint16_t(sign | (std::uint16_t(exponent - 1 + 15) << 10) |
                         std::uint16_t(std::lround((mantissa * 2 - 1) * 1024)));
  return std::uint16_t(sign | std::uint16_t(std::lround(x / std::ldexp(1.0, -24))));
}

inline double from_f16_bits(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 31, mantissa = bits & 1023;
  const double magnitude =
      exponent == 0 ? std::ldexp(double(mantissa), -24) : std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
  return bits & 0x8000 ? -magnitude : magnitude;
}

/// `x` rounded to `dtype` ("F32", "BF16" or "F16").
inline double round_to(double x, const std::string& dtype) {
  if (dtype == "BF16") return round_to_bf16(x);
  if (dtype == "F16") return round_to_f16(x);
  return double(static_cast<float>(x));
}

/// The bytes of `m` as safetensors stores it in `dtype` (F32, BF16 or F16).
inline std::string encode_values(const matrix& m, const std::string& dtype) {
  if (dtype != "F16") return encode(m, dtype);
  std::string bytes(m.values.size() * 2, '\0');
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    const std::uint16_t bits = f16_bits(m.values[i]);
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  return bytes;
}

/// The rows x cols values held by `bytes` of dtype F32, BF16 or F16.
inline matrix decode_values(const std::string& bytes, const std::string& dtype, std::int64_t rows, std::int64_t cols) {
  if (dtype != "F16") return decode(bytes, dtype, rows, cols);
  matrix m(rows, cols);
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    m.values[i] = from_f16_bits(bits);
  }
  return m;
}

// --- the layouts -----------------------------------------------------------------------------

/// What the output must hold for one vocabulary-sized tensor of the source.
enum class expected_tensor {
  embedding,    ///< the oracle's rows for the embedding
  transferred,  ///< the oracle's rows for its own values (same weights as the embedding)
  tied_copy,    ///< exactly the output embedding's bytes
  unchanged,    ///< the source's bytes (and a warning naming it)
};

/// A vocabulary-sized tensor of a layout fixture's source.
struct layout_tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;  ///< as stored in the source
  std::size_t axis = 0;             ///< the dimension that counts tokens
  matrix values;                    ///< #source rows by values per token, exactly as stored
  expected_tensor expect = expected_tensor::unchanged;
  std::string file;  ///< weight file holding it
};

/// A source/helper pair in one architecture's layout.
struct layout_fixture {
  std::string architecture;  ///< "gpt2", "llama", "gpt_neox", "bloom", "bert", "t5", "bart", "gemma3"
  /// source.embedding (and source.head when untied) as model_fixtures' pairs hold them, so that
  /// clp_oracle and output_checks apply; helper as usual.
  model_pair pair;
  std::vector<layout_tensor> vocabulary;       ///< every vocabulary-sized source tensor, embedding included
  std::map<std::string, std::string> file_of;  ///< every source tensor -> its weight file

  const layout_tensor& tensor(const std::string& name) const {
    for (const layout_tensor& t : vocabulary)
      if (t.name == name) return t;
    throw std::logic_error("layout fixture: no vocabulary tensor " + name);
  }
};

/// `pair` with `values` as the source embedding and no head: clp_oracle on it predicts the
/// transfer of `values` with the weights of the real embedding (the weights depend on the helper
/// and the overlap only).
inline model_pair with_source_rows(const model_pair& pair, const matrix& values) {
  model_pair copy = pair;
  copy.source.embedding = values;
  copy.source.head_name.clear();
  copy.source.head = matrix();
  return copy;
}

namespace layout_detail {

struct sizes {
  static constexpr int shared_words = 150, source_only = 70, helper_only = 90;
  static constexpr std::int64_t source_width = 32, helper_width = 16, helper_padding = 5;
};

/// A tokenizer.json of a vocabulary object (BPE or WordPiece) for `tokens` (id = position), the
/// tokens in `specials` listed as added special tokens.
inline nlohmann::ordered_json vocab_tokenizer_json(const std::vector<std::string>& tokens, const std::string& type,
                                                   const std::vector<std::string>& specials) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (const std::string& special : specials) {
    const auto id = std::find(tokens.begin(), tokens.end(), special) - tokens.begin();
    added.push_back({{"id", id},
                     {"content", special},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  nlohmann::ordered_json json;
  json["version"] = "1.0";
  json["added_tokens"] = added;
  if (type == "WordPiece")
    json["model"] = {{"type", "WordPiece"},
                     {"unk_token", "[UNK]"},
                     {"continuing_subword_prefix", "##"},
                     {"max_input_chars_per_word", 100},
                     {"vocab", vocab}};
  else
    json["model"] = {{"type", "BPE"},
                     {"dropout", nullptr},
                     {"unk_token", nullptr},
                     {"vocab", vocab},
                     {"merges", nlohmann::ordered_json::array()}};
  return json;
}

/// Builds one layout: the token lists, the tensors file by file (each file sorted by name when
/// written), then writes both folders.
class builder {
 public:
  builder(const fs::path& root, std::string architecture, std::uint64_t seed) : random_(seed) {
    fixture_.architecture = std::move(architecture);
    fixture_.pair.source.folder = root / "source";
    fixture_.pair.helper.folder = root / "helper";
  }

  fixture_random& random() { return random_; }
  model_fixture& source() { return fixture_.pair.source; }
  model_fixture& helper() { return fixture_.pair.helper; }

  /// Source tokens: `specials` first, then shared and source-only words shuffled, then `tail`;
  /// helper tokens: `helper_specials`, shared and helper-only words shuffled, then `helper_tail`.
  void tokens(const std::vector<std::string>& specials, const std::vector<std::string>& helper_specials,
              const std::string& marker, const std::vector<std::string>& tail = {},
              const std::vector<std::string>& helper_tail = {}) {
    const auto shared = made_up_tokens(0, sizes::shared_words, marker);
    auto words = concatenated(shared, made_up_tokens(1000, sizes::source_only, marker));
    random_.shuffle(words);
    source().tokens = concatenated(concatenated(specials, words), tail);
    words = concatenated(shared, made_up_tokens(2000, sizes::helper_only, marker));
    random_.shuffle(words);
    helper().tokens = concatenated(concatenated(helper_specials, words), helper_tail);
  }

  /// The source's rows: its tokens plus `padding` rows no token names.
  std::int64_t source_rows(std::int64_t padding = 0) const {
    return std::int64_t(fixture_.pair.source.tokens.size()) + padding;
  }

  /// A vocabulary-sized tensor: rows x cols values around an offset (so that no value is near
  /// zero, where relative checks mean nothing), rounded to `dtype`, stored with `shape`.
  const matrix& vocabulary_tensor(const std::string& file, const std::string& name, const std::string& dtype,
                                  std::vector<std::int64_t> shape, std::size_t axis, expected_tensor expect,
                                  double offset = 0.8, double noise = 0.2) {
    const std::int64_t rows = shape[axis];
    std::int64_t cols = 1;
    for (std::size_t i = axis + 1; i < shape.size(); ++i) cols *= shape[i];
    matrix values = anisotropic_matrix(rows, cols, offset, noise, random_, "F32");
    for (double& x : values.values) x = round_to(x, dtype);
    add(file, {name, dtype, shape, encode_values(values, dtype)});
    fixture_.vocabulary.push_back({name, dtype, std::move(shape), axis, std::move(values), expect, file});
    return fixture_.vocabulary.back().values;
  }

  /// The embedding: recorded as the pair's source embedding too.
  void embedding(const std::string& file, const std::string& name, const std::string& dtype, std::int64_t rows) {
    source().embedding_name = name;
    source().dtype = dtype;
    source().embedding =
        vocabulary_tensor(file, name, dtype, {rows, sizes::source_width}, 0, expected_tensor::embedding, 0.8, 0.15);
  }

  /// The untied head: recorded as the pair's source head too.
  void head(const std::string& file, const std::string& name, const std::string& dtype) {
    source().head_name = name;
    source().head = vocabulary_tensor(file, name, dtype, {source().embedding.rows, sizes::source_width}, 0,
                                      expected_tensor::transferred, 1.5, 0.3);
  }

  /// A tensor holding exactly the embedding's bytes (call embedding() first).
  void tied_copy(const std::string& file, const std::string& name) {
    const model_fixture& s = source();
    if (s.embedding_name.empty()) throw std::logic_error("layout fixture: tied copy " + name + " before the embedding");
    add(file, {name, s.dtype, {s.embedding.rows, s.embedding.cols}, encode_values(s.embedding, s.dtype)});
    fixture_.vocabulary.push_back(
        {name, s.dtype, {s.embedding.rows, s.embedding.cols}, 0, s.embedding, expected_tensor::tied_copy, file});
  }

  /// Any other tensor (random bytes; the program must copy them as they are).
  void other(const std::string& file, const std::string& name, const std::string& dtype,
             std::vector<std::int64_t> shape) {
    add(file, random_tensor(name, dtype, std::move(shape), dtype == "F32" ? 4 : 2, random_));
  }

  /// Writes the source (config, tokenizer files, weights; an index when there are several
  /// files) and a flat helper: a tied embedding of the helper's tokens plus zero padding rows.
  layout_fixture finish(const nlohmann::ordered_json& source_config, const nlohmann::ordered_json& source_tokenizer,
                        const nlohmann::ordered_json& helper_config, const nlohmann::ordered_json& helper_tokenizer) {
    model_fixture& s = source();
    s.config = source_config;
    fs::create_directories(s.folder);
    write_json(s.folder / "config.json", s.config);
    write_json(s.folder / "tokenizer.json", source_tokenizer);
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    std::map<std::string, std::string> sorted_map;
    std::size_t total = 0;
    for (const std::string& file : s.weight_files) {
      // transformers' files list their tensors by name; the calls above need not.
      std::sort(files_[file].begin(), files_[file].end(),
                [](const fixture_tensor& a, const fixture_tensor& c) { return a.name < c.name; });
      write_safetensors(s.folder / file, files_[file]);
      for (const fixture_tensor& t : files_[file]) {
        sorted_map[t.name] = file;
        total += t.bytes.size();
      }
    }
    fixture_.file_of = sorted_map;
    if (s.weight_files.size() > 1) {
      for (const auto& [name, file] : sorted_map) weight_map[name] = file;
      write_json(s.folder / "model.safetensors.index.json",
                 {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
    }

    model_fixture& h = helper();
    h.folder = fixture_.pair.helper.folder;
    h.dtype = "F32";
    h.embedding_name = "model.embed_tokens.weight";
    const std::int64_t rows = std::int64_t(h.tokens.size()) + sizes::helper_padding;
    std::vector<std::int64_t> padding;
    for (std::int64_t r = std::int64_t(h.tokens.size()); r < rows; ++r) padding.push_back(r);
    h.embedding = anisotropic_matrix(rows, sizes::helper_width, 1.0, 0.25, random_, "F32", padding);
    h.config = helper_config;
    h.config["vocab_size"] = rows;
    h.weight_files = {"model.safetensors"};
    fs::create_directories(h.folder);
    write_json(h.folder / "config.json", h.config);
    write_json(h.folder / "tokenizer.json", helper_tokenizer);
    write_safetensors(h.folder / "model.safetensors",
                      {matrix_tensor(h.embedding_name, h.embedding, "F32"),
                       random_tensor("model.norm.weight", "F32", {sizes::helper_width}, 4, random_)});
    return std::move(fixture_);
  }

 private:
  void add(const std::string& file, fixture_tensor tensor) {
    model_fixture& s = source();
    if (std::find(s.weight_files.begin(), s.weight_files.end(), file) == s.weight_files.end())
      s.weight_files.push_back(file);
    files_[file].push_back(std::move(tensor));
  }

  fixture_random random_;
  layout_fixture fixture_;
  std::map<std::string, std::vector<fixture_tensor>> files_;
};

inline const std::string single = "model.safetensors";

inline nlohmann::ordered_json helper_config(const std::string& model_type, const nlohmann::ordered_json& ids) {
  nlohmann::ordered_json config = {{"model_type", model_type}, {"hidden_size", sizes::helper_width}};
  for (const auto& item : ids.items()) config[item.key()] = item.value();
  return config;
}

inline std::int64_t id_of(const std::vector<std::string>& tokens, const std::string& token) {
  const auto at = std::find(tokens.begin(), tokens.end(), token);
  if (at == tokens.end()) throw std::logic_error("layout fixture: no token " + token);
  return std::int64_t(at - tokens.begin());
}

}  // namespace layout_detail

/// GPT-2: transformer.wte.weight (F32) tied to the head; <|endoftext|> last.
inline layout_fixture make_gpt2_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "gpt2", 11);
  b.tokens({}, {"<|endoftext|>"}, "Ġ", {"<|endoftext|>"});
  b.other(single, "transformer.h.0.attn.c_attn.weight", "F32", {32, 96});
  b.embedding(single, "transformer.wte.weight", "F32", b.source_rows());
  b.other(single, "transformer.ln_f.weight", "F32", {32});
  b.other(single, "transformer.wpe.weight", "F32", {40, 32});
  const std::int64_t eot = b.source_rows() - 1;
  return b.finish({{"architectures", {"GPT2LMHeadModel"}},
                   {"bos_token_id", eot},
                   {"eos_token_id", eot},
                   {"model_type", "gpt2"},
                   {"n_embd", sizes::source_width},
                   {"n_head", 4},
                   {"n_layer", 1},
                   {"n_positions", 40},
                   {"vocab_size", b.source_rows()}},
                  vocab_tokenizer_json(b.source().tokens, "BPE", {"<|endoftext|>"}),
                  {{"model_type", "gpt2"}, {"n_embd", sizes::helper_width}, {"bos_token_id", 0}, {"eos_token_id", 0}},
                  vocab_tokenizer_json(b.helper().tokens, "BPE", {"<|endoftext|>"}));
}

/// Llama: model.embed_tokens.weight and an untied lm_head.weight (BF16) in two shards.
inline layout_fixture make_llama_layout(const fs::path& root, bool with_unknown_tensor = false) {
  using namespace layout_detail;
  builder b(root, "llama", 12);
  b.tokens({"<unk>", "<s>", "</s>"}, {"<s>", "</s>", "<unk>"}, "▁");
  const std::string first = "model-00001-of-00002.safetensors", second = "model-00002-of-00002.safetensors";
  b.embedding(first, "model.embed_tokens.weight", "BF16", b.source_rows());
  b.other(first, "model.layers.0.self_attn.q_proj.weight", "BF16", {32, 32});
  if (with_unknown_tensor)  // a vocabulary-sized tensor of no known role: warned about, or --transfer-tensor
    b.vocabulary_tensor(first, "model.vocab_adapter.weight", "BF16", {b.source_rows(), 8}, 0,
                        expected_tensor::unchanged);
  b.other(second, "model.norm.weight", "BF16", {32});
  b.head(second, "lm_head.weight", "BF16");
  return b.finish({{"architectures", {"LlamaForCausalLM"}},
                   {"bos_token_id", 1},
                   {"eos_token_id", 2},
                   {"hidden_size", sizes::source_width},
                   {"model_type", "llama"},
                   {"num_attention_heads", 4},
                   {"num_hidden_layers", 1},
                   {"tie_word_embeddings", false},
                   {"torch_dtype", "bfloat16"},
                   {"vocab_size", b.source_rows()}},
                  unigram_tokenizer_json(b.source().tokens),
                  helper_config("llama", {{"bos_token_id", 0}, {"eos_token_id", 1}, {"unk_token_id", 2}}),
                  unigram_tokenizer_json(b.helper().tokens));
}

/// GPT-NeoX (Pythia): gpt_neox.embed_in.weight in F16, padded by 13 rows no token names (and
/// config vocab_size = the padded rows, as Pythia's); embed_out.weight untied in F32 (mixed dtypes).
inline layout_fixture make_gpt_neox_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "gpt_neox", 13);
  b.tokens({"<|endoftext|>", "<|padding|>"}, {"<|endoftext|>", "<|padding|>"}, "Ġ");
  const std::int64_t rows = b.source_rows(13);
  b.embedding(single, "gpt_neox.embed_in.weight", "F16", rows);
  b.other(single, "gpt_neox.layers.0.attention.query_key_value.weight", "F16", {96, 32});
  b.other(single, "gpt_neox.final_layer_norm.weight", "F16", {32});
  b.head(single, "embed_out.weight", "F32");
  return b.finish({{"architectures", {"GPTNeoXForCausalLM"}},
                   {"bos_token_id", 0},
                   {"eos_token_id", 0},
                   {"hidden_size", sizes::source_width},
                   {"model_type", "gpt_neox"},
                   {"num_attention_heads", 4},
                   {"num_hidden_layers", 1},
                   {"tie_word_embeddings", false},
                   {"torch_dtype", "float16"},
                   {"vocab_size", rows}},
                  vocab_tokenizer_json(b.source().tokens, "BPE", {"<|endoftext|>", "<|padding|>"}),
                  helper_config("gpt_neox", {{"bos_token_id", 0}, {"eos_token_id", 0}}),
                  vocab_tokenizer_json(b.helper().tokens, "BPE", {"<|endoftext|>", "<|padding|>"}));
}

/// BLOOM (names without "transformer.", as bloom-560m stores them): word_embeddings.weight (BF16,
/// tied) beside word_embeddings_layernorm.weight/bias, which are hidden-sized.
inline layout_fixture make_bloom_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "bloom", 14);
  b.tokens({"<unk>", "<s>", "</s>", "<pad>"}, {"<unk>", "<s>", "</s>", "<pad>"}, "Ġ");
  b.other(single, "h.0.self_attention.query_key_value.weight", "BF16", {96, 32});
  b.other(single, "ln_f.weight", "BF16", {32});
  b.embedding(single, "word_embeddings.weight", "BF16", b.source_rows());
  b.other(single, "word_embeddings_layernorm.bias", "BF16", {32});
  b.other(single, "word_embeddings_layernorm.weight", "BF16", {32});
  const std::vector<std::string> specials = {"<unk>", "<s>", "</s>", "<pad>"};
  return b.finish(
      {{"architectures", {"BloomForCausalLM"}},
       {"bos_token_id", 1},
       {"eos_token_id", 2},
       {"hidden_size", sizes::source_width},
       {"model_type", "bloom"},
       {"n_head", 4},
       {"n_layer", 1},
       {"pad_token_id", 3},
       {"unk_token_id", 0},
       {"vocab_size", b.source_rows()}},
      vocab_tokenizer_json(b.source().tokens, "BPE", specials),
      helper_config("bloom", {{"bos_token_id", 1}, {"eos_token_id", 2}, {"pad_token_id", 3}, {"unk_token_id", 0}}),
      vocab_tokenizer_json(b.helper().tokens, "BPE", specials));
}

/// BERT masked-LM: bert.embeddings.word_embeddings.weight (F32), cls.predictions.bias (one value
/// per token), cls.predictions.decoder.weight tied (equal bytes); WordPiece.
inline layout_fixture make_bert_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "bert", 15);
  const std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  b.tokens(specials, specials, "##");
  b.other(single, "bert.embeddings.LayerNorm.bias", "F32", {32});
  b.other(single, "bert.embeddings.LayerNorm.weight", "F32", {32});
  b.other(single, "bert.embeddings.position_embeddings.weight", "F32", {40, 32});
  b.other(single, "bert.embeddings.token_type_embeddings.weight", "F32", {2, 32});
  b.embedding(single, "bert.embeddings.word_embeddings.weight", "F32", b.source_rows());
  b.vocabulary_tensor(single, "cls.predictions.bias", "F32", {b.source_rows()}, 0, expected_tensor::transferred, -1.0,
                      0.3);
  b.tied_copy(single, "cls.predictions.decoder.weight");
  b.other(single, "cls.predictions.transform.dense.weight", "F32", {32, 32});
  return b.finish({{"architectures", {"BertForMaskedLM"}},
                   {"hidden_size", sizes::source_width},
                   {"model_type", "bert"},
                   {"num_attention_heads", 4},
                   {"num_hidden_layers", 1},
                   {"pad_token_id", 0},
                   {"type_vocab_size", 2},
                   {"vocab_size", b.source_rows()}},
                  vocab_tokenizer_json(b.source().tokens, "WordPiece", specials),
                  helper_config("bert", {{"pad_token_id", 0}}),
                  vocab_tokenizer_json(b.helper().tokens, "WordPiece", specials));
}

/// T5 (v1.1: untied head): shared.weight, its copies encoder.embed_tokens.weight and
/// decoder.embed_tokens.weight (equal bytes), lm_head.weight; SentencePiece.
inline layout_fixture make_t5_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "t5", 16);
  b.tokens({"<pad>", "</s>", "<unk>"}, {"<pad>", "</s>", "<unk>"}, "▁");
  b.other(single, "decoder.block.0.layer.0.SelfAttention.q.weight", "F32", {32, 32});
  b.embedding(single, "shared.weight", "F32", b.source_rows());
  b.tied_copy(single, "decoder.embed_tokens.weight");
  b.other(single, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "F32", {32, 4});
  b.tied_copy(single, "encoder.embed_tokens.weight");
  b.other(single, "encoder.final_layer_norm.weight", "F32", {32});
  b.head(single, "lm_head.weight", "F32");
  return b.finish({{"architectures", {"T5ForConditionalGeneration"}},
                   {"d_model", sizes::source_width},
                   {"decoder_start_token_id", 0},
                   {"eos_token_id", 1},
                   {"model_type", "t5"},
                   {"num_heads", 4},
                   {"num_layers", 1},
                   {"pad_token_id", 0},
                   {"tie_word_embeddings", false},
                   {"vocab_size", b.source_rows()}},
                  unigram_tokenizer_json(b.source().tokens),
                  helper_config("t5", {{"decoder_start_token_id", 0}, {"eos_token_id", 1}, {"pad_token_id", 0}}),
                  unigram_tokenizer_json(b.helper().tokens));
}

/// BART: model.shared.weight, its copies model.encoder/decoder.embed_tokens.weight (equal bytes),
/// final_logits_bias [1, vocab] (non-zero here, as after fine-tuning); forced_bos/forced_eos ids.
inline layout_fixture make_bart_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "bart", 17);
  b.tokens({"<s>", "<pad>", "</s>", "<unk>"}, {"<pad>", "<s>", "</s>", "<unk>"}, "Ġ", {"<mask>"}, {"<mask>"});
  b.embedding(single, "model.shared.weight", "F32", b.source_rows());
  b.vocabulary_tensor(single, "final_logits_bias", "F32", {1, b.source_rows()}, 1, expected_tensor::transferred, 1.0,
                      0.2);
  b.tied_copy(single, "model.decoder.embed_tokens.weight");
  b.other(single, "model.encoder.embed_positions.weight", "F32", {42, 32});
  b.tied_copy(single, "model.encoder.embed_tokens.weight");
  const std::vector<std::string> specials = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  return b.finish(
      {{"architectures", {"BartForConditionalGeneration"}},
       {"bos_token_id", 0},
       {"d_model", sizes::source_width},
       {"decoder_start_token_id", 2},
       {"eos_token_id", 2},
       {"forced_bos_token_id", 0},
       {"forced_eos_token_id", 2},
       {"model_type", "bart"},
       {"pad_token_id", 1},
       {"vocab_size", b.source_rows()}},
      vocab_tokenizer_json(b.source().tokens, "BPE", specials),
      helper_config("bart",
                    {{"bos_token_id", 1}, {"eos_token_id", 2}, {"pad_token_id", 0}, {"decoder_start_token_id", 2}}),
      vocab_tokenizer_json(b.helper().tokens, "BPE", specials));
}

/// Gemma-3 (multimodal): language_model.model.embed_tokens.weight (BF16, tied), a vision tower
/// and projector; config.json with hidden_size under text_config (no vocab_size there, as in the
/// published file), eos_token_id [1, 106] at the top, and boi/eoi/image token ids whose tokens
/// sit at the end of the vocabulary. The helper has <start_of_image> and <end_of_image> (at other
/// ids) but no <image_soft_token>.
inline layout_fixture make_gemma3_layout(const fs::path& root) {
  using namespace layout_detail;
  builder b(root, "gemma3", 18);
  b.tokens({"<pad>", "<eos>", "<bos>"}, {"<pad>", "<eos>", "<bos>"}, "▁",
           {"<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"},
           {"<start_of_image>", "<end_of_image>", "<end_of_turn>"});
  b.embedding(single, "language_model.model.embed_tokens.weight", "BF16", b.source_rows());
  b.other(single, "language_model.model.layers.0.self_attn.q_proj.weight", "BF16", {32, 32});
  b.other(single, "language_model.model.norm.weight", "BF16", {32});
  b.other(single, "multi_modal_projector.mm_input_projection_weight", "BF16", {24, 32});
  b.other(single, "vision_tower.vision_model.embeddings.patch_embedding.weight", "BF16", {24, 3, 2, 2});
  const auto& tokens = b.source().tokens;
  nlohmann::ordered_json config = {
      {"architectures", {"Gemma3ForConditionalGeneration"}},
      {"boi_token_index", id_of(tokens, "<start_of_image>")},
      {"eoi_token_index", id_of(tokens, "<end_of_image>")},
      {"eos_token_id", {1, id_of(tokens, "<end_of_turn>")}},
      {"image_token_index", id_of(tokens, "<image_soft_token>")},
      {"mm_tokens_per_image", 4},
      {"model_type", "gemma3"},
      {"text_config", {{"hidden_size", sizes::source_width}, {"model_type", "gemma3_text"}, {"num_hidden_layers", 1}}},
      {"torch_dtype", "bfloat16"},
      {"vision_config", {{"hidden_size", 24}, {"model_type", "siglip_vision_model"}, {"patch_size", 2}}}};
  return b.finish(config, unigram_tokenizer_json(b.source().tokens),
                  helper_config("gemma3_text", {{"bos_token_id", 2}, {"eos_token_id", 1}, {"pad_token_id", 0}}),
                  unigram_tokenizer_json(b.helper().tokens));
}

}  // namespace program_test
