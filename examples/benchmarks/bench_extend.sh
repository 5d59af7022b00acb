#!/usr/bin/env bash
# `clp-transfer extend` against a default `clp-transfer transfer` of the same pair, side by side,
# at the real Llama-2 (4,096 wide, untied head) source with Qwen3's tokenizer and a 1,024-wide
# helper (make_checkpoints.py llama2-qwen3, random weights of the real shapes; made where
# missing, which needs tests/data/fetch_tokenizers.sh llama2):
#   transfer  the default: the source with the helper's vocabulary (151,680 rows)
#   extend    the default: the source with every Qwen3 token it lacks added (the new rows by the
#             default weighting, intermediates by the mean of their pieces)
# Each command runs CLP_BENCH_RUNS times (default 3), the two alternating round by round, each
# into an output folder removed before the run (outside its time), timed by /usr/bin/time. Prints
# the machine, the load, each round, then min/median/max seconds, extend's ratio to transfer
# (median over median) and the peak RSS as a markdown table and as "RESULT ..." lines, and
# extend's counts from its report (added, intermediates, left out, rows filled and grown, drift).
# Usage: examples/benchmarks/bench_extend.sh WORK_DIR
# Environment: CLP_BENCH_BUILD_DIR (default build/release), CLP_BENCH_PYTHON, CLP_BENCH_RUNS.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: bench_extend.sh WORK_DIR}
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
runs="${CLP_BENCH_RUNS:-3}"
program="$build/examples/clp-transfer/clp-transfer"
[[ -x $program ]] || { echo "bench_extend.sh: build clp-transfer first ($program)" >&2; exit 1; }
dir="$work/llama2-qwen3"
mkdir -p "$work"
[[ -d $dir/source && -d $dir/helper ]] || "$python" "$repo/examples/benchmarks/make_checkpoints.py" llama2-qwen3 "$dir"
sync

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
     "$(grep -o 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"

commands=(transfer extend)
arguments_of() {  # arguments_of COMMAND
  local pair=(--source "$dir/source" --helper "$dir/helper" --output "$dir/out")
  case $1 in
    transfer) echo transfer "${pair[@]}" --quiet ;;
    extend) echo extend "${pair[@]}" --quiet --report "$dir/extend.json" ;;
  esac
}
sorted() { printf '%s\n' "$@" | sort -g; }
median() { sorted "$@" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A times=() peak=()
for ((round = 1; round <= runs; ++round)); do
  for command in "${commands[@]}"; do
    read -r -a args <<< "$(arguments_of "$command")"
    rm -rf "$dir/out" "$dir/extend.json"
    sync
    read -r seconds kib < <(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -f "%e %M" \
                              "$program" "${args[@]}" 2>&1 >/dev/null | tail -1)
    times[$command]+="$seconds "
    peak[$command]=$(( ${peak[$command]:-0} > kib ? ${peak[$command]:-0} : kib ))
    echo "  round $round: $command ${seconds} s, peak $((kib / 1024)) MiB" >&2
  done
done
rm -rf "$dir/out"

echo "| llama2-qwen3 | seconds min / median / max of $runs | x transfer (medians) | peak RSS |"
echo "|---|---:|---:|---:|"
transfer_s=$(median ${times[transfer]})
for command in "${commands[@]}"; do
  read -r -a all <<< "$(sorted ${times[$command]} | tr '\n' ' ')"
  s=$(median ${times[$command]})
  ratio=$(awk -v a="$s" -v b="$transfer_s" 'BEGIN { printf "%.2f", a / b }')
  echo "| \`$(arguments_of "$command" | sed "s|$dir/||g; s| --quiet||; s| --report extend.json||")\` |" \
       "${all[0]} / $s / ${all[${#all[@]}-1]} | $ratio | $(( ${peak[$command]} / 1024 )) MiB |"
  echo "RESULT command=$command seconds=$s ratio=$ratio peak_mib=$(( ${peak[$command]} / 1024 ))" >&2
done
"$python" - "$dir/extend.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("extend: %d of the helper's %d missing tokens added (%.2f%%), %d intermediates, %d left out; "
      "%d padding rows filled, %d rows grown to %d; drift %d of %d probe words (%.2f%%)"
      % (r["added"], r["helper_missing"], 100.0 * r["added"] / max(1, r["helper_missing"]), r["intermediates"],
         r["left_out_count"], r["padding_rows_filled"], r["rows_grown"], r["output_rows"], r["drift"]["changed"],
         r["drift"]["words"], 100 * r["drift"]["share"]))
reasons = {}
for t in r["left_out"]:
    reason = t["reason"].split(":")[0].split("(")[0].strip()
    reasons[reason] = reasons.get(reason, 0) + 1
for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
    print("  left out %6d  %s" % (count, reason))
EOF
