#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts the exact and the byte-level overlap of two vocabularies: the oracle of the C++ tests.

Written from the tokenizers' definitions, independently of include/clp/token_bytes.hpp, with
the standard library only:

    python3 tests/data/count_overlaps.py SOURCE:SPELLING TARGET:SPELLING [...more pairs]

Each file is a Hugging Face tokenizer.json (model.vocab plus added_tokens) or a vocab.json /
encoder.json (one object token -> id). SPELLING is one of plain, byte_level, sentencepiece,
wordpiece. Every SOURCE TARGET pair prints one line of JSON:

    shared_strings  target tokens whose string is also a source token (the exact match's count)
    size            target tokens matched by bytes: a source token stands for the same bytes,
                    or, when none does, has the same string
    exact_matches   pairs of size whose two tokens are the same string
    byte_matches    the other pairs: different strings, the same bytes
    pair_checksum   sum of (target id + 1) * (source id + 1) over the pairs, modulo 2**64
    first_byte_pairs  the first 3 [target id, source id] byte_matches pairs

The source token of a target token t: the source token spelled like t if it stands for t's
bytes; else the lowest source id among those standing for t's bytes; else the source token
spelled like t, if any.
"""

import json
import sys

SPACE_MARK = "\u2581"  # SentencePiece's word-start mark


def byte_level_alphabet():
    """GPT-2's byte -> character table: the printable Latin-1 bytes stand for themselves,
    the other 68 bytes take U+0100, U+0101, ... in increasing byte order."""
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return {ch: b for b, ch in table.items()}


CHAR_TO_BYTE = byte_level_alphabet()
HEX = "0123456789abcdefABCDEF"


def token_bytes(token, spelling):
    raw = token.encode("utf-8")
    if spelling == "plain":
        return raw
    if spelling == "byte_level":
        try:
            return bytes(CHAR_TO_BYTE[ch] for ch in token)
        except KeyError:
            return raw  # a character outside the alphabet: the token is a plain string
    if spelling == "sentencepiece":
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">") and \
                token[3] in HEX and token[4] in HEX:
            return bytes([int(token[3:5], 16)])
        return token.replace(SPACE_MARK, " ").encode("utf-8")
    if spelling == "wordpiece":
        if token.startswith("##"):
            return raw[2:] if len(token) > 2 else raw
        return b" " + raw
    raise SystemExit("unknown spelling " + repr(spelling))


def read_vocabulary(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if isinstance(doc.get("model"), dict) and "vocab" in doc["model"]:
        vocab = doc["model"]["vocab"]
        if isinstance(vocab, list):  # Unigram: [piece, score] pairs, id = position
            entries = {piece: i for i, (piece, _score) in enumerate(vocab)}
        else:
            entries = dict(vocab)
        for added in doc.get("added_tokens", []):
            entries[added["content"]] = added["id"]
        return entries
    return dict(doc)


def count(source, source_spelling, target, target_spelling):
    lowest_with_bytes = {}
    for token, sid in source.items():
        key = token_bytes(token, source_spelling)
        if key not in lowest_with_bytes or sid < lowest_with_bytes[key]:
            lowest_with_bytes[key] = sid
    shared = exact = by_bytes = checksum = 0
    first = []
    for token, tid in sorted(target.items(), key=lambda entry: entry[1]):
        key = token_bytes(token, target_spelling)
        sid = None
        if token in source:
            shared += 1
        if token in source and token_bytes(token, source_spelling) == key:
            sid, same = source[token], True
        elif key in lowest_with_bytes:
            sid, same = lowest_with_bytes[key], False
        elif token in source:
            sid, same = source[token], True
        if sid is None:
            continue
        if same:
            exact += 1
        else:
            by_bytes += 1
            if len(first) < 3:
                first.append([tid, sid])
        checksum = (checksum + (tid + 1) * (sid + 1)) % (1 << 64)
    return {"shared_strings": shared, "size": exact + by_bytes, "exact_matches": exact,
            "byte_matches": by_bytes, "pair_checksum": checksum, "first_byte_pairs": first}


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        raise SystemExit(__doc__)
    for i in range(0, len(argv), 2):
        (sp, ss), (tp, ts) = (a.rsplit(":", 1) for a in argv[i:i + 2])
        result = {"source": sp, "target": tp}
        result.update(count(read_vocabulary(sp), ss, read_vocabulary(tp), ts))
        print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
