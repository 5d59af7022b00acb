#!/usr/bin/env bash
# A public header is a declaration and its contract: no header under include/clp/ outside
# include/clp/detail/ holds a `namespace detail` block longer than 10 lines (`limit`, below),
# from the line that opens it to the line that closes it; the implementation lives in
# include/clp/detail/, in the folder of its stage. Braces are counted line by line, so the
# blocks' code must not hold unbalanced braces in string or character literals. Each offender is
# printed as "FILE:LINE: namespace detail is N lines (limit 10)", and the script exits 1.
# Usage: check_public_headers.sh ROOT
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_public_headers.sh ROOT}
readonly limit=10
cd "$root"
[[ -d include/clp ]] || { echo "check_public_headers.sh: $root has no include/clp: not the repository's root" >&2; exit 2; }

offenders=$(find include/clp -name '*.hpp' -not -path 'include/clp/detail/*' -print0 | sort -z | xargs -0 awk -v limit="$limit" '
  FNR == 1 { open = 0 }
  !open && /^[ \t]*namespace([ \t]+[A-Za-z_:]*::)?[ \t]*detail[ \t]*\{/ { open = 1; start = FNR; depth = 0 }
  open {
    line = $0
    depth += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
    if (depth <= 0) {
      if (FNR - start + 1 > limit)
        printf "%s:%d: namespace detail is %d lines (limit %d)\n", FILENAME, start, FNR - start + 1, limit
      open = 0
    }
  }')
if [[ -n $offenders ]]; then
  printf '%s\n' "$offenders"
  echo "check_public_headers.sh: move the implementation to include/clp/detail/<stage>/" >&2
  exit 1
fi
echo "no namespace detail block longer than $limit lines in a public header"
