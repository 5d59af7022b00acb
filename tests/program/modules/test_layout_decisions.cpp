// The layout decisions of clp-transfer without running it: which tensors of a checkpoint follow
// the new vocabulary (vocabulary_tensors.hpp) and where config.json is read and rewritten
// (io/language_model_config.hpp), over the tensor names, shapes and config keys of real
// architectures (sizes as published; no tensor data is involved).
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/language_model_config.hpp"
#include "io/support/file_refusals.hpp"
#include "support/refusals.hpp"
#include "vocabulary_tensors.hpp"

using namespace clp_transfer;
using json = nlohmann::ordered_json;

namespace {

/// A checkpoint's byte equalities: the tensors listed are equal to the embedding.
struct equal_set {
  explicit equal_set(std::set<std::string> names = {}) : equal(std::move(names)) {}
  std::set<std::string> equal;
  mutable std::vector<std::string> asked;
  equal_to_embedding callback() const {
    return [this](const std::string& name) {
      asked.push_back(name);
      return equal.count(name) > 0;
    };
  }
};

std::string role_of(const vocabulary_plan& plan, const std::string& name) {
  const vocabulary_tensor* t = plan.find(name);
  return t ? vocabulary_role_name(t->role) : "none";
}

std::vector<std::string> names_with(const vocabulary_plan& plan, vocabulary_role role) {
  std::vector<std::string> names;
  for (const vocabulary_tensor* t : plan.with_role(role)) names.push_back(t->name);
  return names;
}

using clp_test::error_of;
using clp_test::refusal_of;

// --- real tensor lists (one block each; layers beyond the first left out) -----------------

std::vector<tensor_description> gpt2_tensors() {
  return {{"transformer.h.0.attn.c_attn.bias", {2304}, "F32"},
          {"transformer.h.0.attn.c_attn.weight", {768, 2304}, "F32"},
          {"transformer.h.0.attn.c_proj.weight", {768, 768}, "F32"},
          {"transformer.h.0.ln_1.weight", {768}, "F32"},
          {"transformer.h.0.mlp.c_fc.weight", {768, 3072}, "F32"},
          {"transformer.ln_f.bias", {768}, "F32"},
          {"transformer.ln_f.weight", {768}, "F32"},
          {"transformer.wpe.weight", {1024, 768}, "F32"},
          {"transformer.wte.weight", {50257, 768}, "F32"}};
}

std::vector<tensor_description> llama_tensors() {
  return {{"lm_head.weight", {32000, 4096}, "BF16"},
          {"model.embed_tokens.weight", {32000, 4096}, "BF16"},
          {"model.layers.0.input_layernorm.weight", {4096}, "BF16"},
          {"model.layers.0.mlp.down_proj.weight", {4096, 11008}, "BF16"},
          {"model.layers.0.self_attn.q_proj.weight", {4096, 4096}, "BF16"},
          {"model.norm.weight", {4096}, "BF16"}};
}

std::vector<tensor_description> neox_tensors() {  // Pythia-70m: padded to 50304 rows; head in F32 here
  return {{"embed_out.weight", {50304, 512}, "F32"},
          {"gpt_neox.embed_in.weight", {50304, 512}, "F16"},
          {"gpt_neox.final_layer_norm.bias", {512}, "F16"},
          {"gpt_neox.final_layer_norm.weight", {512}, "F16"},
          {"gpt_neox.layers.0.attention.dense.weight", {512, 512}, "F16"},
          {"gpt_neox.layers.0.attention.query_key_value.bias", {1536}, "F16"},
          {"gpt_neox.layers.0.attention.query_key_value.weight", {1536, 512}, "F16"}};
}

std::vector<tensor_description> bloom_tensors() {  // bloom-560m stores its names without "transformer."
  return {{"h.0.input_layernorm.weight", {1024}, "F16"},
          {"h.0.self_attention.query_key_value.bias", {3072}, "F16"},
          {"h.0.self_attention.query_key_value.weight", {3072, 1024}, "F16"},
          {"ln_f.bias", {1024}, "F16"},
          {"ln_f.weight", {1024}, "F16"},
          {"word_embeddings.weight", {250880, 1024}, "F16"},
          {"word_embeddings_layernorm.bias", {1024}, "F16"},
          {"word_embeddings_layernorm.weight", {1024}, "F16"}};
}

std::vector<tensor_description> bert_mlm_tensors() {
  return {{"bert.embeddings.LayerNorm.bias", {768}, "F32"},
          {"bert.embeddings.LayerNorm.weight", {768}, "F32"},
          {"bert.embeddings.position_embeddings.weight", {512, 768}, "F32"},
          {"bert.embeddings.token_type_embeddings.weight", {2, 768}, "F32"},
          {"bert.embeddings.word_embeddings.weight", {30522, 768}, "F32"},
          {"bert.encoder.layer.0.attention.self.query.bias", {768}, "F32"},
          {"bert.encoder.layer.0.attention.self.query.weight", {768, 768}, "F32"},
          {"cls.predictions.bias", {30522}, "F32"},
          {"cls.predictions.decoder.weight", {30522, 768}, "F32"},
          {"cls.predictions.transform.LayerNorm.bias", {768}, "F32"},
          {"cls.predictions.transform.LayerNorm.weight", {768}, "F32"},
          {"cls.predictions.transform.dense.bias", {768}, "F32"},
          {"cls.predictions.transform.dense.weight", {768, 768}, "F32"}};
}

std::vector<tensor_description> t5_tensors() {  // t5-v1_1-small: untied head
  return {{"decoder.block.0.layer.0.SelfAttention.q.weight", {384, 512}, "F32"},
          {"decoder.embed_tokens.weight", {32128, 512}, "F32"},
          {"decoder.final_layer_norm.weight", {512}, "F32"},
          {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {32, 6}, "F32"},
          {"encoder.block.0.layer.1.DenseReluDense.wi_0.weight", {1024, 512}, "F32"},
          {"encoder.embed_tokens.weight", {32128, 512}, "F32"},
          {"encoder.final_layer_norm.weight", {512}, "F32"},
          {"lm_head.weight", {32128, 512}, "F32"},
          {"shared.weight", {32128, 512}, "F32"}};
}

std::vector<tensor_description> bart_tensors() {
  return {{"final_logits_bias", {1, 50265}, "F32"},
          {"lm_head.weight", {50265, 768}, "F32"},
          {"model.decoder.embed_positions.weight", {1026, 768}, "F32"},
          {"model.decoder.embed_tokens.weight", {50265, 768}, "F32"},
          {"model.decoder.layernorm_embedding.bias", {768}, "F32"},
          {"model.encoder.embed_positions.weight", {1026, 768}, "F32"},
          {"model.encoder.embed_tokens.weight", {50265, 768}, "F32"},
          {"model.encoder.layers.0.self_attn.k_proj.weight", {768, 768}, "F32"},
          {"model.shared.weight", {50265, 768}, "F32"}};
}

std::vector<tensor_description> gemma3_tensors() {  // gemma-3-4b-it, tied head
  return {{"language_model.model.embed_tokens.weight", {262208, 2560}, "BF16"},
          {"language_model.model.layers.0.self_attn.q_proj.weight", {2048, 2560}, "BF16"},
          {"language_model.model.norm.weight", {2560}, "BF16"},
          {"multi_modal_projector.mm_input_projection_weight", {1152, 2560}, "BF16"},
          {"multi_modal_projector.mm_soft_emb_norm.weight", {1152}, "BF16"},
          {"vision_tower.vision_model.embeddings.patch_embedding.weight", {1152, 3, 14, 14}, "BF16"},
          {"vision_tower.vision_model.embeddings.position_embedding.weight", {4096, 1152}, "BF16"}};
}

const std::filesystem::path where = "models/source";

}  // namespace

