#!/usr/bin/env python3
"""Writes the fuzz seed corpus (tests/fuzz/corpus/) by cutting the repository's real files
down to a few KB each: the shipped models (examples/models/de-small, en-large), the GPT-2
vocabulary (tests/data/gpt2), and the SentencePiece models and torch checkpoints of
tests/data/checkpoint_formats (whole, or the pickle inside). Run from the repository root; the output is committed, so this
only needs rerunning when the seeds should change.

Safetensors seeds keep the real tensor names, dtypes and leading bytes, with every dimension
cut to at most 4 (embeddings 8 x 4). Seeds named *.header are in the targets' second input
form: header JSON, a NUL byte, then the data section (fuzz_support.hpp, safetensors_from_input).
"""
import json
import struct
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fuzz/corpus"
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "U8": 1}


def real_tensors(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header.pop("__metadata__", None)
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, end = entry["data_offsets"]
        yield name, entry["dtype"], entry["shape"], raw[8 + n + begin : 8 + n + end]


def cut(tensors, keep, embedding_rows=8):
    """(name, dtype, shape, bytes) with small shapes, taking the real leading bytes."""
    out = []
    for name, dtype, shape, data in tensors:
        if not any(k in name for k in keep):
            continue
        small = [min(d, 4) for d in shape]
        if name.endswith(("wte.weight", "embed_tokens.weight")):
            small = [embedding_rows, 4]
        count = 1
        for d in small:
            count *= d
        size = count * SIZES[dtype]
        out.append((name, dtype, small, (data * (size // max(len(data), 1) + 1))[:size]))
    return out


def safetensors(tensors, metadata=None, as_header_form=False):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, separators=(",", ":")).encode()
    if as_header_form:
        return text + b"\0" + data
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def to_bf16(blob):
    """F32 bytes -> BF16 bytes (truncated: enough for a seed)."""
    return b"".join(blob[i + 2 : i + 4] for i in range(0, len(blob), 4))


def write(target, name, data):
    folder = OUT / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def main():
    de = list(real_tensors(ROOT / "examples/models/de-small/model.safetensors"))
    en = list(real_tensors(ROOT / "examples/models/en-large/model.safetensors"))
    some = ["wte", "wpe", "h.0.ln_1", "h.0.attn.c_attn", "ln_f"]
    de_small = cut(de, some)
    en_small = cut(en, ["wte", "h.1.mlp.c_fc", "ln_f.bias"])
    bf16 = [(n, "BF16", s, to_bf16(b)) for n, _, s, b in cut(de, ["wte", "ln_f.weight"])]
    embedding, norm = bf16  # in data order: wte [8, 4], ln_f.weight [4]
    llama = [("model.embed_tokens.weight", "BF16", [8, 4], embedding[3]), ("model.norm.weight", "BF16", [4], norm[3]),
             ("lm_head.weight", "BF16", [8, 4], embedding[3])]
    for target in ("safetensors_header", "embedding_read"):
        write(target, "de-small.safetensors", safetensors(de_small, {"format": "pt"}))
        write(target, "en-large.safetensors", safetensors(en_small))
        write(target, "llama-bf16.header", safetensors(llama, {"format": "pt"}, as_header_form=True))
        write(target, "de-small.header", safetensors(de_small[:3], as_header_form=True))
    write("safetensors_header", "empty-tensor.header",
          safetensors([("a", "U8", [2], b"ab"), ("e", "F32", [0, 4], b""), ("i", "I64", [1], b"\1" * 8)],
                      as_header_form=True))

    for model in ("de-small", "en-large"):
        tokenizer = json.loads((ROOT / f"examples/models/{model}/tokenizer.json").read_text())
        vocab = tokenizer["model"]["vocab"]
        kept = dict(sorted(vocab.items(), key=lambda kv: kv[1])[:40])
        tokenizer["model"]["vocab"] = kept
        tokenizer["model"]["merges"] = tokenizer["model"]["merges"][:10]
        tokenizer["added_tokens"][0]["id"] = len(kept)
        kept["<|endoftext|>"] = len(kept)
        write("tokenizer_json", f"{model}-bpe.json", json.dumps(tokenizer, ensure_ascii=False, indent=1))
        unigram = {"version": "1.0", "added_tokens": tokenizer["added_tokens"],
                   "model": {"type": "Unigram", "unk_id": 0,
                             "vocab": [[t, -float(i) / 7] for t, i in list(kept.items())[:30]]}}
        write("tokenizer_json", f"{model}-unigram.json", json.dumps(unigram, ensure_ascii=False))
        words = json.loads((ROOT / f"examples/models/{model}/vocab.json").read_text())
        write("vocab_json", f"{model}.json",
              json.dumps(dict(sorted(words.items(), key=lambda kv: kv[1])[300:380]), ensure_ascii=False))
        write("config_json", f"{model}.json", (ROOT / f"examples/models/{model}/config.json").read_text())
    gpt2 = json.loads((ROOT / "tests/data/gpt2/encoder.json").read_text())
    write("vocab_json", "gpt2.json", json.dumps(dict(list(gpt2.items())[:60] + list(gpt2.items())[-5:]), ensure_ascii=False))
    llama_config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4, "vocab_size": 8, "bos_token_id": 1,
                    "eos_token_id": 2, "pad_token_id": None, "torch_dtype": "bfloat16", "rope_scaling": None,
                    "tie_word_embeddings": False, "rms_norm_eps": 1e-6}
    write("config_json", "llama.json", json.dumps(llama_config, indent=2))
    write("config_json", "t5-d_model.json", json.dumps({"d_model": 4, "vocab_size": 8, "decoder_start_token_id": 0}))

    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    names = [("transformer.wte.weight", 0), ("transformer.h.0.ln_1.weight", 0), ("lm_head.weight", 1),
             ("transformer.ln_f.bias", 1)]
    index = {"metadata": {"total_size": 128}, "weight_map": {n: shards[s] for n, s in names}}
    write("shard_index", "two-shards.json", json.dumps(index, indent=2))
    write("shard_index", "one-shard.json",
          json.dumps({"metadata": {"total_size": 64}, "weight_map": {n: shards[0] for n, s in names if s == 0}}))


def pickle_of(checkpoint):
    with zipfile.ZipFile(checkpoint) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))


def protobuf_field(number, wire, payload):
    """One protobuf field: a varint (wire 0, payload an int) or length-delimited bytes (wire 2)."""
    def varint(v):
        out = b""
        while True:
            out += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
            v >>= 7
            if not v:
                return out
    return varint(number << 3 | wire) + (varint(payload) if wire == 0 else varint(len(payload)) + payload)


def checkpoint_format_seeds():
    formats = ROOT / "tests/data/checkpoint_formats"
    write("sentencepiece_model", "bpe-byte-fallback.model", (formats / "helper_sentencepiece/tokenizer.model").read_bytes())
    write("sentencepiece_model", "unigram.model", (formats / "spiece/spiece.model").read_bytes())
    pieces = b"".join(protobuf_field(1, 2, protobuf_field(1, 2, p.encode()) + b"\x15" + struct.pack("<f", -1.0) +
                                     protobuf_field(3, 0, t))
                      for p, t in [("<unk>", 2), ("<s>", 3), ("<0x41>", 6), ("<mask>", 4), ("\u2581a", 1)])
    write("sentencepiece_model", "all-types.model",
          pieces + protobuf_field(2, 2, protobuf_field(3, 0, 2) + protobuf_field(35, 0, 1)) +
          protobuf_field(3, 2, protobuf_field(5, 0, 1)))
    for name, checkpoint in [("wordpiece-module", "helper_wordpiece/pytorch_model.bin"),
                             ("sentencepiece-f32", "helper_sentencepiece/pytorch_model.bin"),
                             ("source-shard-2", "source_bin/pytorch_model-00002-of-00002.bin"),
                             ("tied", "refusals/tied.bin"), ("view", "refusals/view.bin"),
                             ("builtins-eval-protocol-4", "refusals/builtins_eval.bin")]:
        write("torch_pickle", name + ".pkl", pickle_of(formats / checkpoint))
    for name in ["tied", "view", "transposed", "os_system", "legacy"]:
        write("torch_checkpoint", name + ".bin", (formats / "refusals" / (name + ".bin")).read_bytes())
    write("torch_checkpoint", "wordpiece-module.bin", (formats / "helper_wordpiece/pytorch_model.bin").read_bytes())


if __name__ == "__main__":
    main()
    checkpoint_format_seeds()
