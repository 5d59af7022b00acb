#!/usr/bin/env bash
# What each public header costs a translation unit that includes it, in both ways to build the
# library: header-only, and with CLP_SEPARATE_COMPILATION (its bodies compiled once elsewhere,
# docs/library.md). For every header under include/clp (the xtensor and libtorch adapters need
# their libraries' headers; clp/impl/src.hpp is the compiled part itself), a file holding that
# one #include and an empty main() is compiled to an object CLP_BENCH_RUNS times (default 3)
# with the flags a consumer's release build uses (-std=c++17 -O2 -DNDEBUG, Eigen from pkg-config
# or /usr/include/eigen3), timed by /usr/bin/time; the least user + system CPU time of the runs
# is reported, with the peak memory of the compiler. Two more rows: <Eigen/Core> alone, what any
# Eigen user already pays, and "default transfer", a file that includes <clp/clp.hpp> and calls
# clp::synthesize_rows with default_weighting on Eigen matrices. Prints the machine and load
# first, then a markdown table sorted by the first mode's cost; run it on a quiet machine.
# Usage: examples/benchmarks/bench_includes.sh [--mode header-only|separate|both] [HEADER...]
#        (names relative to include/, e.g. clp/synthesize.hpp; default: every public header;
#        default mode: both, a column each)
# Environment: CXX (default g++), CLP_BENCH_RUNS.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cxx="${CXX:-g++}"
runs="${CLP_BENCH_RUNS:-3}"
eigen_flags=$(pkg-config --cflags eigen3 2>/dev/null || echo "-I/usr/include/eigen3")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

modes=(header-only separate)
if [[ ${1:-} == --mode ]]; then
  case ${2:-} in
    header-only | separate) modes=("$2") ;;
    both) ;;
    *) echo "usage: bench_includes.sh [--mode header-only|separate|both] [HEADER...]" >&2; exit 2 ;;
  esac
  shift 2
fi
if (($# > 0)); then
  headers=("$@")
else
  mapfile -t headers < <(cd "$repo/include" && find clp -maxdepth 2 -name '*.hpp' -not -path 'clp/detail/*' \
                           -not -path 'clp/impl/*' | sort)
fi

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compiler: $($cxx --version | head -1); flags: -std=c++17 -O2 -DNDEBUG; $runs runs each, least CPU time"

# The file that includes <clp/clp.hpp> and calls the default transfer.
cat > "$scratch/default_transfer.cpp" <<'EOF'
#include <clp/clp.hpp>
clp::synthesis_report transfer(const Eigen::MatrixXf& source, const Eigen::MatrixXf& helper,
                               const clp::vocabulary_overlap& overlap, Eigen::MatrixXf& output) {
  return clp::synthesize_rows(source, helper, overlap, output);  // clp::default_weighting
}
int main() { return 0; }
EOF

# One header (or "default transfer") in one mode: prints "seconds peak_kib", or "failed" when it
# does not compile here (an adapter whose library is absent, or a broken header), with the
# compiler's first error on stderr.
measure() {
  local include=$1 mode=$2 best="" peak=0 i source="$scratch/tu.cpp" define=()
  [[ $mode == separate ]] && define=(-DCLP_SEPARATE_COMPILATION)
  if [[ $include == "default transfer" ]]; then
    source="$scratch/default_transfer.cpp"
  else
    printf '#include <%s>\nint main() { return 0; }\n' "$include" > "$source"
  fi
  for ((i = 0; i < runs; ++i)); do
    # shellcheck disable=SC2086  # the pkg-config flags are words
    if ! /usr/bin/time -f '%U %S %M' -o "$scratch/time" \
        "$cxx" -std=c++17 -O2 -DNDEBUG "${define[@]}" -I"$repo/include" $eigen_flags -c "$source" \
        -o "$scratch/tu.o" 2> "$scratch/err"; then
      echo "  $include ($mode): did not compile: $(grep -m1 'error' "$scratch/err" || head -1 "$scratch/err")" >&2
      echo failed; return
    fi
    read -r user sys kib < "$scratch/time"
    local seconds
    seconds=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    if [[ -z $best ]] || awk -v a="$seconds" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$seconds; fi
    ((kib > peak)) && peak=$kib
  done
  echo "$best $peak"
}

# One row per header: its name (spaces as '~'), then "seconds peak_kib" (or "failed -") per mode.
rows=()
for header in Eigen/Core "default transfer" "${headers[@]}"; do
  row=${header// /\~}
  for mode in "${modes[@]}"; do
    result=$(measure "$header" "$mode")
    echo "  $header ($mode): $result" >&2
    [[ $result == failed ]] && result="failed -"
    row+=" $result"
  done
  rows+=("$row")
done

echo
header_line="| header |" rule="|---|"
for mode in "${modes[@]}"; do
  header_line+=" $mode: CPU s (least of $runs) | $mode: peak MiB |"
  rule+="---:|---:|"
done
echo "$header_line"
echo "$rule"
printf '%s\n' "${rows[@]}" | awk '{
    name = $1; gsub(/~/, " ", name)
    if (name != "default transfer") name = "`" name "`"
    line = "| " name " |"
    for (i = 2; i < NF; i += 2)
      line = line ($i == "failed" ? " did not compile | |" : sprintf(" %.1f | %d |", $i, $(i + 1) / 1024))
    printf "%s\t%s\n", ($2 == "failed" ? -1 : $2), line
  }' | sort -t$'\t' -k1,1 -rn | cut -f2-
