#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root) or a developer's checkout:
# installs the Debian packages it needs, then builds and runs every test twice, in the release
# preset and under the address and undefined-behaviour sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."

bash cmake/install-debian-packages.sh

jobs=$(nproc)
for preset in release sanitize; do
  echo "== $preset"
  cmake --preset "$preset"
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
