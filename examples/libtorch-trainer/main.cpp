// SPDX-License-Identifier: MIT
// A small, complete trainer in libtorch whose German embedding clp::synthesize_rows writes straight
// into the model's parameter: the paper's Figure 2 in C++ (README.md beside this file).
//
// A GPT-2 module with en-large's architecture (examples/models/en-large: 128 dims, 4 layers,
// 4 heads, 128 positions; Hugging Face GPT2LMHeadModel's parameter names, Conv1D weights stored
// [in, out], the head tied to the embedding) loads en-large's weights, takes de-small's German
// vocabulary, gets its embedding from one of the initialisations below, and is trained on
// German token ids (prepare_data.py writes them) with the settings of examples/figure2:
//
//   from-scratch      every weight fresh (examples/figure2's "random"), no transfer
//   random-embedding  en-large's transformer; every embedding row drawn from a normal with the
//                     English embedding's per-column mean and deviation (clp::random_init)
//   overlap-random    en-large's transformer; the rows of tokens both vocabularies have copied
//                     from the English embedding, the others drawn so (clp::overlap_random)
//   clp               en-large's transformer; shared rows copied, the others synthesised from
//                     de-small's embedding (clp::synthesize_rows, top-k weights with k = 10)
//
// It prints the validation loss at step 0 and every --eval-every steps for each, then the
// curves side by side.

#include <clp/adapters/torch.hpp>
#include <clp/clp.hpp>

#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// The shipped model folders: model.safetensors and vocab.json, read in a few lines each.

/// Every tensor of a .safetensors file as a CPU tensor of its own dtype (F32, F64, F16, BF16).
/// A little-endian machine is assumed, as the format stores its numbers so.
std::map<std::string, torch::Tensor> read_safetensors(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(path + ": cannot be opened");
  std::uint64_t header_bytes = 0;
  file.read(reinterpret_cast<char*>(&header_bytes), sizeof header_bytes);
  std::string header(header_bytes < (1u << 26) ? header_bytes : 0, '\0');
  file.read(header.data(), std::streamsize(header.size()));
  if (!file || header.size() != header_bytes) throw std::runtime_error(path + ": not a safetensors file");
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());

  const std::map<std::string, torch::ScalarType> dtypes{
      {"F32", torch::kFloat}, {"F64", torch::kDouble}, {"F16", torch::kHalf}, {"BF16", torch::kBFloat16}};
  std::map<std::string, torch::Tensor> tensors;
  const nlohmann::json entries = nlohmann::json::parse(header);
  for (const auto& [name, entry] : entries.items()) {
    if (name == "__metadata__") continue;
    const auto dtype = dtypes.find(entry.at("dtype").get<std::string>());
    if (dtype == dtypes.end()) throw std::runtime_error(path + ": tensor " + name + " has an unsupported dtype");
    const auto shape = entry.at("shape").get<std::vector<std::int64_t>>();
    const auto offsets = entry.at("data_offsets").get<std::vector<std::size_t>>();
    torch::Tensor tensor = torch::empty(shape, dtype->second);
    if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data.size() ||
        offsets[1] - offsets[0] != tensor.nbytes())
      throw std::runtime_error(path + ": tensor " + name + " has data offsets that do not fit its shape");
    std::memcpy(tensor.data_ptr(), data.data() + offsets[0], tensor.nbytes());
    tensors.emplace(name, std::move(tensor));
  }
  return tensors;
}

/// A GPT-2 vocab.json: token -> id.
std::map<std::string, std::int64_t> read_vocabulary(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error(path + ": cannot be opened");
  return nlohmann::json::parse(file).get<std::map<std::string, std::int64_t>>();
}

/// A file of little-endian uint16 token ids, as prepare_data.py writes it.
torch::Tensor read_ids(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(path + ": cannot be opened (run prepare_data.py, or see README.md)");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  torch::Tensor ids = torch::empty({std::int64_t(bytes.size() / 2)}, torch::kLong);
  auto* out = ids.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2)
    out[i / 2] = std::uint8_t(bytes[i]) | std::int64_t(std::uint8_t(bytes[i + 1])) << 8;
  return ids;
}