TEST_CASE("GPT-2 (tied): the embedding is the only vocabulary-sized tensor") {
  const equal_set bytes;
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, gpt2_tensors(), "transformer.wte.weight", {}, bytes.callback());
  REQUIRE(plan.tensors.size() == 1);
  CHECK(plan.tensors[0].role == vocabulary_role::embedding);
  CHECK(plan.tensors[0].columns == 768);
  CHECK(plan.tensors[0].output_shape(5000) == std::vector<std::int64_t>{5000, 768});
  CHECK(bytes.asked.empty());
}

TEST_CASE("GPT-2 saved with its tied head: lm_head.weight equal to wte is a tied copy") {
  auto tensors = gpt2_tensors();
  tensors.push_back({"lm_head.weight", {50257, 768}, "F32"});
  const equal_set bytes({"lm_head.weight"});
  vocabulary_tensor_options options;
  options.head = "lm_head.weight";
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, tensors, "transformer.wte.weight", options, bytes.callback());
  CHECK(role_of(plan, "lm_head.weight") == "tied copy");
  CHECK(bytes.asked == std::vector<std::string>{"lm_head.weight"});
}

TEST_CASE("Llama (untied lm_head): the head is transferred") {
  const equal_set bytes;
  vocabulary_tensor_options options;
  options.head = "lm_head.weight";
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, llama_tensors(), "model.embed_tokens.weight", options, bytes.callback());
  CHECK(names_with(plan, vocabulary_role::transferred) == std::vector<std::string>{"lm_head.weight"});
  CHECK(plan.find("lm_head.weight")->reason == "untied output head");
  CHECK(plan.find("lm_head.weight")->output_shape(816) == std::vector<std::int64_t>{816, 4096});
  CHECK(names_with(plan, vocabulary_role::warned).empty());
  CHECK(bytes.asked == std::vector<std::string>{"lm_head.weight"});  // same shape and dtype: asked, not equal
}

