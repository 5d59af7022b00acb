#!/usr/bin/env bash
# No dead code in the library or the program: every function and member function defined under
# include/ or examples/clp-transfer/ is named somewhere besides its own definitions and
# declarations, in the C++ of include/, examples/ or tests/ (comment lines do not count). The
# callbacks another library calls by its interface's names are left out: nlohmann::json's SAX
# handler functions (number_integer, start_object, ...), which only the parser names. Universal Ctags lists the definitions; a
# name is unused when the lines of code that hold it as a word are no more than its own
# definitions and declarations. Constructors, destructors and operators are left out (a type's
# name is used wherever the type is). Each offender is printed as "FILE:LINE: function NAME is
# never used", and the script exits 1. Without Universal Ctags it prints the skip marker the test
# suite reports as skipped (CLP_TEST_SKIP_MARKER in cmake/ClpProjectOptions.cmake) and exits 0;
# $CTAGS names the binary, else ctags-universal (Debian's name) or ctags.
# Usage: check_unused_functions.sh ROOT
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_unused_functions.sh ROOT}
cd "$root"
[[ -d include/clp ]] || { echo "check_unused_functions.sh: $root has no include/clp: not the repository's root" >&2; exit 2; }

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
  echo "CLP-TEST-SKIPPED: no Universal Ctags (Debian package universal-ctags) to list the functions with"
  exit 0
fi

# The library's and the program's functions (f) and prototypes (p), one line each: name, file,
# line, scope.
tags=$("$ctags" -R --languages=C++ --kinds-C++=fp --fields=+nZ -x \
  --_xformat='%{name} %{input} %{line} %{scope}' include examples/clp-transfer)

# How many lines of code hold each word, over every C++ file of include/, examples/ and tests/.
words=$(find include examples tests \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' \) -print0 |
  xargs -0 cat | grep -v '^[[:space:]]*//' |
  awk '{ delete seen; n = split($0, w, /[^A-Za-z0-9_]+/); for (i = 1; i <= n; i++) if (w[i] != "" && !(w[i] in seen)) { seen[w[i]] = 1; count[w[i]]++ } }
       END { for (word in count) print word, count[word] }')

offenders=$(awk '
  NR == FNR { used[$1] = $2; next }
  {
    name = $1
    if (name ~ /^(operator|~|__anon)/) next
    if (name ~ /^(null|boolean|number_integer|number_unsigned|number_float|string|binary|start_object|key|end_object|start_array|end_array|parse_error)$/) next  # SAX
    scope = $4; sub(/.*(::|:)/, "", scope)
    if (name == scope) next                      # a constructor
    own[name]++
    where[name] = $2 ":" $3
  }
  END { for (name in own) if (used[name] <= own[name]) printf "%s: function %s is never used\n", where[name], name }
' <(printf '%s\n' "$words") <(printf '%s\n' "$tags") | sort)
if [[ -n $offenders ]]; then
  printf '%s\n' "$offenders"
  echo "check_unused_functions.sh: delete what nothing calls" >&2
  exit 1
fi
echo "every function under include/ and examples/clp-transfer/ is used"
