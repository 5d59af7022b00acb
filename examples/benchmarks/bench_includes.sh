#!/usr/bin/env bash
# What each public header costs a translation unit that includes it: for every header under
# include/clp (the xtensor and libtorch adapters need their libraries' headers), a file holding
# that one #include and an empty main() is compiled to an object CLP_BENCH_RUNS times (default
# 3) with the flags a consumer's release build uses (-std=c++17 -O2 -DNDEBUG, Eigen from
# pkg-config or /usr/include/eigen3), timed by /usr/bin/time; the least user + system CPU time
# of the runs is reported, with the peak memory of the compiler. A baseline of <Eigen/Core>
# alone shows what any Eigen user already pays. Prints the machine and load first, then a
# markdown table sorted by cost; run it on a quiet machine.
# Usage: examples/benchmarks/bench_includes.sh [HEADER...]   (names relative to include/, e.g.
#        clp/synthesize.hpp; default: every public header)
# Environment: CXX (default g++), CLP_BENCH_RUNS.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cxx="${CXX:-g++}"
runs="${CLP_BENCH_RUNS:-3}"
eigen_flags=$(pkg-config --cflags eigen3 2>/dev/null || echo "-I/usr/include/eigen3")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if (($# > 0)); then
  headers=("$@")
else
  mapfile -t headers < <(cd "$repo/include" && find clp -maxdepth 2 -name '*.hpp' -not -path 'clp/detail/*' | sort)
fi

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "compiler: $($cxx --version | head -1); flags: -std=c++17 -O2 -DNDEBUG; $runs runs each, least CPU time"

# One header: prints "seconds peak_kib", or "failed" when it does not compile here (an adapter
# whose library is absent, or a broken header), with the compiler's first error on stderr.
measure() {
  local include=$1 best="" peak=0 i
  printf '#include <%s>\nint main() { return 0; }\n' "$include" > "$scratch/tu.cpp"
  for ((i = 0; i < runs; ++i)); do
    # shellcheck disable=SC2086  # the pkg-config flags are words
    if ! /usr/bin/time -f '%U %S %M' -o "$scratch/time" \
        "$cxx" -std=c++17 -O2 -DNDEBUG -I"$repo/include" $eigen_flags -c "$scratch/tu.cpp" \
        -o "$scratch/tu.o" 2> "$scratch/err"; then
      echo "  $include: did not compile: $(grep -m1 'error' "$scratch/err" || head -1 "$scratch/err")" >&2
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

rows=()
for header in Eigen/Core "${headers[@]}"; do
  result=$(measure "$header")
  echo "  $header: $result" >&2
  rows+=("$header $result")
done

echo
echo "| header | CPU seconds (least of $runs) | compiler peak MiB |"
echo "|---|---:|---:|"
printf '%s\n' "${rows[@]}" | awk '$2 == "failed" { print "| `" $1 "` | did not compile (the error is above) | |"; next }
  { printf "%s\t| `%s` | %.1f | %d |\n", $2, $1, $2, $3 / 1024 }' | sort -t$'\t' -k1,1 -rn | cut -f2-