TEST_CASE("GPT-NeoX (embed_in F16, embed_out F32): mixed dtypes, the head is transferred and never compared") {
  const equal_set bytes;
  vocabulary_tensor_options options;
  options.head = "embed_out.weight";
  options.config_vocab_size = 50304;
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, neox_tensors(), "gpt_neox.embed_in.weight", options, bytes.callback());
  CHECK(role_of(plan, "gpt_neox.embed_in.weight") == "embedding");
  CHECK(role_of(plan, "embed_out.weight") == "transferred");
  CHECK(plan.find("embed_out.weight")->dtype == "F32");
  CHECK(bytes.asked.empty());  // a different dtype cannot be a tied copy
  CHECK(plan.tensors.size() == 2);
}

TEST_CASE("BLOOM (tied): word_embeddings_layernorm is hidden-sized, not vocabulary-sized") {
  const equal_set bytes;
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, bloom_tensors(), "word_embeddings.weight", {}, bytes.callback());
  REQUIRE(plan.tensors.size() == 1);
  CHECK(plan.tensors[0].name == "word_embeddings.weight");
}

TEST_CASE("BERT masked-LM: the decoder is a tied copy, cls.predictions.bias a transferred #rows x 1 bias") {
  const equal_set bytes({"cls.predictions.decoder.weight"});
  const vocabulary_plan plan = plan_vocabulary_tensors(where, bert_mlm_tensors(),
                                                       "bert.embeddings.word_embeddings.weight", {}, bytes.callback());
  CHECK(role_of(plan, "cls.predictions.decoder.weight") == "tied copy");
  const vocabulary_tensor* bias = plan.find("cls.predictions.bias");
  REQUIRE(bias);
  CHECK(bias->role == vocabulary_role::transferred);
  CHECK(bias->reason == "per-token output bias");
  CHECK(bias->axis == 0);
  CHECK(bias->columns == 1);
  CHECK(bias->output_shape(31102) == std::vector<std::int64_t>{31102});
  CHECK(plan.tensors.size() == 3);  // position and token-type embeddings are not vocabulary-sized

  SUBCASE("an untied decoder (bytes differ) is transferred, by its well-known name") {
    const equal_set different;
    const vocabulary_plan untied = plan_vocabulary_tensors(
        where, bert_mlm_tensors(), "bert.embeddings.word_embeddings.weight", {}, different.callback());
    CHECK(role_of(untied, "cls.predictions.decoder.weight") == "transferred");
  }
}

