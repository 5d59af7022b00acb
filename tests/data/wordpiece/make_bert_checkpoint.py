#!/usr/bin/env python3
"""Writes a BERT-shaped model folder with random weights around a WordPiece vocab.txt, for
measuring `clp-transfer extend` on a real vocabulary at real size (docs/extend.md):

    python3 tests/data/wordpiece/make_bert_checkpoint.py tests/data/wordpiece/bert-base-uncased/vocab.txt OUT [HIDDEN]

OUT gets vocab.txt, tokenizer_config.json (BertTokenizer, do_lower_case true, as
bert-base-uncased's), config.json and model.safetensors holding
bert.embeddings.word_embeddings.weight (#vocab by HIDDEN, default 768, float32, normal with
standard deviation 0.05 from a fixed seed). Pure Python: no numpy needed.
"""
import array
import json
import os
import random
import shutil
import struct
import sys


def main():
    vocab, out = sys.argv[1], sys.argv[2]
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 768
    rows = sum(1 for _ in open(vocab, encoding="utf-8"))
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(vocab, os.path.join(out, "vocab.txt"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": True, "unk_token": "[UNK]",
                   "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": rows,
                   "hidden_size": hidden, "num_hidden_layers": 0, "num_attention_heads": 12,
                   "intermediate_size": 4 * hidden, "max_position_embeddings": 512, "type_vocab_size": 2}, f)
    rng = random.Random(0)
    values = array.array("f", (rng.gauss(0.0, 0.05) for _ in range(rows * hidden)))
    name = "bert.embeddings.word_embeddings.weight"
    header = json.dumps({name: {"dtype": "F32", "shape": [rows, hidden], "data_offsets": [0, 4 * rows * hidden]}})
    header += " " * (-len(header) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header.encode())
        values.tofile(f)


if __name__ == "__main__":
    main()
