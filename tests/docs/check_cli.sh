#!/usr/bin/env bash
# docs/cli.md is the program's own --help: regenerates it into the build tree with
# docs/generate-cli.sh and fails, printing the difference and the command that updates the
# committed page, when the two differ.
# Usage: check_cli.sh ROOT PROGRAM WORK_DIR
set -euo pipefail
root=${1:?usage: check_cli.sh ROOT PROGRAM WORK_DIR} program=${2:?} work=${3:?}
mkdir -p "$work"
bash "$root/docs/generate-cli.sh" "$program" "$work/cli.md"
if diff -u "$root/docs/cli.md" "$work/cli.md"; then
  echo "docs/cli.md is the program's --help"
  exit 0
fi
echo >&2
echo "docs/cli.md differs from the program's --help (above: - committed, + the program)." >&2
echo "Regenerate it from the repository root, then commit it:" >&2
echo "    bash docs/generate-cli.sh $program" >&2
exit 1