// ---------------------------------------------------------------------------------------------
// The model: GPT-2 as examples/models/tinygpt.py's GPT writes it, parameter for parameter.

struct gpt_config {
  std::int64_t vocab = 5000, n_embd = 128, n_layer = 4, n_head = 4, n_positions = 128;
  double layer_norm_epsilon = 1e-5, initializer_range = 0.02;
};

/// Hugging Face's Conv1D: y = x W + b with W stored [in, out].
struct Conv1DImpl : torch::nn::Module {
  Conv1DImpl(std::int64_t in, std::int64_t out)
      : weight(register_parameter("weight", torch::empty({in, out}))),
        bias(register_parameter("bias", torch::zeros({out}))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape.back() = weight.size(1);
    return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(shape);
  }
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1D);

struct AttentionImpl : torch::nn::Module {
  AttentionImpl(std::int64_t d, std::int64_t heads)
      : heads(heads),
        c_attn(register_module("c_attn", Conv1D(d, 3 * d))),
        c_proj(register_module("c_proj", Conv1D(d, d))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const std::int64_t batch = x.size(0), length = x.size(1), d = x.size(2), head_dim = d / heads;
    const std::vector<torch::Tensor> qkv = c_attn(x).split(d, 2);
    const auto by_head = [&](const torch::Tensor& t) {
      return t.view({batch, length, heads, head_dim}).transpose(1, 2);
    };
    torch::Tensor scores = by_head(qkv[0]).matmul(by_head(qkv[1]).transpose(-2, -1)) / std::sqrt(double(head_dim));
    const torch::Tensor causal = torch::ones({length, length}, torch::kBool).tril();
    scores = scores.masked_fill(causal.logical_not(), std::numeric_limits<float>::lowest());
    const torch::Tensor y = torch::softmax(scores, -1).matmul(by_head(qkv[2]));
    return c_proj(y.transpose(1, 2).contiguous().view({batch, length, d}));
  }
  std::int64_t heads;
  Conv1D c_attn, c_proj;
};
TORCH_MODULE(Attention);

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(std::int64_t d)
      : c_fc(register_module("c_fc", Conv1D(d, 4 * d))), c_proj(register_module("c_proj", Conv1D(4 * d, d))) {}
  torch::Tensor forward(const torch::Tensor& x) { return c_proj(torch::gelu(c_fc(x), "tanh")); }  // gelu_new
  Conv1D c_fc, c_proj;
};
TORCH_MODULE(Mlp);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const gpt_config& c)
      : ln_1(register_module("ln_1",
                             torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon)))),
        attn(register_module("attn", Attention(c.n_embd, c.n_head))),
        ln_2(register_module("ln_2",
                             torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon)))),
        mlp(register_module("mlp", Mlp(c.n_embd))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = x + attn(ln_1(x));
    return x + mlp(ln_2(x));
  }
  torch::nn::LayerNorm ln_1;
  Attention attn;
  torch::nn::LayerNorm ln_2;
  Mlp mlp;
};
TORCH_MODULE(Block);

struct TransformerImpl : torch::nn::Module {
  explicit TransformerImpl(const gpt_config& c)
      : wte(register_module("wte", torch::nn::Embedding(c.vocab, c.n_embd))),
        wpe(register_module("wpe", torch::nn::Embedding(c.n_positions, c.n_embd))),
        h(register_module("h", torch::nn::ModuleList())),
        ln_f(register_module("ln_f",
                             torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon)))) {
    for (std::int64_t i = 0; i < c.n_layer; ++i) h->push_back(Block(c));
  }
  torch::nn::Embedding wte, wpe;
  torch::nn::ModuleList h;
  torch::nn::LayerNorm ln_f;
};
TORCH_MODULE(Transformer);

/// The whole model; its parameters are named as in a GPT2LMHeadModel checkpoint
/// ("transformer.h.0.attn.c_attn.weight"), and the output head is the embedding.
struct GptImpl : torch::nn::Module {
  explicit GptImpl(const gpt_config& c) : config(c), transformer(register_module("transformer", Transformer(c))) {}

