#!/usr/bin/env python3
"""SentencePiece's own library as the tests' client for .model files.

    python3 sentencepiece_client.py MODEL REQUEST.json ANSWER.json

REQUEST holds any of "encode" (texts), "decode" (lists of ids) and "pieces" (true: every id's
piece, score and type); ANSWER the same keys with SentencePiece's answers, and "size". Exits 3
when the sentencepiece module is absent (the caller marks its case skipped).
"""
import json
import sys

try:
    import sentencepiece as spm
except ImportError:
    sys.exit(3)


def main():
    model_file, request_file, answer_file = sys.argv[1:4]
    processor = spm.SentencePieceProcessor()
    if not processor.Load(model_file):
        sys.exit("SentencePiece could not load " + model_file)
    with open(request_file, encoding="utf-8") as f:
        request = json.load(f)
    answer = {"size": processor.GetPieceSize()}
    if "encode" in request:
        answer["encode"] = [processor.EncodeAsIds(text) for text in request["encode"]]
    if "decode" in request:
        answer["decode"] = [processor.DecodeIds(ids) for ids in request["decode"]]
    if request.get("pieces"):
        types = []
        for i in range(processor.GetPieceSize()):
            types.append("control" if processor.IsControl(i) else "unknown" if processor.IsUnknown(i)
                         else "byte" if processor.IsByte(i) else "unused" if processor.IsUnused(i) else "normal")
        answer["pieces"] = [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
        answer["scores"] = [processor.GetScore(i) for i in range(processor.GetPieceSize())]
        answer["types"] = types
    with open(answer_file, "w", encoding="utf-8") as f:
        json.dump(answer, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
