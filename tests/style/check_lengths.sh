#!/usr/bin/env bash
# The house rule on length: no function, class, struct or union in the library (include/), the
# program (examples/clp-transfer/) or the benchmarks (examples/benchmarks*/) is longer than 90
# lines (`limit`, below), from the line ctags gives as its start to the line of its end.
# Namespaces do not count; a member function defined outside its class counts on its own, not
# in the class. Each offender is printed as "FILE:LINE: KIND NAME is N lines (limit 90)", and
# the script exits 1. Universal Ctags measures (it alone gives where a definition ends); without
# it the check prints the skip marker the test suite reports as skipped (CLP_TEST_SKIP_MARKER in
# cmake/ClpProjectOptions.cmake) and exits 0. $CTAGS names the binary, else ctags-universal
# (Debian's name) or ctags.
# Usage: check_lengths.sh ROOT
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_lengths.sh ROOT}
readonly limit=90
cd "$root"

ctags=${CTAGS:-}
if [[ -z $ctags ]]; then
  for candidate in ctags-universal ctags; do
    if command -v "$candidate" >/dev/null; then
      ctags=$candidate
      break
    fi
  done
fi
if [[ -z $ctags ]] || ! "$ctags" --version 2>/dev/null | grep -q '^Universal Ctags'; then
  echo "CLP-TEST-SKIPPED: no Universal Ctags (Debian package universal-ctags) to measure lengths with"
  exit 0
fi

folders=(include examples/clp-transfer)
for folder in "${folders[@]}"; do
  [[ -d $folder ]] || { echo "check_lengths.sh: $root has no folder $folder: not the repository's root" >&2; exit 2; }
done
shopt -s nullglob
for folder in examples/benchmarks*/; do folders+=("${folder%/}"); done

# One line per definition: start, end, kind, file, name (last, as an operator's name has blanks).
tags=$("$ctags" -R --languages=C++ --kinds-C++=fcsu --fields=+ne -x \
  --_xformat='%{line} %{end} %{kind} %{input} %{name}' "${folders[@]}")

offenders=$(awk -v limit="$limit" '
  $2 ~ /^[0-9]+$/ && $2 - $1 + 1 > limit {
    name = $0
    sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", name)
    printf "%s:%s: %s %s is %d lines (limit %d)\n", $4, $1, $3, name, $2 - $1 + 1, limit
  }
' <<<"$tags" | sort -t: -k1,1 -k2,2n)
if [[ -n $offenders ]]; then
  echo "$offenders"
  exit 1
fi
echo "nothing longer than $limit lines in ${folders[*]}"
