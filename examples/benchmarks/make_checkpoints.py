#!/usr/bin/env python3
"""Synthetic Hugging Face folders for timing the clp-transfer program (Debian: python3-numpy).

  make_checkpoints.py gpt2-xl DIR   source (50257 x 1600 F32) and helper (50257 x 768) folders,
                                    embedding-only, vocabularies overlapping in 12213 tokens
  make_checkpoints.py big DIR       a source of about 4 GB in 16 tensors plus a small embedding,
                                    and a helper, to time the streaming copy of the other tensors
  make_checkpoints.py llama2-qwen3 DIR
                                    a Llama-2-7B-shaped source (32,000 x 4,096 BF16 embedding and
                                    untied head, Llama 2's tokenizer.json) and a Qwen3-0.6B-shaped
                                    helper (151,680 x 1,024 BF16, Qwen3's tokenizer.json): the real
                                    vocabularies, random embeddings, no transformer layers. Needs
                                    tests/data/fetch_tokenizers.sh to have run (Llama 2's file).
  make_checkpoints.py llama3-gemma3 DIR
                                    a Llama-3-8B-shaped source at full size (about 16 GB): every
                                    tensor of the published checkpoint, BF16, in its four shards
                                    with model.safetensors.index.json; random 128,256 x 4,096
                                    embedding and untied head, the other tensors a random block
                                    repeated; Llama 3's tokenizer files. And a Gemma-3-1B-shaped
                                    helper (262,144 x 1,152 BF16, Gemma 3's tokenizer files).
                                    Needs tests/data/fetch_tokenizers.sh (llama3, gemma3).
"""
import json, os, struct, sys
import numpy as np


def bfloat16(array):
    """float32 -> BF16 bits (uint16), rounded to nearest even (no NaNs here)."""
    bits = array.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path, tensors):
    """tensors: (name, array) pairs; a uint16 array is stored as BF16 bits, float32 as F32."""
    header, offset = {}, 0
    for name, array in tensors:
        dtype = "BF16" if array.dtype == np.uint16 else "F32"
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, array in tensors:
            array.tofile(f)


def write_folder(folder, tokens, embedding, hidden, extra=()):
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), [("transformer.wte.weight", embedding), *extra])
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2", "vocab_size": len(tokens), "n_embd": hidden}, f)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(tokens)}, "merges": []}}, f)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def anisotropic_bf16(rng, rows, cols, spread):
    """Normal rows around a shared random direction, as real embeddings cluster; BF16 bits."""
    out = np.empty((rows, cols), np.uint16)
    centre = spread * rng.standard_normal(cols, np.float32)
    for r0 in range(0, rows, 8192):
        r1 = min(rows, r0 + 8192)
        out[r0:r1] = bfloat16(0.02 * (rng.standard_normal((r1 - r0, cols), np.float32) + centre))
    return out