TEST_CASE("T5: encoder/decoder embed_tokens are tied copies of shared.weight, the untied lm_head is transferred") {
  const equal_set bytes({"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"});
  vocabulary_tensor_options options;
  options.head = "lm_head.weight";
  const vocabulary_plan plan = plan_vocabulary_tensors(where, t5_tensors(), "shared.weight", options, bytes.callback());
  CHECK(names_with(plan, vocabulary_role::tied_copy) ==
        std::vector<std::string>{"decoder.embed_tokens.weight", "encoder.embed_tokens.weight"});
  CHECK(plan.find("encoder.embed_tokens.weight")->reason == "tied copy of shared.weight (equal bytes)");
  CHECK(names_with(plan, vocabulary_role::transferred) == std::vector<std::string>{"lm_head.weight"});
  CHECK(role_of(plan, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight") == "none");
  std::set<std::string> asked(bytes.asked.begin(), bytes.asked.end());
  CHECK(asked == std::set<std::string>{"decoder.embed_tokens.weight", "encoder.embed_tokens.weight", "lm_head.weight"});
  CHECK(bytes.asked.size() == 3);  // once each

  SUBCASE("copies whose bytes differ are still per-token: transferred, not dropped") {
    const equal_set none;
    const vocabulary_plan untied =
        plan_vocabulary_tensors(where, t5_tensors(), "shared.weight", options, none.callback());
    CHECK(role_of(untied, "encoder.embed_tokens.weight") == "transferred");
    CHECK(role_of(untied, "decoder.embed_tokens.weight") == "transferred");
  }
}

TEST_CASE("BART: final_logits_bias [1, vocab] is a transferred bias along axis 1, tied copies and tied head") {
  const equal_set bytes({"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"});
  vocabulary_tensor_options options;
  options.head = "lm_head.weight";
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, bart_tensors(), "model.shared.weight", options, bytes.callback());
  const vocabulary_tensor* bias = plan.find("final_logits_bias");
  REQUIRE(bias);
  CHECK(bias->role == vocabulary_role::transferred);
  CHECK(bias->axis == 1);
  CHECK(bias->columns == 1);
  CHECK(bias->output_shape(40000) == std::vector<std::int64_t>{1, 40000});
  CHECK(names_with(plan, vocabulary_role::tied_copy) == std::vector<std::string>{"lm_head.weight",
                                                                                 "model.decoder.embed_tokens.weight",
                                                                                 "model.encoder.embed_tokens.weight"});
  CHECK(role_of(plan, "model.encoder.embed_positions.weight") == "none");
}

TEST_CASE("Gemma-3 multimodal: only the language model's embedding is vocabulary-sized") {
  const equal_set bytes;
  const vocabulary_plan plan = plan_vocabulary_tensors(
      where, gemma3_tensors(), "language_model.model.embed_tokens.weight", {}, bytes.callback());
  REQUIRE(plan.tensors.size() == 1);
  CHECK(plan.tensors[0].role == vocabulary_role::embedding);
}

TEST_CASE("any other vocabulary-sized tensor is warned about: --transfer-tensor transfers it") {
  auto tensors = llama_tensors();
  tensors.push_back({"model.token_frequency", {32000}, "I64"});
  tensors.push_back({"model.vocab_adapter.weight", {32000, 16}, "BF16"});
  tensors.push_back({"model.vocab_gate.weight", {8, 32000}, "BF16"});
  tensors.push_back({"model.layers.0.mlp.gate_proj.weight", {11008, 4096}, "BF16"});
  const equal_set bytes;
  vocabulary_tensor_options options;
  options.head = "lm_head.weight";
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, tensors, "model.embed_tokens.weight", options, bytes.callback());
  CHECK(names_with(plan, vocabulary_role::warned) ==
        std::vector<std::string>{"model.token_frequency", "model.vocab_adapter.weight", "model.vocab_gate.weight"});
  CHECK(plan.find("model.vocab_gate.weight")->axis == 1);
  CHECK(plan.find("model.vocab_gate.weight")->reason ==
        "dimension 1 of [8, 32000] is the input embedding's 32000 rows");
  CHECK(warning_text(*plan.find("model.vocab_adapter.weight")) ==
        "tensor \"model.vocab_adapter.weight\" [32000, 16] BF16: dimension 0 of [32000, 16] is the input embedding's "
        "32000 rows, but it is not a known per-token tensor; copied unchanged (--transfer-tensor "
        "model.vocab_adapter.weight transfers it)");

  options.transfer_tensors = {"model.vocab_adapter.weight", "model.vocab_adapter.weight", "model.embed_tokens.weight"};
  const vocabulary_plan asked =
      plan_vocabulary_tensors(where, tensors, "model.embed_tokens.weight", options, bytes.callback());
  CHECK(role_of(asked, "model.vocab_adapter.weight") == "transferred");
  CHECK(asked.find("model.vocab_adapter.weight")->reason == "named by --transfer-tensor");
  CHECK(asked.find("model.vocab_adapter.weight")->columns == 16);
  CHECK(role_of(asked, "model.embed_tokens.weight") == "embedding");
  CHECK(names_with(asked, vocabulary_role::warned) ==
        std::vector<std::string>{"model.token_frequency", "model.vocab_gate.weight"});
}

