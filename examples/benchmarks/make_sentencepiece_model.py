#!/usr/bin/env python3
"""Writes a SentencePiece BPE model (tokenizer.model) of a Llama-style BPE tokenizer.json with
SentencePiece's own protobuf module (Debian: python3-sentencepiece and python3-protobuf), for
measuring `clp-transfer extend` on a SentencePiece source of a real vocabulary:

    python3 examples/benchmarks/make_sentencepiece_model.py TOKENIZER.json OUT.model

The pieces are the tokenizer.json's tokens at their ids: <unk> unknown, <s> and </s> control,
<0xNN> byte pieces, every other token normal, scored minus the rank of the first merge that
makes it (the single characters, which no merge makes, below them all), so that SentencePiece
joins pieces in the tokenizer.json's merge order. Normaliser: identity, the dummy prefix, spaces
kept as written, escaped as '▁'; byte fallback: Llama 2's settings. That SentencePiece then
encodes as the tokenizer.json does is checked by tests/tokenizer_client (the same construction,
against Hugging Face's JavaScript tokenizers).
"""
import json
import sys

from sentencepiece import sentencepiece_model_pb2 as model_pb2


def main():
    source, out = sys.argv[1:3]
    with open(source, encoding="utf-8") as f:
        tokenizer = json.load(f)
    vocab = tokenizer["model"]["vocab"]
    merges = tokenizer["model"]["merges"]
    first_rank = {}
    for rank, merge in enumerate(merges):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        first_rank.setdefault(left + right, rank)
    tokens = [None] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    proto = model_pb2.ModelProto()
    kinds = model_pb2.ModelProto.SentencePiece
    for token in tokens:
        piece = proto.pieces.add()
        piece.piece = token
        if token == "<unk>":
            piece.type = kinds.UNKNOWN
        elif token in ("<s>", "</s>"):
            piece.type = kinds.CONTROL
        elif len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            piece.type = kinds.BYTE
        else:
            piece.type = kinds.NORMAL
            piece.score = -float(first_rank.get(token, len(merges)))
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.BPE
    proto.trainer_spec.vocab_size = len(tokens)
    proto.trainer_spec.byte_fallback = True
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = True
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    with open(out, "wb") as f:
        f.write(proto.SerializeToString())
    print("%s: %d pieces, %d merges' order" % (out, len(tokens), len(merges)))


if __name__ == "__main__":
    main()
