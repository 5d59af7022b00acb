#!/usr/bin/env bash
# No doctest case name holds a ';': doctest_discover_tests hands the names to CTest as a list,
# which cuts a name at each ';' into two tests, one of which runs no case and passes. Every
# TEST_CASE and TEST_CASE_TEMPLATE under tests/ is read with its name's string literals joined
# (a name may continue on the next lines); each offender is printed as "FILE:LINE: NAME", and the
# script exits 1.
# Usage: check_test_names.sh ROOT
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_test_names.sh ROOT}
cd "$root"

offenders=$(find tests -name '*.cpp' -print0 | sort -z | xargs -0 awk '
  FNR == 1 { reading = 0 }
  !reading && /^[ \t]*TEST_CASE(_TEMPLATE)?\(/ { reading = 1; start = FNR; text = "" }
  reading {
    text = text $0 "\n"
    if (index($0, "{") || index($0, ")")) {
      name = ""
      rest = text
      sub(/^[^"]*/, "", rest)              # up to the first literal
      while (match(rest, /^"([^"\\]|\\.)*"[ \t\n]*/)) {
        literal = substr(rest, 2, RLENGTH - 2)
        sub(/"[ \t\n]*$/, "", literal)
        name = name literal
        rest = substr(rest, RLENGTH + 1)
      }
      if (index(name, ";")) printf "%s:%d: %s\n", FILENAME, start, name
      reading = 0
    }
  }')
if [[ -n $offenders ]]; then
  printf '%s\n' "$offenders"
  echo "check_test_names.sh: a ';' in a test name splits it into two CTest tests, one that runs nothing; reword it" >&2
  exit 1
fi
