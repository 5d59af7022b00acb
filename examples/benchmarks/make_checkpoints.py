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


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    if kind == "llama2-qwen3":
        return llama2_qwen3(out, rng)
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