TEST_CASE("a padded embedding: tensors of config.json's smaller vocab_size are warned about too") {
  auto tensors = neox_tensors();
  tensors.push_back({"gpt_neox.token_counts", {50277}, "F32"});
  const equal_set bytes;
  vocabulary_tensor_options options;
  options.config_vocab_size = 50277;
  const vocabulary_plan plan =
      plan_vocabulary_tensors(where, tensors, "gpt_neox.embed_in.weight", options, bytes.callback());
  CHECK(role_of(plan, "gpt_neox.token_counts") == "warned");
  CHECK(plan.find("gpt_neox.token_counts")->reason == "dimension 0 of [50277] is config.json's vocab_size 50277");
  CHECK(role_of(plan, "embed_out.weight") == "transferred");  // a well-known head name, unequal dtype
}

TEST_CASE("refusals name the checkpoint, the tensor or option, and the problem") {
  const equal_set bytes;
  vocabulary_tensor_options options;
  const auto refusal = [&](const std::vector<tensor_description>& tensors, const std::string& embedding) {
    return file_refusal_of([&] { plan_vocabulary_tensors(where, tensors, embedding, options, bytes.callback()); });
  };
  // A --transfer-tensor that names nothing usable is a bad option value; the whole message too,
  // as the user reads it.
  options.transfer_tensors = {"model.missing"};
  auto caught = refusal(llama_tensors(), "model.embed_tokens.weight");
  REQUIRE(caught);
  CHECK(caught->kind == kind_name(clp::error_kind::invalid_argument));
  CHECK(caught->facts.file == where.string());
  CHECK(caught->facts.argument == "--transfer-tensor");
  CHECK(caught->message == "models/source: --transfer-tensor \"model.missing\": no such tensor in the checkpoint");
  options.transfer_tensors = {"model.norm.weight"};
  caught = refusal(llama_tensors(), "model.embed_tokens.weight");
  REQUIRE(caught);
  CHECK(caught->kind == kind_name(clp::error_kind::invalid_argument));
  CHECK(caught->message ==
        "models/source: --transfer-tensor \"model.norm.weight\" has shape [4096], which does not start with the input "
        "embedding's 32000 rows (after leading 1s)");
  auto tensors = llama_tensors();
  tensors.push_back({"model.token_frequency", {32000}, "I64"});
  options.transfer_tensors = {"model.token_frequency"};
  caught = refusal(tensors, "model.embed_tokens.weight");
  REQUIRE(caught);
  CHECK(caught->facts.argument == "--transfer-tensor");
  CHECK(caught->problem == "\"model.token_frequency\" is I64, not a floating-point tensor (F32, F64, F16 or BF16)");
  // An embedding or head of the wrong shape: the checkpoint is at fault, and the tensor is named.
  options.transfer_tensors.clear();
  options.head = "model.norm.weight";
  caught = refusal(llama_tensors(), "model.embed_tokens.weight");
  REQUIRE(caught);
  CHECK(caught->kind == kind_name(file_kind::malformed));
  CHECK(caught->facts.file == where.string());
  CHECK(caught->facts.tensor == "model.norm.weight");
  CHECK(caught->problem ==
        "is the output head, but has shape [4096], not [32000, cols] like the input embedding "
        "\"model.embed_tokens.weight\"");
  options.head.reset();
  caught = refusal(llama_tensors(), "model.norm.weight");
  REQUIRE(caught);
  CHECK(caught->kind == kind_name(file_kind::malformed));
  CHECK(caught->facts.tensor == "model.norm.weight");
  CHECK(caught->message ==
        "models/source: tensor \"model.norm.weight\" is the input embedding, but has shape [4096], not [rows, cols]");
}

