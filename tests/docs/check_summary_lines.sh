#!/usr/bin/env bash
# docs/troubleshooting.md explains every line of the summaries the program prints: runs
# `transfer` (with the default weighting and with `--weighting top-k`, whose lines differ),
# `extend` (with a --probe-new text) and `verify` (on a clean folder and on one with a finding)
# on the shipped models, takes the label of each summary line (its first 19 characters after the
# indent: "  overlap            1401 tokens ..." -> "overlap"), and checks that the page's table
# for that command has a row naming it as a `code span` in its first column. verify's summary is
# one line, "clp-transfer: verify FOLDER: no findings" or "N findings": both must be rows.
# Lines a run does not print (a left-out reason, a warning) are not checked by this run.
# Usage: check_summary_lines.sh ROOT PROGRAM WORK
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_summary_lines.sh ROOT PROGRAM WORK} program=${2:?} work=${3:?}
page="$root/docs/troubleshooting.md"
models="$root/examples/models"
rm -rf "$work" && mkdir -p "$work"

# The first cells of the table under the heading that holds TEXT, code spans only, one a line
# (a cell may name several: "`source vocabulary`, `target vocabulary`").
documented() {  # documented HEADING_TEXT
  awk -v heading="$1" '
    /^#+ / { inside = index($0, heading) > 0; next }
    inside && /^\|/ {
      split($0, cells, "|")
      cell = cells[2]
      while (match(cell, /`[^`]+`/)) { print substr(cell, RSTART + 1, RLENGTH - 2); cell = substr(cell, RSTART + RLENGTH) }
    }' "$page"
}

# The labels of a run's summary: its lines of two spaces and a label in a column 19 characters
# wide, then the values ("  similarity product bf16 ..." fills the column).
labels() { awk '/^  [a-z]/ { label = substr($0, 3, 19); sub(/ +$/, "", label); print label }' | sort -u; }

missing=()
check() {  # check HEADING_TEXT < labels
  local heading=$1 label known
  known=$(documented "$heading")
  while IFS= read -r label; do
    [[ -z $label ]] && continue
    grep -qxF -e "$label" <<<"$known" || missing+=("$heading: $label")
  done
}

{ "$program" transfer --source "$models/en-large" --helper "$models/de-small" --output "$work/t1" 2>&1 >/dev/null
  "$program" transfer --source "$models/en-large" --helper "$models/de-small" --output "$work/t2" \
    --weighting top-k 2>&1 >/dev/null; } | labels > "$work/transfer.labels"
check "The summary of \`transfer\`" < "$work/transfer.labels"
"$program" extend --source "$models/en-large" --helper "$models/de-small" --output "$work/e" \
  --probe-new "$root/examples/clp-transfer/extend/probes/de.txt" 2>&1 >/dev/null | labels > "$work/extend.labels"
check "The summary of \`extend\`" < "$work/extend.labels"
[[ -s $work/transfer.labels && -s $work/extend.labels ]] || { echo "check_summary_lines.sh: a run printed no summary" >&2; exit 1; }

# verify: a clean folder, then one whose config.json's vocab_size is off by one (a finding).
verify_line() { sed -n -E 's/^clp-transfer: verify [^:]*: (no findings|[0-9]+ findings?)$/\1/p' | sed -E 's/^[0-9]+ findings$/N findings/'; }
clean=$("$program" verify "$work/t1" 2>&1 >/dev/null | verify_line)
cp -r "$work/t1" "$work/bad"
sed -i -E 's/"vocab_size": *[0-9]+/"vocab_size": 1/' "$work/bad/config.json"
found=$("$program" verify "$work/bad" 2>&1 >/dev/null | verify_line) || true
known=$(documented "### \`verify\`" | sed -E 's/^clp-transfer: verify FOLDER: //')
for line in "$clean" "$found"; do
  [[ -n $line ]] || { echo "check_summary_lines.sh: verify printed no summary line" >&2; exit 1; }
  grep -qxF -e "$line" <<<"$known" || missing+=("verify: $line")
done

echo "transfer: $(tr '\n' ',' < "$work/transfer.labels")"
echo "extend: $(tr '\n' ',' < "$work/extend.labels")"
echo "verify: $clean; $found"
if ((${#missing[@]})); then
  echo "docs/troubleshooting.md has no row for these summary lines:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "docs/troubleshooting.md explains every summary line these runs printed"
