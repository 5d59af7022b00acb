#!/usr/bin/env bash
# The main job on the shipped default: builds clp-transfer and gives the shipped English
# "large" model the vocabulary of the shipped German "small" model. From a fresh Debian 12
# machine (as root) or a developer's checkout; installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libeigen3-dev doctest-dev libxtensor-dev xtl-dev
          nlohmann-json3-dev libcli11-dev libopenblas-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake --preset release
cmake --build --preset release --target clp-transfer
mkdir -p build/quickstart
# build/quickstart is this script's own folder, so replacing the previous run's output is expected.
build/release/examples/clp-transfer/clp-transfer transfer \
  --source examples/models/en-large --helper examples/models/de-small \
  --output build/quickstart/de-large --report build/quickstart/report.json --force