  /// Logits, batch x length x vocab, of token ids batch x length.
  torch::Tensor forward(const torch::Tensor& ids) {
    const torch::Tensor positions = torch::arange(ids.size(1), torch::kLong);
    torch::Tensor x = transformer->wte(ids) + transformer->wpe(positions).unsqueeze(0);
    for (const auto& block : *transformer->h) x = block->as<Block>()->forward(x);
    return transformer->ln_f(x).matmul(transformer->wte->weight.t());
  }

  /// tinygpt's initialisation: LayerNorm weights 1, biases 0, residual projections
  /// N(0, 0.02 / sqrt(2 n_layer)), every other weight N(0, 0.02).
  void reset_parameters() {
    const torch::NoGradGuard no_grad;
    const auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    for (auto& item : named_parameters()) {
      const std::string& name = item.key();
      torch::Tensor& p = item.value();
      if (ends_with(name, "ln_1.weight") || ends_with(name, "ln_2.weight") || ends_with(name, "ln_f.weight"))
        p.fill_(1.0);
      else if (ends_with(name, ".bias"))
        p.zero_();
      else if (ends_with(name, "c_proj.weight"))
        p.normal_(0.0, config.initializer_range / std::sqrt(2.0 * double(config.n_layer)));
      else
        p.normal_(0.0, config.initializer_range);
    }
  }

  /// Every parameter but the embedding from a checkpoint's tensors (lm_head.* is the tied copy).
  void load_all_but_embedding(const std::map<std::string, torch::Tensor>& checkpoint) {
    const torch::NoGradGuard no_grad;
    auto parameters = named_parameters();
    for (auto& item : parameters) {
      const auto found = checkpoint.find(item.key());
      if (found == checkpoint.end()) throw std::runtime_error("the checkpoint has no tensor " + item.key());
      if (found->second.sizes() != item.value().sizes())
        throw std::runtime_error("the checkpoint's " + item.key() + " has another shape");
      if (item.key() != "transformer.wte.weight") item.value().copy_(found->second);
    }
    for (const auto& [name, tensor] : checkpoint)
      if (name.rfind("lm_head.", 0) != 0 && !parameters.contains(name))
        throw std::runtime_error("the checkpoint's tensor " + name + " has no place in the model");
  }

  gpt_config config;
  Transformer transformer;
};
TORCH_MODULE(Gpt);

// ---------------------------------------------------------------------------------------------
// Settings, and the initialisations.

struct settings {
  std::string source = "examples/models/en-large", helper = "examples/models/de-small", data;
  std::int64_t synthetic = 0;  ///< > 0: train on that many uniformly random ids (a smoke test)
  std::vector<std::string> inits{"from-scratch", "random-embedding", "overlap-random", "clp"};
  std::string weighting = "top-k", match = "exact";
  std::optional<clp::Index> k;
  std::uint64_t seed = 0;
  std::int64_t steps = 160, batch = 16, warmup = 10, eval_every = 16, eval_tokens = 8192;
  double lr = 1e-3, weight_decay = 0.1;
  int threads = 2;
};

/// What every initialisation starts from: the source checkpoint, both embeddings and the overlap.
struct transfer_inputs {
  std::map<std::string, torch::Tensor> source_checkpoint;
  torch::Tensor source_wte;  ///< #source by 128: en-large's embedding
  torch::Tensor helper_wte;  ///< #target by 64: de-small's embedding
  clp::vocabulary_overlap overlap;
};

transfer_inputs read_inputs(const settings& s) {
  transfer_inputs in;
  in.source_checkpoint = read_safetensors(s.source + "/model.safetensors");
  in.source_wte = in.source_checkpoint.at("transformer.wte.weight");
  in.helper_wte = read_safetensors(s.helper + "/model.safetensors").at("transformer.wte.weight");
  const auto source_vocab = read_vocabulary(s.source + "/vocab.json");
  const auto target_vocab = read_vocabulary(s.helper + "/vocab.json");

  // The German tokens en-large also has: by string, as the paper matches, or by the bytes they
  // stand for (both tokenizers are GPT-2 byte-level BPE, so here the two agree).
  clp::intersect_options match{in.source_wte.size(0), in.helper_wte.size(0), {}};
  if (s.match == "bytes") {
    match.match = clp::token_match::bytes;
    match.source_spelling = match.target_spelling = clp::token_spelling::byte_level;
  }
  in.overlap = clp::intersect_vocabularies(source_vocab, target_vocab, match);
  return in;
}

