#!/usr/bin/python3
"""Writes a planted copy of a source model: some of the rows it shares with a helper made to look
under-trained, for measuring `clp-transfer --undertrained` (docs/undertrained.md).

    examples/figure2/make_planted.py --seed 3 OUT
    examples/figure2/make_planted.py --source examples/models/en-large \\
        --helper examples/models/de-small --seed 3 --share 0.025 OUT

The rule (the same as the program's end-to-end test): of the source rows whose tokens the helper
also has (the same token string), a share `--share` (default 2.5%) is shrunk to norm 1e-6, its
direction kept; another share is collapsed onto one vector plus normal noise of standard deviation
1e-3 per element. The vector is drawn like a fresh row of the matrix: its mean row plus, per
column, the column's standard deviation times a standard normal. No reserved ids are added. The
choice and the noise come from numpy's default_rng(seed).

OUT receives every file of the source folder, its model.safetensors rewritten with the planted
embedding (other tensors byte for byte). The planted ids go to stdout as JSON:
{"seed": S, "shrunk": [...], "collapsed": [...]}. Needs Debian's python3 and python3-numpy; the
safetensors file is read and written by hand (an 8-byte little-endian header length, a JSON
header, then the tensors' bytes).
"""

import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "models")


def vocabulary(folder):
    """token -> id of a model folder: tokenizer.json (model.vocab and added_tokens), else vocab.json."""
    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        vocab = dict(document["model"]["vocab"])
        for added in document.get("added_tokens", []):
            vocab[added["content"]] = added["id"]
        return vocab
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        return json.load(f)


def read_safetensors(path):
    """(header, data): the JSON header as a dict, and the bytes after it."""
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + length]), bytearray(blob[8 + length :])


def write_safetensors(path, header, data):
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data stays 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def decode(raw, dtype, shape):
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float64).reshape(shape)
    if dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64).reshape(shape)
    sys.exit(f"make_planted.py: embedding dtype {dtype} is not F32, F16 or BF16")


def encode(values, dtype):
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    if dtype == "F16":
        return values.astype("<f2").tobytes()
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
    return bits.astype("<u2").tobytes()


def plant(matrix, shared, share, rng):
    """Plants in place; returns (shrunk, collapsed), each a sorted list of row ids."""
    count = int(round(share * len(shared)))
    if 2 * count > len(shared):
        sys.exit(f"make_planted.py: --share {share} plants more rows than the {len(shared)} shared")
    chosen = rng.choice(np.array(sorted(shared)), size=2 * count, replace=False)
    shrunk, collapsed = sorted(int(r) for r in chosen[:count]), sorted(int(r) for r in chosen[count:])
    centre = matrix.mean(axis=0) + matrix.std(axis=0) * rng.standard_normal(matrix.shape[1])
    for r in shrunk:
        matrix[r] *= 1e-6 / np.linalg.norm(matrix[r])
    for r in collapsed:
        matrix[r] = centre + 1e-3 * rng.standard_normal(matrix.shape[1])
    return shrunk, collapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="output folder (must not exist)")
    parser.add_argument("--source", default=os.path.join(MODELS, "en-large"))
    parser.add_argument("--helper", default=os.path.join(MODELS, "de-small"))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--share", type=float, default=0.025, help="share of the shared rows per kind")
    parser.add_argument("--tensor", default="transformer.wte.weight", help="the input embedding's name")
    args = parser.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"make_planted.py: {args.out} already exists")

    source_vocab, helper_vocab = vocabulary(args.source), vocabulary(args.helper)
    shared = {source_vocab[token] for token in source_vocab.keys() & helper_vocab.keys()}
    header, data = read_safetensors(os.path.join(args.source, "model.safetensors"))
    if args.tensor not in header:
        sys.exit(f"make_planted.py: {args.source}/model.safetensors has no tensor {args.tensor}")
    entry = header[args.tensor]
    begin, end = entry["data_offsets"]
    matrix = decode(bytes(data[begin:end]), entry["dtype"], entry["shape"]).copy()
    shrunk, collapsed = plant(matrix, shared, args.share, np.random.default_rng(args.seed))
    data[begin:end] = encode(matrix, entry["dtype"])

    os.makedirs(args.out)
    for name in sorted(os.listdir(args.source)):
        if name != "model.safetensors" and os.path.isfile(os.path.join(args.source, name)):
            shutil.copy2(os.path.join(args.source, name), os.path.join(args.out, name))
    write_safetensors(os.path.join(args.out, "model.safetensors"), header, data)
    print(json.dumps({"seed": args.seed, "shrunk": shrunk, "collapsed": collapsed}))


if __name__ == "__main__":
    main()
