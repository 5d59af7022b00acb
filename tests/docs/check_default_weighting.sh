#!/usr/bin/env bash
# The default weighting the docs name is the program's. From `clp-transfer transfer --help` it
# reads the defaults of --weighting and --row-norms and the list of weightings, and forms the
# docs' name for the default: "`least-squares` with top-k mean row norms" (--row-norms
# top-k-mean), "`least-squares` with top-k row norms" (--row-norms top-k),
# "`least-squares` with the map's own norms" (--row-norms map), "`NAME`" for any other
# weighting. Then, paragraph by paragraph (a paragraph's lines joined, so a claim broken across
# lines counts; code blocks and docs/cli.md, the program's own help, left out):
#   - every page given with --names must have a paragraph holding that name and the word
#     "default";
#   - no page may call another weighting the default: "X by default", "X (the default)",
#     "X (**default**)", "X, the default", "X is the default", "the default is X",
#     "default weighting, X", where X is a weighting's name, in backticks or not, once the
#     default's own name is taken out of the paragraph ("top-k row norms", "top-k mean row
#     norms" and "top-k-mean" name no weighting).
# Fails naming the page, the paragraph's first line and what it claims.
# Usage: check_default_weighting.sh ROOT PROGRAM [--names PAGE]... PAGE...   (pages relative to ROOT)
set -euo pipefail
export LC_ALL=C
usage="usage: check_default_weighting.sh ROOT PROGRAM [--names PAGE]... PAGE..."
root=${1:?$usage} program=${2:?$usage}
shift 2
required=() pages=()
while (($#)); do
  case "$1" in
    --names) required+=("${2:?$usage}"); pages+=("$2"); shift 2 ;;
    *) pages+=("$1"); shift ;;
  esac
done
# Each page once, in the order first given.
mapfile -t pages < <(printf '%s\n' "${pages[@]}" | awk '!seen[$0]++')
cd "$root"

help=$("$program" transfer --help)
# An option's default: the text after "TEXT=" on its line.
default_of() {
  printf '%s\n' "$help" | awk -v option="$1" '$1 == option { split($2, a, "="); print a[2]; exit }'
}
# The weightings: --weighting's description (on the next line when CLI11 wraps), "a | b | c".
weightings=$(printf '%s\n' "$help" | awk '
  wrapped { print; exit }
  $1 == "--weighting" { sub(/^ *[^ ]+ +[^ ]+ */, ""); if ($0 == "") { wrapped = 1; next } print; exit }' |
  sed -e 's/:.*//' | tr '|' '\n' | sed -e 's/^ *//' -e 's/ *$//' | grep -v '^$' || true)
weighting=$(default_of --weighting)
row_norms=$(default_of --row-norms)
if [[ -z $weighting || -z $weightings ]]; then
  echo "check_default_weighting.sh: no --weighting default or values in '$program transfer --help'" >&2
  exit 1
fi
case "$weighting:$row_norms" in
  least-squares:top-k-mean) name="\`least-squares\` with top-k mean row norms" ;;
  least-squares:top-k) name="\`least-squares\` with top-k row norms" ;;
  least-squares:map) name="\`least-squares\` with the map's own norms" ;;
  *) name="\`$weighting\`" ;;
esac
echo "the program's default: --weighting $weighting --row-norms ${row_norms:-(none)}; the docs name it: $name"

# Checks one page: prints "FAIL LINE: calls `X` the default" for each claim of another
# weighting, and "NAMED" when a paragraph holds the default's name and the word "default".
check_page() {
  awk -v name="$name" -v default_weighting="$weighting" -v list="$(echo $weightings)" '
    function replace_all(s, what, with,    at, out) {
      out = ""
      while ((at = index(s, what)) > 0) {
        out = out substr(s, 1, at - 1) with
        s = substr(s, at + length(what))
      }
      return out s
    }
    function check(text, line,    rest, n, i, x, before, after) {
      gsub(/[ \t]+/, " ", text)
      # Take out the default by its name, then the words that hold a weighting name but name none.
      rest = replace_all(text, name, " THE-DEFAULT ")
      if (rest != text && tolower(text) ~ /default/) named = 1
      rest = replace_all(replace_all(rest, "top-k mean row norms", " "), "top-k-mean", " ")
      rest = tolower(replace_all(replace_all(rest, "top-k row norms", " "), "top-k row", " "))
      n = split(list, weightings, " ")
      for (i = 1; i <= n; ++i) {
        if (weightings[i] == default_weighting) continue
        x = "`?" weightings[i] "`?"   # names are letters and "-", nothing a regex reads
        before = "(^|[^-a-z_])" x
        after = "([^-a-z_]|$)"
        if (rest ~ (before " (by default" after "|\\((the )?\\**default\\**\\))") ||
            rest ~ (before ",? (is )?\\**the default\\**" after) ||
            rest ~ ("default( weighting)?( is|,|:) " x after))
          print "FAIL " line ": calls `" weightings[i] "` the default"
      }
    }
    function flush() { if (text != "") check(text, start); text = "" }
    /^ ? ? ?(```|~~~)/ { flush(); fenced = !fenced; next }
    fenced { next }
    /^[ \t]*$/ { flush(); next }
    { if (text == "") start = FNR; text = text " " $0 }
    END { flush(); if (named) print "NAMED" }' "$1"
}

failures=0
for page in "${pages[@]}"; do
  [[ -f $page ]] || { echo "FAIL $page: no such page" >&2; failures=$((failures + 1)); continue; }
  [[ $page == docs/cli.md ]] && continue
  named=0
  while read -r verdict rest; do
    if [[ $verdict == NAMED ]]; then
      named=1
    else
      echo "FAIL $page:$rest; the program's is $name" >&2
      failures=$((failures + 1))
    fi
  done < <(check_page "$page")
  for wanted in "${required[@]}"; do
    if [[ $wanted == "$page" && $named == 0 ]]; then
      echo "FAIL $page: no paragraph names the default weighting as the program does ($name)" >&2
      failures=$((failures + 1))
    fi
  done
done
echo "${#pages[@]} pages; $failures failures"
((failures == 0))
