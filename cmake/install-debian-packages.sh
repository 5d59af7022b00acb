#!/usr/bin/env bash
# Installs, as root on Debian 12, the packages that configuring the release preset and building
# clp-transfer on its fastest path need, where any is missing, and any further packages named as
# arguments (tests/run.sh: the test-only ones). Used by examples/quickstart.sh and tests/run.sh.
#
# What each is for: the compiler, CMake and Ninja; Eigen, nlohmann_json and CLI11 (the library
# and the program); OpenBLAS (the programs' matrix products); oneDNN and the OpenCL headers its
# CMake package requires (the bf16 similarity product that the default weighting uses where the
# CPU has avx512_bf16 or AMX; without them the program is float32 only, about half as fast
# there). doctest and xtensor are configure-time requirements of the preset, which configures
# the test suite and the xtensor example beside the program.
set -euo pipefail
packages=(cmake ninja-build g++ libeigen3-dev nlohmann-json3-dev libcli11-dev libopenblas-dev
          libdnnl-dev opencl-c-headers ocl-icd-opencl-dev
          doctest-dev libxtensor-dev xtl-dev "$@")
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
