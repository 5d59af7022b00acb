#!/usr/bin/env bash
# The main job on the shipped default: builds clp-transfer and gives the shipped English
# "large" model the vocabulary of the shipped German "small" model. From a fresh Debian 12
# machine (as root) or a developer's checkout; installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash cmake/install-debian-packages.sh

cmake --preset release
cmake --build --preset release --target clp-transfer
mkdir -p build/quickstart
# build/quickstart is this script's own folder, so replacing the previous run's output is expected.
build/release/examples/clp-transfer/clp-transfer transfer \
  --source examples/models/en-large --helper examples/models/de-small \
  --output build/quickstart/de-large --report build/quickstart/report.json --force