def write_real_folder(folder, tokenizer, config, tensors):
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(tokenizer, "rb") as src, open(os.path.join(folder, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())


def llama2_qwen3(out, rng):
    llama2 = os.path.join(REPO, "tests", "data", "fetched", "llama2", "tokenizer.json")
    if not os.path.exists(llama2):
        sys.exit("make_checkpoints.py: %s is missing; run tests/data/fetch_tokenizers.sh first" % llama2)
    qwen3 = os.path.join(REPO, "tests", "data", "qwen3", "tokenizer.json")
    vocab, hidden = 32000, 4096
    write_real_folder(os.path.join(out, "source"), llama2,
                      {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
                       "vocab_size": vocab, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
                       "torch_dtype": "bfloat16"},
                      [("model.embed_tokens.weight", anisotropic_bf16(rng, vocab, hidden, 1.0)),
                       ("lm_head.weight", anisotropic_bf16(rng, vocab, hidden, 1.0))])
    helper_vocab, helper_hidden = 151680, 1024
    write_real_folder(os.path.join(out, "helper"), qwen3,
                      {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": helper_hidden,
                       "vocab_size": helper_vocab, "tie_word_embeddings": True, "bos_token_id": 151643,
                       "eos_token_id": 151645, "torch_dtype": "bfloat16"},
                      [("model.embed_tokens.weight", anisotropic_bf16(rng, helper_vocab, helper_hidden, 1.0))])


def write_streamed_safetensors(path, tensors, metadata):
    """tensors: (name, shape, write) triples, all BF16, laid out in the given order; write(f, nbytes)
    appends exactly the tensor's bytes, so nothing larger than one tensor is held in memory."""
    header, offset = {"__metadata__": metadata}, 0
    for name, shape, _ in tensors:
        nbytes = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:  # buffered: large writes go straight through, short ones are retried
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape, write in tensors:
            start = f.tell()
            write(f, header[name]["data_offsets"][1] - header[name]["data_offsets"][0])
            assert f.tell() - start == header[name]["data_offsets"][1] - header[name]["data_offsets"][0], name


def repeated_block_writer(rng):
    """A writer for tensors whose content only has to be real bytes, cheap to make and different
    from tensor to tensor: 32 MiB of random BF16 values, each tensor the block rotated by its own
    offset and repeated, in writes of 32 MiB."""
    elements = 1 << 24
    block = bfloat16(0.02 * rng.standard_normal(elements, np.float32))
    doubled = memoryview(np.concatenate([block, block]).view(np.uint8))
    count = [0]

    def writer():
        start = 2 * ((count[0] * 1000003) % elements)  # odd step: a different rotation per tensor
        count[0] += 1

        def write(f, nbytes):
            while nbytes > 0:
                n = min(nbytes, 2 * elements)
                f.write(doubled[start:start + n])
                nbytes -= n
        return write
    return writer


def array_writer(array):
    def write(f, nbytes):
        assert array.nbytes == nbytes
        mv = memoryview(array.reshape(-1).view(np.uint8))
        for at in range(0, nbytes, 1 << 26):
            f.write(mv[at:at + (1 << 26)])
    return write


def copy_tokenizer_files(name, folder, drop_ids_from=None):
    """tokenizer.json and tokenizer_config.json of tests/data/fetched/NAME into folder; with
    drop_ids_from, the added tokens with ids from there on are left out of both."""
    fetched = os.path.join(REPO, "tests", "data", "fetched", name)
    if not os.path.exists(os.path.join(fetched, "tokenizer.json")):
        sys.exit("make_checkpoints.py: %s is missing; run tests/data/fetch_tokenizers.sh first" % fetched)
    os.makedirs(folder, exist_ok=True)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(fetched, file), "rb") as src:
            data = src.read()
        if drop_ids_from is not None:
            content = json.loads(data)
            if file == "tokenizer.json":
                content["added_tokens"] = [t for t in content["added_tokens"] if t["id"] < drop_ids_from]
            else:
                content["added_tokens_decoder"] = {
                    k: v for k, v in content["added_tokens_decoder"].items() if int(k) < drop_ids_from}
            data = json.dumps(content, ensure_ascii=False, indent=1).encode()
        with open(os.path.join(folder, file), "wb") as dst:
            dst.write(data)


def llama3_tensors(layers, hidden, intermediate, kv_hidden, vocab):
    """Llama-3-8B's tensors as LlamaForCausalLM's state dict lists them: (name, shape)."""
    yield "model.embed_tokens.weight", (vocab, hidden)
    for i in range(layers):
        p = "model.layers.%d." % i
        yield p + "self_attn.q_proj.weight", (hidden, hidden)
        yield p + "self_attn.k_proj.weight", (kv_hidden, hidden)
        yield p + "self_attn.v_proj.weight", (kv_hidden, hidden)
        yield p + "self_attn.o_proj.weight", (hidden, hidden)
        yield p + "mlp.gate_proj.weight", (intermediate, hidden)
        yield p + "mlp.up_proj.weight", (intermediate, hidden)
        yield p + "mlp.down_proj.weight", (hidden, intermediate)
        yield p + "input_layernorm.weight", (hidden,)
        yield p + "post_attention_layernorm.weight", (hidden,)
    yield "model.norm.weight", (hidden,)
    yield "lm_head.weight", (vocab, hidden)


