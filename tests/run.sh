#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root) or a developer's checkout:
# installs the Debian packages it needs, then builds and runs every test twice, in the release
# preset and under the address and undefined-behaviour sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libeigen3-dev libxtensor-dev xtl-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libopenblas-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
for preset in release sanitize; do
  echo "== $preset"
  cmake --preset "$preset"
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
