#!/usr/bin/env python3
"""Writes en_vocab.txt beside this script: the shipped en-large's 5,000 byte-level BPE tokens
respelled as a cased WordPiece vocabulary, so that the extend tests have a WordPiece source whose
rows are en-large's. A token that starts with 'Ġ' (a space) becomes the word-start piece without
it, any other the continuation piece "##" + its text. Tokens that no WordPiece line can hold
(bytes that are not whole UTF-8 characters, whitespace or control characters inside, a lone
space) give their ids to BERT's special pieces, [PAD] [UNK] [CLS] [SEP] [MASK], then
[unused0], [unused1], ... Run it again after en-large's tokenizer changes:

    python3 tests/data/wordpiece/make_en_vocab.py
"""
import json
import os
import unicodedata

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(os.path.dirname(here)))


def byte_decoder():
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + n)] = b
            n += 1
    return table


def main():
    tokenizer = json.load(open(os.path.join(root, "examples", "models", "en-large", "tokenizer.json"), encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    decode = byte_decoder()
    lines = [None] * len(vocab)
    spare = []
    for token, i in vocab.items():
        raw = bytes(decode[c] for c in token)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            spare.append(i)
            continue
        start = text.startswith(" ")
        body = text[1:] if start else text
        if not body or any(c.isspace() or unicodedata.category(c).startswith("C") for c in body):
            spare.append(i)
            continue
        lines[i] = body if start else "##" + body
    names = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for k, i in enumerate(sorted(spare)):
        lines[i] = names[k] if k < len(names) else "[unused%d]" % (k - len(names))
    assert len(set(lines)) == len(lines)
    with open(os.path.join(here, "en_vocab.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
