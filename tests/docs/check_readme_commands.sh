#!/usr/bin/env bash
# A reader can run the README's commands, in order, after the quick start. Every command line of
# README.md's ```sh blocks (a line ending in '\' joined with the next, comments dropped) is one
# of these, or the test fails naming it:
#   bash FILE ...             FILE exists and parses (bash -n); not run: the quick start and
#                             the test command install packages and build.
#   export PATH="$PWD/DIR:$PATH"
#                             DIR/clp-transfer is the program examples/quickstart.sh builds and
#                             runs (its `program=` line), so the lines below find that program.
#   clp-transfer ...          run as written, in order, by bash in a scratch folder that holds
#                             the repository's examples/ and an empty build/, with the program
#                             built here first on the PATH; it must exit 0, and come after the
#                             export line.
# Usage: check_readme_commands.sh ROOT PROGRAM WORK_DIR
set -euo pipefail
export LC_ALL=C
usage="usage: check_readme_commands.sh ROOT PROGRAM WORK_DIR"
root=${1:?$usage} program=${2:?$usage} work=${3:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
program=$(realpath "$program")
readme="$root/README.md"

rm -rf "$work"
mkdir -p "$work/blocks" "$work/bin" "$work/run/build"
ln -s "$program" "$work/bin/clp-transfer"
ln -s "$root/examples" "$work/run/examples"

# The program quickstart.sh builds, relative to the repository root.
built=$(awk -F= '/^program=/ { print $2; exit }' "$root/examples/quickstart.sh")
[[ -n $built ]] || { echo "FAIL examples/quickstart.sh has no program= line naming what it builds" >&2; exit 1; }

# "LINE<TAB>COMMAND" for each command of the README's sh blocks.
commands() {
  (cd "$root" && awk -v dir="$work/blocks" -f "$here/extract_blocks.awk" README.md) |
    while IFS=$'\t' read -r n file line info source; do
      [[ $info == sh || $info == bash ]] || continue
      awk -v first="$line" '
        {
          text = $0
          sub(/^[ \t]+/, "", text)
          if (pending == "") start = first + NR - 1
          if (text ~ /\\$/) { sub(/\\$/, "", text); pending = pending text; next }
          text = pending text
          pending = ""
          sub(/[ \t]+#.*$/, "", text)
          sub(/^#.*$/, "", text)
          sub(/[ \t]+$/, "", text)
          if (text != "") print start "\t" text
        }' "$work/blocks/block-$n.txt"
    done
}

failures=0 ran=0 on_path=0
fail() {
  echo "FAIL README.md:$1: $2" >&2
  failures=$((failures + 1))
}
while IFS=$'\t' read -r line command; do
  read -r -a words <<<"$command"
  case "${words[0]}" in
    bash)
      script=${words[1]:-}
      if [[ ! -f $root/$script ]]; then
        fail "$line" "$command: $script does not exist"
      elif ! bash -n "$root/$script"; then
        fail "$line" "$command: $script does not parse"
      else
        echo "ok  README.md:$line: $script exists and parses (not run)"
      fi ;;
    export)
      if [[ $command =~ ^export\ PATH=\"\$PWD/([^:\"]+):\$PATH\"$ ]]; then
        if [[ ${BASH_REMATCH[1]}/clp-transfer == "$built" ]]; then
          on_path=1
          echo "ok  README.md:$line: the PATH line names the folder of $built, which the quick start builds"
        else
          fail "$line" "$command: the quick start builds $built, not ${BASH_REMATCH[1]}/clp-transfer"
        fi
      else
        fail "$line" "$command: an export the test does not know (it knows export PATH=\"\$PWD/DIR:\$PATH\")"
      fi ;;
    clp-transfer)
      ((on_path)) || fail "$line" "$command: runs clp-transfer by name before a line puts it on the PATH"
      ran=$((ran + 1))
      log="$work/command-$ran.log"
      if (cd "$work/run" && PATH="$work/bin:$PATH" bash -c "$command") >"$log" 2>&1; then
        echo "ok  README.md:$line: $command"
      else
        fail "$line" "$command: exit status $? (its output follows)"
        sed 's/^/    /' "$log" >&2
      fi ;;
    *)
      fail "$line" "$command: a command this test does not know; teach tests/docs/check_readme_commands.sh" ;;
  esac
done < <(commands)

((ran > 0)) || fail 1 "no clp-transfer command found in the README's sh blocks"
echo "$ran clp-transfer commands run; $failures failures"
((failures == 0))