// --- config.json ------------------------------------------------------------------------

namespace {

/// Gemma-3-4b-it's config.json, abridged (vision_config shortened, same key placement).
json gemma3_config() {
  return json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"],
    "boi_token_index": 255999,
    "eoi_token_index": 256000,
    "eos_token_id": [1, 106],
    "image_token_index": 262144,
    "initializer_range": 0.02,
    "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {
      "hidden_size": 2560,
      "intermediate_size": 10240,
      "model_type": "gemma3_text",
      "num_hidden_layers": 34,
      "sliding_window": 1024
    },
    "torch_dtype": "bfloat16",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model", "patch_size": 14}
  })");
}

json llava_config() {  // llava-hf/llava-1.5-7b-hf, abridged
  return json::parse(R"({
    "architectures": ["LlavaForConditionalGeneration"],
    "ignore_index": -100,
    "image_token_index": 32000,
    "model_type": "llava",
    "pad_token_id": 32001,
    "projector_hidden_act": "gelu",
    "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096, "model_type": "llama",
                    "rms_norm_eps": 1e-05, "torch_dtype": "float16", "vocab_size": 32064},
    "vision_config": {"hidden_size": 1024, "model_type": "clip_vision_model", "vocab_size": 32000},
    "vision_feature_layer": -2,
    "vocab_size": 32064
  })");
}

/// The source's token ids (what io::token_vocabulary::ids holds).
std::unordered_map<std::string, std::int64_t> gemma_source_tokens() {
  return {{"<pad>", 0},
          {"<eos>", 1},
          {"<bos>", 2},
          {"<end_of_turn>", 106},
          {"<start_of_image>", 255999},
          {"<end_of_image>", 256000},
          {"<image_soft_token>", 262144}};
}

}  // namespace

TEST_CASE("the language-model config: top level, text_config, thinker_config.text_config, llm_config") {
  CHECK(language_model_config_path(json{{"n_embd", 768}}).empty());
  CHECK(language_model_config_path(gemma3_config()) == std::vector<std::string>{"text_config"});
  CHECK(language_model_config_path(json::parse(R"({"thinker_config": {"text_config": {"hidden_size": 3584}}})")) ==
        std::vector<std::string>{"thinker_config", "text_config"});
  CHECK(language_model_config_path(json::parse(R"({"llm_config": {"hidden_size": 896}, "vision_config": {}})")) ==
        std::vector<std::string>{"llm_config"});
  CHECK(language_model_config_path(json::parse(R"({"text_config": null, "hidden_size": 8})")).empty());
}

TEST_CASE("hidden size and vocab_size are read where the model reads them") {
  const std::filesystem::path file = "src/config.json";
  CHECK(language_model_hidden_size(gemma3_config(), file) == 2560);         // not vision_config's 1152
  CHECK(language_model_vocab_size(gemma3_config(), file) == std::nullopt);  // the class default applies
  CHECK(language_model_vocab_size(llava_config(), file) == 32064);
  CHECK(language_model_hidden_size(json{{"n_embed", 14336}, {"vocab_size", 250880}}, file) == 14336);  // BLOOM-176B
  CHECK(language_model_hidden_size(json{{"d_model", 512}}, file) == 512);                              // T5
  CHECK(language_model_hidden_size(json::parse(R"({"text_config": {}, "hidden_size": 64})"), file) == 64);
  const auto no_hidden_size = file_refusal_of([&] { language_model_hidden_size(llava_config(), file); });
  REQUIRE(no_hidden_size);
  CHECK(no_hidden_size->kind == kind_name(file_kind::malformed));
  CHECK(no_hidden_size->facts.file == file.string());
  CHECK(no_hidden_size->message ==
        "src/config.json: no n_embd or n_embed or hidden_size or d_model (looked in text_config and at the top level)");
  CHECK(error_of<clp_transfer::io::file_error>([&] { language_model_vocab_size(json::parse(R"({"text_config": {"vocab_size": "big"}})"), file); }) ==
        "src/config.json: text_config.vocab_size is \"big\", not a positive integer");
  CHECK(language_model_special_token_ids(gemma3_config()) == json{{"eos_token_id", {1, 106}}});
}

