#!/usr/bin/env bash
# Fetches the real tokenizer client the extend tests check written tokenizers with: Hugging
# Face's pure-JavaScript tokenizers (@huggingface/tokenizers, the tokenizers of transformers.js
# as a package of their own, no dependencies), into tests/data/fetched/tokenizers-js/package/,
# with `npm pack`. The tests that use it run under node when it is there and skip otherwise;
# nothing downloads at build or test time.
#
#   bash tests/data/fetch_tokenizer_client.sh
#
# The tarball is checked against the sha256 recorded here: a package republished with other
# content stops the script instead of changing the tests' oracle. Needs npm, tar, sha256sum.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
package="@huggingface/tokenizers@0.2.0"
tarball="huggingface-tokenizers-0.2.0.tgz"
sha256=2800014c83b8186b2e4210c20672f1fb65a12cef85d7e95e0f2003e022611b4a
out="$here/fetched/tokenizers-js"

if [ -f "$out/$tarball.sha256" ] && [ "$(cat "$out/$tarball.sha256")" = "$sha256" ] &&
   [ -f "$out/package/dist/tokenizers.mjs" ]; then
  echo "tokenizers-js: already there"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_tokenizer_client.sh: npm is not installed" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "tokenizers-js: npm pack $package  (Apache-2.0)"
if ! (cd "$work" && npm pack --loglevel=error "$package" >/dev/null 2>"$work/npm.log"); then
  echo "fetch_tokenizer_client.sh: could not fetch $package (registry: $(npm config get registry 2>/dev/null || echo unknown)). npm said:" >&2
  grep -vE '^npm (error|ERR!)( {2,}|[[:space:]{}]*$)' "$work/npm.log" | tail -n 12 | sed 's/^/  /' >&2
  exit 1
fi
got="$(sha256sum "$work/$tarball" | cut -d' ' -f1)"
if [ "$got" != "$sha256" ]; then
  echo "fetch_tokenizer_client.sh: $tarball has sha256 $got, expected $sha256" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
tar -xzf "$work/$tarball" -C "$out" package/dist package/package.json package/LICENSE
echo "$sha256" >"$out/$tarball.sha256"
echo "tokenizers-js: $(du -sh "$out" | cut -f1) in ${out#"$here/"}"
