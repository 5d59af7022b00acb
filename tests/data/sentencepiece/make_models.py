#!/usr/bin/env python3
"""Trains the SentencePiece models under tests/data/sentencepiece with SentencePiece's own
trainer (Debian's python3-sentencepiece) on the English training text of the Figure-2
miniature (examples/models/tinygpt.py's corpus: Debian Reference and fortunes, fetched with
apt-get download at pinned versions). Run from anywhere:

    python3 tests/data/sentencepiece/make_models.py

The models are committed; the tests never train. See PROVENANCE.md for what each is.
"""
import hashlib
import io
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "models"))
# tinygpt imports torch for its model; its corpus needs none, and Debian's python3 (the one with
# python3-sentencepiece) may have no torch: a stand-in serves the import (nothing of it is called).
try:
    import torch  # noqa: F401
except ImportError:
    import types

    class _Anything:  # a base class, a decorator factory, a decorator: whatever the import asks
        def __init__(self, *args, **kwargs):
            pass

        def __call__(self, *args, **kwargs):
            return args[0] if len(args) == 1 and callable(args[0]) else _Anything()

        def __getattr__(self, name):
            return _Anything()

    class _StandIn(types.ModuleType):
        def __getattr__(self, name):
            return _Anything

    for _name in ("torch", "torch.nn", "torch.nn.functional"):
        sys.modules[_name] = _StandIn(_name)
    sys.modules["torch"].nn = sys.modules["torch.nn"]
    sys.modules["torch.nn"].functional = sys.modules["torch.nn.functional"]
import tinygpt  # noqa: E402

# en_bpe.model: as many pieces as the shipped en-large has rows, so a test can put it in
# en-large's place; Llama 2's options (byte fallback, no normaliser, spaces kept as written).
MODELS = {
    "en_bpe.model": dict(model_type="bpe", vocab_size=5000),
    # en_unigram.model: the same text and options, a Unigram model (T5's, ALBERT's, XLNet's kind).
    "en_unigram.model": dict(model_type="unigram", vocab_size=5000),
}
COMMON = dict(byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
              add_dummy_prefix=True, split_digits=True, character_coverage=0.9995, num_threads=1,
              max_sentence_length=16384, shuffle_input_sentence=False, input_sentence_size=0)


def main():
    train_text, _ = tinygpt.corpus("en")
    sentences = [line for line in train_text.split("\n") if line.strip()]
    for name, options in MODELS.items():
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model,
                                       **COMMON, **options)
        data = model.getvalue()
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
        print(name, len(data), "bytes, sha256", hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