TEST_CASE("sizes at the limits of int64") {
  const std::filesystem::path file = "/models/m/config.json";
  CHECK(language_model_vocab_size(json::parse(R"({"vocab_size": 9223372036854775807})"), file) == INT64_MAX);
  CHECK(error_of<clp_transfer::io::file_error>([&] { language_model_vocab_size(json::parse(R"({"vocab_size": 9223372036854775808})"), file); }) ==
        "/models/m/config.json: vocab_size is 9223372036854775808, not a positive integer");
  CHECK(error_of<clp_transfer::io::file_error>([&] { language_model_hidden_size(json::parse(R"({"n_embd": -9223372036854775808})"), file); }) ==
        "/models/m/config.json: n_embd is -9223372036854775808, not a positive integer");
  CHECK(error_of<clp_transfer::io::file_error>([&] { language_model_hidden_size(json::array(), file); }).find("no n_embd") != std::string::npos);
}

TEST_CASE("flat configs: vocab_size replaced, special ids from the helper, else dropped") {
  const json source = {{"architectures", {"GPT2LMHeadModel"}},
                       {"bos_token_id", 50256},
                       {"eos_token_id", 50256},
                       {"n_embd", 768},
                       {"pad_token_id", 50256},
                       {"vocab_size", 50257}};
  const json helper = {{"bos_token_id", 0}, {"eos_token_id", 0}, {"unk_token_id", 0}, {"vocab_size", 5000}};
  const transferred_config out = transfer_config(source, helper, 5000, {}, {});
  const json expected = {{"architectures", {"GPT2LMHeadModel"}},
                         {"bos_token_id", 0},
                         {"eos_token_id", 0},
                         {"n_embd", 768},
                         {"vocab_size", 5000},
                         {"unk_token_id", 0}};
  CHECK(out.config.dump() == expected.dump());  // key order too: new keys go last
  CHECK(out.token_ids.empty());
}

TEST_CASE("BART: decoder_start from the helper, forced_bos/forced_eos carried over by their token") {
  const json source = {{"d_model", 768},           {"decoder_start_token_id", 2}, {"forced_bos_token_id", 0},
                       {"forced_eos_token_id", 2}, {"pad_token_id", 1},           {"vocab_size", 50265}};
  const json helper = {{"pad_token_id", 3}, {"decoder_start_token_id", 1}};
  const std::unordered_map<std::string, std::int64_t> source_tokens = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}};
  const std::unordered_map<std::string, std::int64_t> target_tokens = {{"</s>", 1}, {"<pad>", 3}};
  const transferred_config out = transfer_config(source, helper, 40000, source_tokens, target_tokens);
  CHECK(out.config.dump() == json({{"d_model", 768},
                                   {"decoder_start_token_id", 1},
                                   {"forced_eos_token_id", 1},
                                   {"pad_token_id", 3},
                                   {"vocab_size", 40000}})
                                 .dump());
  REQUIRE(out.token_ids.size() == 2);
  CHECK(out.token_ids[0].key == "forced_bos_token_id");
  CHECK(out.token_ids[0].token == "<s>");
  CHECK(out.token_ids[0].target_id == std::nullopt);  // dropped: the new vocabulary has no <s>
  CHECK(out.token_ids[1].key == "forced_eos_token_id");
  CHECK(out.token_ids[1].target_id == 1);
}

