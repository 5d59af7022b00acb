#!/usr/bin/env bash
# `clp-transfer evaluate` against a default `clp-transfer transfer` of the same pair, side by side
# in one run, at real shapes (make_checkpoints.py folders, made where missing):
#   transfer            the default: least-squares with top-k mean row norms, the similarity product
#                       bf16 where it runs (auto), else float32
#   transfer-float32    the same with --similarity-product float32
#   evaluate            every weighting (the default list), 3 splits
#   evaluate-2          --weightings top-k,least-squares (its missing rows on the transfer's product)
#   evaluate-2-float32  the same with --similarity-product float32
# Each command runs CLP_BENCH_RUNS times (default 1), the commands alternating round by round;
# the medians, each evaluate's ratio to the transfer of its path, and the peak RSS are printed
# as a markdown table and as "RESULT shape=... command=... seconds=... peak_mib=..." lines.
# Usage: examples/benchmarks/bench_evaluate.sh WORK_DIR [SHAPE...]   (gpt2-xl, llama2-qwen3;
#        default both; llama2-qwen3 needs tests/data/fetch_tokenizers.sh to have run)
# Environment: CLP_BENCH_BUILD_DIR (default build/release), CLP_BENCH_PYTHON, CLP_BENCH_RUNS.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: bench_evaluate.sh WORK_DIR [SHAPE...]}
shift
shapes=("$@")
[[ ${#shapes[@]} -gt 0 ]] || shapes=(gpt2-xl llama2-qwen3)
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
runs="${CLP_BENCH_RUNS:-1}"
program="$build/examples/clp-transfer/clp-transfer"
[[ -x $program ]] || { echo "bench_evaluate.sh: build clp-transfer first ($program)" >&2; exit 1; }
mkdir -p "$work"

commands=(transfer transfer-float32 evaluate evaluate-2 evaluate-2-float32)
arguments_of() {  # arguments_of COMMAND DIR
  local dir=$2 pair=(--source "$2/source" --helper "$2/helper")
  case $1 in
    transfer) echo transfer "${pair[@]}" --output "$dir/out" --quiet ;;
    transfer-float32) echo transfer "${pair[@]}" --output "$dir/out" --quiet --similarity-product float32 ;;
    evaluate) echo evaluate "${pair[@]}" --quiet ;;
    evaluate-2) echo evaluate "${pair[@]}" --quiet --weightings top-k,least-squares ;;
    evaluate-2-float32)
      echo evaluate "${pair[@]}" --quiet --weightings top-k,least-squares --similarity-product float32 ;;
  esac
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
     "$(grep -o 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"
for shape in "${shapes[@]}"; do
  dir="$work/$shape"
  [[ -d $dir/source && -d $dir/helper ]] || "$python" "$repo/examples/benchmarks/make_checkpoints.py" "$shape" "$dir"
  sync
  declare -A times=() peak=()
  for ((round = 1; round <= runs; ++round)); do
    for command in "${commands[@]}"; do
      rm -rf "$dir/out"
      read -r -a args <<< "$(arguments_of "$command" "$dir")"
      read -r seconds kib < <(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -f "%e %M" \
                                "$program" "${args[@]}" 2>&1 >/dev/null | tail -1)
      times[$command]+="$seconds "
      peak[$command]=$(( ${peak[$command]:-0} > kib ? ${peak[$command]:-0} : kib ))
      echo "  $shape round $round: $command ${seconds} s, peak $((kib / 1024)) MiB" >&2
    done
  done
  rm -rf "$dir/out"
  echo "| $shape | seconds (median of $runs) | x the transfer of its path | peak RSS |"
  echo "|---|---:|---:|---:|"
  transfer_s=$(median ${times[transfer]}) transfer_f32=$(median ${times[transfer-float32]})
  for command in "${commands[@]}"; do
    s=$(median ${times[$command]})
    base=$transfer_s
    [[ $command == *float32* ]] && base=$transfer_f32
    [[ $command == evaluate ]] && base=$transfer_s
    ratio=$(awk -v a="$s" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
    echo "| \`$(arguments_of "$command" DIR | sed 's| --quiet||')\` | $s | $ratio | $(( ${peak[$command]} / 1024 )) MiB |"
    echo "RESULT shape=$shape command=$command seconds=$s ratio=$ratio peak_mib=$(( ${peak[$command]} / 1024 ))" >&2
  done
  unset times peak
done