/// A German model initialised as `init` says (see the file comment).
Gpt initialise(const std::string& init, const transfer_inputs& in, const settings& s) {
  torch::manual_seed(1000 + s.seed);  // examples/figure2's seed for a fresh model
  Gpt model(gpt_config{in.helper_wte.size(0)});
  model->reset_parameters();
  if (init == "from-scratch") return model;
  model->load_all_but_embedding(in.source_checkpoint);

  // The embedding parameter (the head is tied to it) is written in place: no copy, no file.
  // It requires grad, so it is written with autograd off, as torch::nn::init writes.
  const torch::NoGradGuard no_grad;
  torch::Tensor& embedding = model->transformer->wte->weight;  // #target by 128
  if (init == "clp") {
    clp::synthesis_options options;
    options.threads = s.threads;
    const clp::synthesis_report report = clp::synthesize_rows(in.source_wte, in.helper_wte, in.overlap, embedding,
                                                              clp::make_weighting(s.weighting, s.k), options);
    std::printf("clp: %td rows copied, %td synthesised (%s), effective neighbours median %.1f\n", report.copied_rows,
                report.synthesized_rows, s.weighting.c_str(), report.effective_neighbours_median);
  } else if (init == "overlap-random") {
    clp::overlap_random(in.source_wte, in.overlap, embedding, s.seed);
  } else if (init == "random-embedding") {
    clp::random_init(in.source_wte, embedding, s.seed);
  } else {
    throw std::invalid_argument("unknown initialisation '" + init + "'");
  }
  return model;
}

// ---------------------------------------------------------------------------------------------
// Training and evaluation: examples/figure2/figure2.py's train() and tinygpt's mean_nll().

/// Mean next-token loss (nats) over `ids` cut into windows of n_positions tokens, each window's
/// first token context only; full windows in batches of 32, a tail of 2 or more tokens alone.
double validation_loss(Gpt& model, const torch::Tensor& ids) {
  const torch::NoGradGuard no_grad;
  const std::int64_t block = model->config.n_positions, n = ids.size(0);
  double total = 0;
  std::int64_t count = 0;
  const auto add = [&](const torch::Tensor& windows) {
    const torch::Tensor logits = model->forward(windows.slice(1, 0, -1));
    const torch::Tensor targets = windows.slice(1, 1);
    total +=
        torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), {}, at::Reduction::Sum)
            .item<double>();
    count += targets.numel();
  };
  const std::int64_t full = n / block;
  for (std::int64_t first = 0; first < full; first += 32)
    add(ids.slice(0, first * block, std::min(full, first + 32) * block).view({-1, block}));
  if (n - full * block >= 2) add(ids.slice(0, full * block).unsqueeze(0));
  return total / double(std::max<std::int64_t>(count, 1));
}

struct evaluation {
  std::int64_t step;
  double loss;
};