TEST_CASE("Gemma-3: vocab_size and special ids written in text_config, image token ids by token, else dropped") {
  const json helper = {{"bos_token_id", 2}, {"eos_token_id", 1}, {"pad_token_id", 0}, {"hidden_size", 640}};
  const std::unordered_map<std::string, std::int64_t> target_tokens = {
      {"<pad>", 0}, {"<eos>", 1}, {"<bos>", 2}, {"<start_of_image>", 4}, {"<end_of_image>", 5}};
  const transferred_config out = transfer_config(gemma3_config(), helper, 6000, gemma_source_tokens(), target_tokens);

  json expected = gemma3_config();
  expected["boi_token_index"] = 4;
  expected["eoi_token_index"] = 5;
  expected["eos_token_id"] = 1;  // present at the top: replaced by the helper's
  expected.erase("image_token_index");
  expected["text_config"]["vocab_size"] = 6000;  // absent before: the model would read its default
  expected["text_config"]["bos_token_id"] = 2;
  expected["text_config"]["eos_token_id"] = 1;
  expected["text_config"]["pad_token_id"] = 0;
  CHECK(out.config.dump() == expected.dump());
  CHECK(!out.config.contains("vocab_size"));  // not at the top, where Gemma-3 never had it
  REQUIRE(out.token_ids.size() == 3);
  CHECK(out.token_ids[0].key == "boi_token_index");
  CHECK(out.token_ids[0].source_id == 255999);
  CHECK(out.token_ids[0].target_id == 4);
  CHECK(out.token_ids[1].key == "eoi_token_index");
  CHECK(out.token_ids[1].target_id == 5);
  CHECK(out.token_ids[2].key == "image_token_index");
  CHECK(out.token_ids[2].token == "<image_soft_token>");
  CHECK(out.token_ids[2].target_id == std::nullopt);
}

TEST_CASE("Llava: vocab_size at the top and in text_config, a pad id only at the top is replaced there") {
  const json helper = {{"pad_token_id", 7}, {"bos_token_id", 1}};
  const std::unordered_map<std::string, std::int64_t> source_tokens = {{"<image>", 32000}, {"<pad>", 32001}};
  const std::unordered_map<std::string, std::int64_t> target_tokens = {{"<image>", 900}, {"<pad>", 7}};
  const transferred_config out = transfer_config(llava_config(), helper, 1000, source_tokens, target_tokens);
  CHECK(out.config["vocab_size"] == 1000);
  CHECK(out.config["text_config"]["vocab_size"] == 1000);
  CHECK(out.config["vision_config"]["vocab_size"] == 32000);  // not the language model's
  CHECK(out.config["image_token_index"] == 900);
  CHECK(out.config["pad_token_id"] == 7);
  CHECK(!out.config.contains("bos_token_id"));  // not added at the top of a nested config
  CHECK(out.config["text_config"]["bos_token_id"] == 1);
  CHECK(out.config["text_config"]["pad_token_id"] == 7);
  CHECK(out.config["ignore_index"] == -100);
  CHECK(out.config["vision_feature_layer"] == -2);
}

TEST_CASE("token-id lists keep the ids whose token exists: negative placeholders are kept") {
  const json source = json::parse(R"({"hidden_size": 8, "vocab_size": 10, "image_token_index": -200,
                                      "suppress_token_ids": [3, 4, -1], "video_token_id": 9})");
  const std::unordered_map<std::string, std::int64_t> source_tokens = {{"a", 3}, {"b", 4}};
  const std::unordered_map<std::string, std::int64_t> target_tokens = {{"b", 0}};
  const transferred_config out = transfer_config(source, json::object(), 5, source_tokens, target_tokens);
  CHECK(out.config["image_token_index"] == -200);
  CHECK(out.config["suppress_token_ids"] == json({0, -1}));
  CHECK(!out.config.contains("video_token_id"));  // id 9 names no source token
  REQUIRE(out.token_ids.size() == 3);
  CHECK(out.token_ids[2].key == "video_token_id");
  CHECK(out.token_ids[2].token == std::nullopt);
}
