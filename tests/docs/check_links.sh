#!/usr/bin/env bash
# Every relative link of the Markdown files given points at a file or folder that exists, and
# a link with an anchor into a Markdown file ("weighting.md#choosing-the-weighting", or
# "#choosing-the-weighting" within the same file) at one of its headings, slugged as GitHub
# slugs them: lower case, every character but letters, digits, blanks, '-' and '_' dropped,
# blanks made '-', a repeated heading suffixed -1, -2, ... (Non-ASCII characters are kept, as
# GitHub keeps letters; a heading to link to should not hold non-ASCII symbols.) Links inside
# code blocks and `code spans` are not links; absolute URLs are not checked.
# Usage: check_links.sh ROOT FILE.md...   (FILE.md relative to ROOT)
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_links.sh ROOT FILE.md...}
shift
cd "$root"

# The anchors of a Markdown file, one per line.
anchors() {
  awk '
    /^ ? ? ?(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    /^#+ / {
      heading = $0
      sub(/^#+ +/, "", heading)
      sub(/ +#+ *$/, "", heading)
      # A link in a heading counts by its text.
      while (match(heading, /\[[^]]*\]\([^)]*\)/)) {
        link = substr(heading, RSTART, RLENGTH)
        sub(/\]\(.*$/, "", link)
        heading = substr(heading, 1, RSTART - 1) substr(link, 2) substr(heading, RSTART + RLENGTH)
      }
      slug = tolower(heading)
      gsub(/[!-,.\/:-@[-^`{-~]/, "", slug)
      gsub(/ /, "-", slug)
      if (slug in seen) { seen[slug]++; slug = slug "-" seen[slug] } else seen[slug] = 0
      print slug
    }' "$1"
}

failures=0 links=0
for file in "$@"; do
  dir=$(dirname "$file")
  # "LINE<TAB>TARGET" for every [text](target) outside code.
  while IFS=$'\t' read -r line target; do
    links=$((links + 1))
    case "$target" in
      *://* | mailto:*) continue ;;
    esac
    path=${target%%#*}
    anchor=""
    [[ $target == *#* ]] && anchor=${target#*#}
    if [[ -z $path ]]; then
      resolved=$file
    else
      resolved=$dir/$path
      if [[ ! -e $resolved ]]; then
        echo "FAIL $file:$line: $target: no such file ($resolved)" >&2
        failures=$((failures + 1))
        continue
      fi
    fi
    if [[ -n $anchor && $resolved == *.md && -f $resolved ]]; then
      if ! anchors "$resolved" | grep -qxF -- "$anchor"; then
        echo "FAIL $file:$line: $target: $resolved has no heading with anchor #$anchor" >&2
        failures=$((failures + 1))
      fi
    fi
  done < <(awk '
    /^ ? ? ?(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    {
      text = $0
      gsub(/`[^`]*`/, "", text)
      while (match(text, /\]\([^) \t]+\)/)) {
        print FNR "\t" substr(text, RSTART + 2, RLENGTH - 3)
        text = substr(text, RSTART + RLENGTH)
      }
    }' "$file")
done
echo "$links links in $# files; $failures broken"
((failures == 0))