/// AdamW (betas 0.9/0.95, weight decay on matrices only), lr warmed up linearly over `warmup`
/// steps then constant, gradients clipped to norm 1; batches of `batch` windows whose starts a
/// generator seeded with `seed` draws, the draws figure2.py's torch.randint makes.
std::vector<evaluation> train(Gpt& model, const torch::Tensor& train_ids, const torch::Tensor& valid_ids,
                              const settings& s, const std::string& init) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  const auto options = [&](double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(s.lr).betas({0.9, 0.95}).weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(s.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  torch::optim::AdamW optimizer(std::move(groups));
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(s.seed);
  const std::int64_t block = model->config.n_positions;

  std::vector<evaluation> curve;
  const auto evaluate = [&](std::int64_t step) {
    curve.push_back({step, validation_loss(model, valid_ids)});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("  %-16s seed %llu  step %4lld  valid loss %.4f  ppl %9.2f  %5.0f s\n", init.c_str(),
                static_cast<unsigned long long>(s.seed), static_cast<long long>(step), curve.back().loss,
                std::exp(curve.back().loss), seconds);
    std::fflush(stdout);
  };
  evaluate(0);
  model->train();
  for (std::int64_t step = 0; step < s.steps; ++step) {
    for (auto& group : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options())
          .lr(s.lr * std::min(1.0, double(step + 1) / double(s.warmup)));
    const torch::Tensor starts = torch::randint(0, train_ids.size(0) - block - 1, {s.batch}, generator, torch::kLong);
    std::vector<torch::Tensor> windows;
    for (std::int64_t b = 0; b < s.batch; ++b) {
      const std::int64_t first = starts[b].item<std::int64_t>();
      windows.push_back(train_ids.slice(0, first, first + block + 1));
    }
    const torch::Tensor x = torch::stack(windows);
    const torch::Tensor logits = model->forward(x.slice(1, 0, -1));
    const torch::Tensor loss =
        torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), x.slice(1, 1).reshape({-1}));
    optimizer.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    if ((step + 1) % s.eval_every == 0 || step + 1 == s.steps) evaluate(step + 1);
  }
  return curve;
}

// ---------------------------------------------------------------------------------------------
// The command line.

const char* const usage =
    "usage: clp_libtorch_trainer [--data DIR | --synthetic N] [options]\n"
    "Trains a German GPT-2 with en-large's architecture from each initialisation and prints the\n"
    "validation loss at step 0 and every --eval-every steps (examples/libtorch-trainer/README.md).\n"
    "  --data DIR         train.u16 and valid.u16, token ids of de-small's tokenizer (prepare_data.py)\n"
    "  --synthetic N      train on N uniformly random ids instead (a smoke test of the code)\n"
    "  --source DIR       the source model folder (default examples/models/en-large: the defaults\n"
    "                     are relative, run from the repository root)\n"
    "  --helper DIR       the helper model folder, whose vocabulary the model takes (default\n"
    "                     examples/models/de-small)\n"
    "  --inits LIST       comma-separated, of from-scratch, random-embedding, overlap-random, clp\n"
    "                     (default: all four)\n"
    "  --weighting NAME   clp's weighting, as clp::make_weighting names it (default top-k)\n"
    "  --k K              its k (default: the weighting's own, 10 for top-k)\n"
    "  --match exact|bytes  how tokens are matched (default exact: by string, as the paper)\n"
    "  --seed S           data order and random draws (default 0)\n"
    "  --steps N (160)  --batch B (16)  --lr X (1e-3)  --warmup N (10)  --eval-every N (16)\n"
    "  --eval-tokens N (8192: the first N validation ids)  --threads N (2)\n";

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--data")
      s.data = value;
    else if (flag == "--synthetic")
      s.synthetic = std::stoll(value);
    else if (flag == "--source")
      s.source = value;
    else if (flag == "--helper")
      s.helper = value;
    else if (flag == "--inits")
      s.inits = split(value);
    else if (flag == "--weighting")
      s.weighting = value;
    else if (flag == "--k")
      s.k = std::stoll(value);
    else if (flag == "--match")
      s.match = value;
    else if (flag == "--seed")
      s.seed = std::stoull(value);
    else if (flag == "--steps")
      s.steps = std::stoll(value);
    else if (flag == "--batch")
      s.batch = std::stoll(value);
    else if (flag == "--lr")
      s.lr = std::stod(value);
    else if (flag == "--warmup")
      s.warmup = std::stoll(value);
    else if (flag == "--eval-every")
      s.eval_every = std::stoll(value);
    else if (flag == "--eval-tokens")
      s.eval_tokens = std::stoll(value);
    else if (flag == "--threads")
      s.threads = std::stoi(value);
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  if (s.data.empty() == (s.synthetic == 0)) throw std::invalid_argument("give one of --data DIR and --synthetic N");
  if (s.match != "exact" && s.match != "bytes") throw std::invalid_argument("--match is exact or bytes");
  if (s.steps < 0 || s.batch < 1 || s.warmup < 1 || s.eval_every < 1 || s.eval_tokens < 2 || s.threads < 1)
    throw std::invalid_argument(
        "--steps, --batch, --warmup, --eval-every, --eval-tokens and --threads must be positive");
  for (const std::string& init : s.inits)
    if (init != "from-scratch" && init != "random-embedding" && init != "overlap-random" && init != "clp")
      throw std::invalid_argument("unknown initialisation '" + init + "' in --inits");
  return s;
}

