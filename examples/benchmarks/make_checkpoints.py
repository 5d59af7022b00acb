#!/usr/bin/env python3
"""Synthetic Hugging Face folders for timing the clp-transfer program (Debian: python3-numpy).

  make_checkpoints.py gpt2-xl DIR   source (50257 x 1600 F32) and helper (50257 x 768) folders,
                                    embedding-only, vocabularies overlapping in 12213 tokens
  make_checkpoints.py big DIR       a source of about 4 GB in 16 tensors plus a small embedding,
                                    and a helper, to time the streaming copy of the other tensors
"""
import json, os, struct, sys
import numpy as np


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, array in tensors:
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
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


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
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
