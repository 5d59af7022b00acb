#!/usr/bin/env bash
# docs/troubleshooting.md lists exactly the refusals and warnings the program's tests drive.
#
# The page gives each refusal and warning an id in the first column of a table whose header's
# first cell is "id"; the tests name the same ids where they drive them on a bad input
# (refused("id", ...), warned("id", ...), module_refused("id", ...), and extend's
# check_refusal(dir, "id", ...) under tests/program). A
# refusal a test drives without an entry on the page fails this check, as does an entry no test
# drives, or an id listed twice.
#
# Usage: check_troubleshooting.sh ROOT
set -euo pipefail

root=$1
page="$root/docs/troubleshooting.md"
[[ -f $page ]] || { echo "no $page"; exit 1; }

# The first cells of the tables whose header starts "| id |", without their backquotes.
page_ids=$(awk '
  /^\| *id *\|/ { in_table = 1; next }
  in_table && /^\|/ {
    split($0, cells, "|")
    cell = cells[2]
    gsub(/[ `]/, "", cell)
    if (cell !~ /^-+$/) print cell
    next
  }
  { in_table = 0 }
' "$page" | sort)

# The ids the tests pass, wherever a call wraps its line.
test_ids=$(find "$root/tests/program" -name '*.cpp' -print0 | xargs -0 cat | tr '\n' ' ' |
  grep -oE '\b(refused|warned|module_refused|check_refusal)\( *(dir, *)?"[a-z0-9-]+"' |
  sed -E 's/.*"([a-z0-9-]+)"/\1/' | sort -u)

status=0
duplicates=$(uniq -d <<<"$page_ids")
if [[ -n $duplicates ]]; then
  echo "listed twice in docs/troubleshooting.md:"; sed 's/^/  /' <<<"$duplicates"; status=1
fi
undocumented=$(comm -13 <(uniq <<<"$page_ids") <(echo "$test_ids"))
if [[ -n $undocumented ]]; then
  echo "driven by the tests but not in docs/troubleshooting.md:"; sed 's/^/  /' <<<"$undocumented"; status=1
fi
untested=$(comm -23 <(uniq <<<"$page_ids") <(echo "$test_ids"))
if [[ -n $untested ]]; then
  echo "in docs/troubleshooting.md but driven by no test under tests/program:"; sed 's/^/  /' <<<"$untested"
  status=1
fi
# Every kind of finding verify reports (verify/finding.hpp's kind_name) has its row, with what to
# do, in the page's table of findings.
kinds=$(grep -oE 'return "[a-z-]+";' "$root/examples/clp-transfer/verify/finding.hpp" | sed -E 's/return "(.*)";/\1/')
[[ -n $kinds ]] || { echo "no finding kinds read from verify/finding.hpp"; status=1; }
for kind in $kinds; do
  if ! grep -q "^| \`$kind\` |" "$page"; then
    echo "verify's finding $kind has no row in docs/troubleshooting.md's table of findings"; status=1
  fi
done
if [[ $status -eq 0 ]]; then
  echo "docs/troubleshooting.md lists the $(wc -l <<<"$page_ids") refusals and warnings the tests drive"
fi
exit $status
