#!/usr/bin/env bash
# The main job on the shipped default: builds clp-transfer and gives the shipped English
# "large" model the vocabulary of the shipped German "small" model. From a fresh Debian 12
# machine (as root) or a developer's checkout; installs the Debian packages the program needs
# (cmake/install-debian-packages.sh), none that only the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

bash cmake/install-debian-packages.sh

cmake --preset release
cmake --build --preset release --target clp-transfer
program=build/release/examples/clp-transfer/clp-transfer
mkdir -p build/quickstart
# build/quickstart is this script's own folder, so replacing the previous run's output is expected.
"$program" transfer \
  --source examples/models/en-large --helper examples/models/de-small \
  --output build/quickstart/de-large --report build/quickstart/report.json --force

# README.md's commands run the program by name; this is the line that makes them find it.
echo
echo "clp-transfer is $program; to run it by name from the repository root:"
echo "    export PATH=\"\$PWD/build/release/examples/clp-transfer:\$PATH\""
