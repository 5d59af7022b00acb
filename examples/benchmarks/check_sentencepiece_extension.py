#!/usr/bin/env python3
"""What SentencePiece's own library (Debian: python3-sentencepiece) makes of a model that
`clp-transfer extend` wrote:

    python3 examples/benchmarks/check_sentencepiece_extension.py SOURCE.model EXTENDED.model REPORT.json [TEXT...]

Prints how many old pieces keep their id, piece and type; how many of the report's new tokens
SentencePiece gives for their own text (a '▁' piece as a text of its own, the model writing its
'▁'; any other piece inside a word, the model's dummy prefix turned off); and, for each TEXT
file, whether it round-trips and its token count before and after.
"""
import json
import sys

import sentencepiece as spm


def processor(data):
    p = spm.SentencePieceProcessor()
    p.LoadFromSerializedProto(data)
    return p


def main():
    source_file, extended_file, report_file = sys.argv[1:4]
    texts = sys.argv[4:]
    source_bytes = open(source_file, "rb").read()
    extended_bytes = open(extended_file, "rb").read()
    before, after = processor(source_bytes), processor(extended_bytes)
    # A second normalizer_spec holding add_dummy_prefix = false, merged into the first by the parser.
    inside = processor(extended_bytes + b"\x1a\x02\x18\x00")
    kept = sum(before.IdToPiece(i) == after.IdToPiece(i) and before.IsControl(i) == after.IsControl(i)
               and before.IsByte(i) == after.IsByte(i) for i in range(before.GetPieceSize()))
    report = json.load(open(report_file, encoding="utf-8"))
    reached = 0
    missed = []
    for token in report["tokens"]:
        piece, i = token["token"], token["id"]
        if piece.startswith("\u2581") and len(piece) > 1:
            ids = after.EncodeAsIds(piece[1:].replace("\u2581", " "))
        else:
            ids = inside.EncodeAsIds(piece.replace("\u2581", " "))
        if ids == [i]:
            reached += 1
        elif len(missed) < 5:
            missed.append((piece, ids))
    print("pieces: %d -> %d; old pieces kept: %d of %d" % (before.GetPieceSize(), after.GetPieceSize(), kept,
                                                            before.GetPieceSize()))
    print("new tokens SentencePiece gives for their own text: %d of %d (%.1f%%)%s" % (
        reached, len(report["tokens"]), 100.0 * reached / max(1, len(report["tokens"])),
        "; e.g. missed " + repr(missed) if missed else ""))
    for name in texts:
        text = open(name, encoding="utf-8").read()
        ids = after.EncodeAsIds(text)
        print("%s: round-trips %s; tokens %d -> %d" % (name, after.DecodeIds(ids) == text,
                                                    len(before.EncodeAsIds(text)), len(ids)))


if __name__ == "__main__":
    main()
