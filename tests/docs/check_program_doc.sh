#!/usr/bin/env bash
# docs/program.md keeps up with the program: it must name every subcommand that
# `clp-transfer --help` lists, and every value that `clp-transfer transfer --help` lists for
# --weighting, --similarity-product and --method, each as a code span (`top-k`). Fails,
# naming what the page lacks, when it does not.
# Usage: check_program_doc.sh ROOT PROGRAM
set -euo pipefail
export LC_ALL=C
root=${1:?usage: check_program_doc.sh ROOT PROGRAM} program=${2:?usage: check_program_doc.sh ROOT PROGRAM}
page="$root/docs/program.md"
[[ -f $page ]] || { echo "check_program_doc.sh: $page not found" >&2; exit 1; }

help_of() { "$program" "$@" --help; }

# The subcommands: the first word of each line of the "Subcommands:" list (as generate-cli.sh
# reads them).
subcommands=$(help_of | awk '
  tolower($0) ~ /^subcommands:$/ { listing = 1; next }
  listing && NF == 0 { listing = 0 }
  listing && /^  [^ ]/ { print $1 }')
[[ -n $subcommands ]] || { echo "check_program_doc.sh: no subcommands in '$program --help'" >&2; exit 1; }

# The values of OPTION as `transfer --help` lists them: its description (on the option's line,
# or on the next when CLI11 wraps a long option) up to the first colon, "a | b | c".
transfer_help=$(help_of transfer)
values_of() {  # values_of OPTION
  printf '%s\n' "$transfer_help" | awk -v option="$1" '
    wrapped { print; exit }
    $1 == option || index($1, option "=") == 1 {
      sub(/^ *[^ ]+ +[^ ]+ */, "")          # the option and its type
      if ($0 == "") { wrapped = 1; next }
      print; exit
    }' | sed -e 's/^ *//' -e 's/:.*//' | tr '|' '\n' | sed -e 's/^ *//' -e 's/ *$//' | grep -v '^$' || true
}

missing=()
for subcommand in $subcommands; do
  grep -qF -e "\`$subcommand\`" -e "clp-transfer $subcommand" "$page" || missing+=("subcommand $subcommand")
done
for option in --weighting --similarity-product --method; do
  values=$(values_of "$option")
  if [[ -z $values ]]; then
    echo "check_program_doc.sh: no values of $option in '$program transfer --help'" >&2
    exit 1
  fi
  for value in $values; do
    grep -qF "\`$value\`" "$page" || missing+=("$option $value")
  done
  echo "$option: $(echo $values)"
done
echo "subcommands: $(echo $subcommands)"

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "docs/program.md names every subcommand and every value of --weighting, --similarity-product and --method"
  exit 0
fi
echo >&2
echo "docs/program.md does not name what the program's --help lists (each as a \`code span\`):" >&2
printf '  %s\n' "${missing[@]}" >&2
exit 1