def llama3_gemma3(out, rng, hidden=4096, intermediate=14336, layers=32, helper_hidden=1152, shard_bytes=5 * 10**9):
    """The keyword arguments shrink the shapes (not the vocabularies), to try the layout quickly."""
    vocab, heads, kv_heads = 128256, 32, 8
    source = os.path.join(out, "source")
    copy_tokenizer_files("llama3", source)
    with open(os.path.join(source, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                   "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": hidden,
                   "initializer_range": 0.02, "intermediate_size": intermediate, "max_position_embeddings": 8192,
                   "model_type": "llama", "num_attention_heads": heads, "num_hidden_layers": layers,
                   "num_key_value_heads": kv_heads, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
                   "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": False,
                   "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": vocab}, f, indent=2)
    # Shards as save_pretrained(max_shard_size="5GB") cuts the state dict, which is how the
    # published checkpoint is cut: embed_tokens and layers 0-8 in the first shard, lm_head and
    # the end of layer 31 in the fourth. Within a shard tensors are in name order, as the
    # safetensors library lays them out.
    shards, size = [[]], 0
    for name, shape in llama3_tensors(layers, hidden, intermediate, hidden * kv_heads // heads, vocab):
        nbytes = 2 * int(np.prod(shape))
        if shards[-1] and size + nbytes > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append((name, shape))
        size += nbytes
    block = repeated_block_writer(rng)
    weight_map, total = {}, 0
    for n, tensors in enumerate(shards, 1):
        file = "model-%05d-of-%05d.safetensors" % (n, len(shards))
        entries = []
        for name, shape in sorted(tensors):
            if name in ("model.embed_tokens.weight", "lm_head.weight"):
                entries.append((name, shape, array_writer(anisotropic_bf16(rng, shape[0], shape[1], 1.0))))
            else:
                entries.append((name, shape, block()))
            weight_map[name] = file
            total += 2 * int(np.prod(shape))
        write_streamed_safetensors(os.path.join(source, file), entries, {"format": "pt"})
        entries.clear()  # the embedding arrays go before the next shard's are made
    with open(os.path.join(source, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)

    # Gemma 3 1B: vocab_size 262,144, one row short of Gemma 3's tokenizer, whose last added
    # token (<image_soft_token>, id 262144) serves the multimodal models' images: clp-transfer
    # refuses a token id past the embedding's rows, so the helper's tokenizer files leave it out.
    helper_vocab = 262144
    helper = os.path.join(out, "helper")
    copy_tokenizer_files("gemma3", helper, drop_ids_from=helper_vocab)
    with open(os.path.join(helper, "config.json"), "w") as f:
        json.dump({"architectures": ["Gemma3ForCausalLM"], "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
                   "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": helper_hidden,
                   "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
                   "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
                   "torch_dtype": "bfloat16", "vocab_size": helper_vocab}, f, indent=2)
    embedding = anisotropic_bf16(rng, helper_vocab, helper_hidden, 1.0)
    write_streamed_safetensors(os.path.join(helper, "model.safetensors"),
                               [("model.embed_tokens.weight", embedding.shape, array_writer(embedding))],
                               {"format": "pt"})


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    if kind == "llama2-qwen3":
        return llama2_qwen3(out, rng)
    if kind == "llama3-gemma3":
        return llama3_gemma3(out, rng)
    if kind == "gpt2-xl":
        vocab, overlap, d_source, d_helper = 50257, 12213, 1600, 768
    else:
        vocab, overlap, d_source, d_helper = 4000, 1000, 64, 32
    source_tokens = [f"s{i}" for i in range(vocab)]
    # Target token t < overlap is source token (t * 7919) % vocab, as in the NumPy peers' data.
    helper_tokens = [f"s{(t * 7919) % vocab}" if t < overlap else f"t{t}" for t in range(vocab)]
    source = (rng.standard_normal((vocab, d_source), np.float32) + 0.5 * rng.standard_normal(d_source, np.float32))
    helper = (rng.standard_normal((vocab, d_helper), np.float32) + rng.standard_normal(d_helper, np.float32))
    extra = []
    if kind == "big":
        block = rng.standard_normal((8192, 8192), np.float32)  # 256 MiB, reused: content does not matter
        extra = [(f"transformer.h.{i}.mlp.c_fc.weight", block) for i in range(16)]
    write_folder(os.path.join(out, "source"), source_tokens, source.astype(np.float32), d_source, extra)
    write_folder(os.path.join(out, "helper"), helper_tokens, helper.astype(np.float32), d_helper)


if __name__ == "__main__":
    main()