/// The curves side by side: loss (perplexity) per step, one column per initialisation.
void print_table(const std::vector<std::string>& inits, const std::vector<std::vector<evaluation>>& curves,
                 std::int64_t tokens_per_step) {
  std::printf("\nvalidation loss in nats (perplexity)\n%6s %9s", "step", "tokens");
  for (const std::string& init : inits) std::printf("  %20s", init.c_str());
  std::printf("\n");
  for (std::size_t row = 0; row < curves.front().size(); ++row) {
    std::printf("%6lld %9lld", static_cast<long long>(curves.front()[row].step),
                static_cast<long long>(curves.front()[row].step * tokens_per_step));
    for (const auto& curve : curves) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.4f (%.1f)", curve[row].loss, std::exp(curve[row].loss));
      std::printf("  %20s", cell);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    s = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clp_libtorch_trainer: %s\n%s", e.what(), usage);
    return 2;
  }
  try {
    const auto started = std::chrono::steady_clock::now();
    torch::set_num_threads(s.threads);
    const transfer_inputs in = read_inputs(s);
    std::printf("overlap: %zu of %td German tokens are en-large tokens (matched by %s); %zu are synthesised\n",
                in.overlap.size(), in.overlap.target_rows(), s.match.c_str(), in.overlap.missing_ids.size());

    torch::Tensor train_ids, valid_ids;
    if (s.synthetic > 0) {
      at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(s.seed + 1);
      train_ids = torch::randint(0, in.helper_wte.size(0), {s.synthetic}, generator, torch::kLong);
      valid_ids = torch::randint(0, in.helper_wte.size(0), {s.eval_tokens}, generator, torch::kLong);
    } else {
      train_ids = read_ids(s.data + "/train.u16");
      valid_ids = read_ids(s.data + "/valid.u16").slice(0, 0, s.eval_tokens);
    }
    if (train_ids.size(0) < 130 + 2 || valid_ids.size(0) < 2) throw std::runtime_error("too few token ids");
    if (train_ids.max().item<std::int64_t>() >= in.helper_wte.size(0) ||
        valid_ids.max().item<std::int64_t>() >= in.helper_wte.size(0))
      throw std::runtime_error("a token id is past the helper's vocabulary: ids of another tokenizer?");
    std::printf("German ids: %lld for training, %lld for validation; %lld steps of %lld x 128 tokens\n",
                static_cast<long long>(train_ids.size(0)), static_cast<long long>(valid_ids.size(0)),
                static_cast<long long>(s.steps), static_cast<long long>(s.batch));

    std::vector<std::vector<evaluation>> curves;
    for (const std::string& init : s.inits) {
      Gpt model = initialise(init, in, s);
      curves.push_back(train(model, train_ids, valid_ids, s, init));
    }
    print_table(s.inits, curves, s.batch * 128);

    // The question the run answers: is CLP's loss below the other transfers' at every step after 0?
    for (std::size_t c = 0; c < s.inits.size(); ++c) {
      if (s.inits[c] != "clp") continue;
      for (std::size_t other = 0; other < s.inits.size(); ++other) {
        if (other == c) continue;
        std::vector<long long> behind;
        for (std::size_t row = 1; row < curves[c].size(); ++row)
          if (!(curves[c][row].loss < curves[other][row].loss)) behind.push_back(curves[c][row].step);
        std::printf("clp below %s at every step after 0: %s", s.inits[other].c_str(),
                    behind.empty() ? "yes" : "no, not at");
        for (const long long step : behind) std::printf(" %lld", step);
        std::printf("\n");
      }
    }
    std::printf("wall time: %.0f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  } catch (const std::exception& e) {  // clp::error included: its what() says where and why
    std::fprintf(stderr, "clp_libtorch_trainer: %s\n", e.what());
    return 1;
  }
  return 0;
}
