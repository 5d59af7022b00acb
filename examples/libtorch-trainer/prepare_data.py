#!/usr/bin/python3
"""Token ids for examples/libtorch-trainer: the German text of examples/figure2, tokenised with
de-small's tokenizer, written as little-endian uint16 files the trainer reads.

    /usr/bin/python3 examples/libtorch-trainer/prepare_data.py OUT_DIR

writes OUT_DIR/train.u16 and OUT_DIR/valid.u16 (every id of the German training and validation
text, in order), the same ids examples/figure2/figure2.py trains and evaluates on. The text is
tinygpt.corpus("de"): pinned Debian packages, fetched with apt-get download (cached in
$TINYGPT_CACHE, default /tmp/tinygpt-debs). Needs Debian's python3-torch and python3-numpy
(tinygpt imports them); use /usr/bin/python3, not a pyenv python.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "models")
sys.path.insert(0, MODELS)
import tinygpt  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: prepare_data.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tokenizer = tinygpt.Tokenizer(os.path.join(MODELS, "de-small"))
    if len(tokenizer) > 65536:
        sys.exit("de-small's vocabulary does not fit uint16")
    train_text, valid_text = tinygpt.corpus("de")
    for name, text in (("train", train_text), ("valid", valid_text)):
        ids = np.asarray(tokenizer.encode(text), dtype="<u2")
        path = os.path.join(out, name + ".u16")
        ids.tofile(path + ".tmp")  # renamed when complete: a cut run leaves no half file
        os.replace(path + ".tmp", path)
        print("%s: %d tokens" % (path, len(ids)), flush=True)


if __name__ == "__main__":
    main()
