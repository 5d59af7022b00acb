#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing clp-transfer need, if any is
# missing (as root), and any further packages named as arguments (tests/run.sh: npm). Used by
# examples/quickstart.sh and tests/run.sh.
set -euo pipefail
packages=(cmake ninja-build g++ libeigen3-dev libxtensor-dev xtl-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libopenblas-dev pkg-config "$@")
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
