#!/usr/bin/env bash
# Times the whole clp-transfer program against the core synthesis and against cp:
#  1. GPT2-XL shape, embedding-only checkpoints: clp-transfer's wall time vs bench_synthesis's
#     synthesis time at the same shape (target: at most 1.3x);
#  2. a generated 4 GB multi-tensor checkpoint: clp-transfer's copy speed vs cp of the same bytes
#     (target: at least half), and its peak RSS (target: under 1 GB); also clp-transfer --fsync
#     (flushed to disk before the rename) vs cp followed by sync, the like-for-like comparison.
# Usage: examples/benchmarks/bench_program.sh [WORK_DIR]   (needs about 9 GB of free disk)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
work="${1:-$(mktemp -d)}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
cmake --build "$build" --target clp-transfer bench_synthesis > /dev/null
program="$build/examples/clp-transfer/clp-transfer"
run() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

echo "== GPT2-XL shape, embedding-only checkpoints ($work/gpt2-xl)"
"$python" "$repo/examples/benchmarks/make_checkpoints.py" gpt2-xl "$work/gpt2-xl"
sync  # so that writing them back does not throttle the runs below
core=$(run "$build/examples/benchmarks/bench_synthesis" --shape gpt2-xl --repeats 3 --no-verify |
       sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
whole_times=()
for round in 1 2 3; do
  rm -rf "$work/gpt2-xl/out"; sync
  read -r t rss < <(run /usr/bin/time -f "%e %M" "$program" transfer --source "$work/gpt2-xl/source" \
    --helper "$work/gpt2-xl/helper" --output "$work/gpt2-xl/out" --weighting paper --quiet 2>&1 | tail -1)
  whole_times+=("$t")
done
whole=$(printf '%s\n' "${whole_times[@]}" | sort -g | sed -n 2p)
echo "core synthesis ${core} s (median of 3); whole program ${whole_times[*]} s, median ${whole} s" \
     "(ratio $(echo "scale=2; $whole / $core" | bc)), peak RSS $((rss / 1024)) MiB"

echo "== 4 GB checkpoint ($work/big)"
"$python" "$repo/examples/benchmarks/make_checkpoints.py" big "$work/big"
sync
bytes=$(stat -c %s "$work/big/source/model.safetensors")
# Page-cache writeback makes single copies noisy (3-17 s for the same cp here), so cp and
# clp-transfer alternate, three times each, from a synced state; medians are reported.
cp_times=() cp_sync_times=() ours_times=() ours_sync_times=() rss_max=0
fresh() { rm -rf "$work/big/out" "$work/big/cp.safetensors"; sync; }
for round in 1 2 3; do
  fresh
  read -r t _ < <(/usr/bin/time -f "%e %M" cp "$work/big/source/model.safetensors" "$work/big/cp.safetensors" 2>&1 | tail -1)
  cp_times+=("$t")
  fresh
  read -r t rss < <(run /usr/bin/time -f "%e %M" "$program" transfer --source "$work/big/source" \
    --helper "$work/big/helper" --output "$work/big/out" --quiet 2>&1 | tail -1)
  ours_times+=("$t"); rss_max=$((rss > rss_max ? rss : rss_max))
  fresh
  read -r t _ < <(/usr/bin/time -f "%e %M" sh -c 'cp "$1" "$2" && sync' sh "$work/big/source/model.safetensors" \
    "$work/big/cp.safetensors" 2>&1 | tail -1)
  cp_sync_times+=("$t")
  fresh
  read -r t rss < <(run /usr/bin/time -f "%e %M" "$program" transfer --source "$work/big/source" \
    --helper "$work/big/helper" --output "$work/big/out" --quiet --fsync 2>&1 | tail -1)
  ours_sync_times+=("$t"); rss_max=$((rss > rss_max ? rss : rss_max))
done
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
rate() { echo "scale=0; $bytes / 1048576 / $1" | bc; }
cp_s=$(median "${cp_times[@]}"); ours=$(median "${ours_times[@]}")
cp_sync_s=$(median "${cp_sync_times[@]}"); ours_sync=$(median "${ours_sync_times[@]}")
echo "cp:                   ${cp_times[*]} s, median ${cp_s} s ($(rate "$cp_s") MiB/s)"
echo "clp-transfer:         ${ours_times[*]} s, median ${ours} s ($(rate "$ours") MiB/s," \
     "$(echo "scale=2; $cp_s / $ours" | bc)x cp's speed)"
echo "cp && sync:           ${cp_sync_times[*]} s, median ${cp_sync_s} s ($(rate "$cp_sync_s") MiB/s)"
echo "clp-transfer --fsync: ${ours_sync_times[*]} s, median ${ours_sync} s ($(rate "$ours_sync") MiB/s," \
     "$(echo "scale=2; $cp_sync_s / $ours_sync" | bc)x the speed of cp && sync)"
echo "peak RSS of clp-transfer $((rss_max / 1024)) MiB; $bytes bytes"
rm -rf "$work/big" "$work/gpt2-xl"
