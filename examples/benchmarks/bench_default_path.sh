#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The program's default path at a real size against its floor (issue 12, item 1): a
# Llama-2-7B-shaped source (32,000 x 4,096 BF16 embedding and untied head) given Qwen3's
# vocabulary through a 151,680 x 1,024 BF16 helper, real tokenizer files
# (make_checkpoints.py llama2-qwen3). In one run:
#   1. clp-transfer transfer with its defaults (top-k, byte matching), its phase times and peak RSS;
#   2. the similarity product of that transfer alone (bench_synthesis --similarity-product with
#      the run's missing x overlap x d_helper): the floor of the default path;
#   3. cp of the run's output (the same bytes) into the same folder: the page-cache write rate.
# Usage: examples/benchmarks/bench_default_path.sh [WORK_DIR]   (about 4 GB of free disk)
# Environment: CLP_BENCH_BUILD_DIR (default build/release), CLP_BENCH_PYTHON, CLP_BENCH_PERF=1
# (also record a perf profile of the transfer into WORK_DIR/perf.data and print its top symbols).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
work="${1:-/tmp/clp-default-path}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
run() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
cmake --build "$build" --target clp-transfer bench_synthesis > /dev/null
program="$build/examples/clp-transfer/clp-transfer"
bench="$build/examples/benchmarks/bench_synthesis"

[[ -f "$work/helper/model.safetensors" ]] || "$python" "$repo/examples/benchmarks/make_checkpoints.py" llama2-qwen3 "$work"
cat "$work"/source/model.safetensors "$work"/helper/model.safetensors > /dev/null  # inputs in the page cache
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

rm -rf "$work/out" "$work/report.json" "$work/cp"
# Writes are throttled to the disk's rate while earlier writes (the generated inputs, an earlier
# output) are still dirty in the page cache: both timed writes below start from a synced state.
sync
perf_prefix=()
[[ "${CLP_BENCH_PERF:-0}" == 1 ]] && perf_prefix=(perf record -F 499 -o "$work/perf.data" --)
run /usr/bin/time -f "wall %e s, user %U s, sys %S s, peak RSS %M KiB" "${perf_prefix[@]}" "$program" transfer \
  --source "$work/source" --helper "$work/helper" --output "$work/out" --report "$work/report.json" --quiet
read -r overlap missing read_s synth_s write_s total_s < <("$python" - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["seconds"]
print(r["overlap"], r["missing"], s["read"], s["synthesize"], s["write"], s["total"])
PY
)
out_bytes=$(du -cb "$work"/out/*.safetensors | tail -1 | cut -f1)
echo "transfer: overlap $overlap, rows synthesised $missing; read $read_s s, synthesise $synth_s s, write $write_s s, total $total_s s; output $out_bytes bytes"

product=$(run "$bench" --similarity-product "$missing" "$overlap" 1024 --repeats 1 | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
echo "similarity product alone ($missing x $overlap x 1024): $product s"

mkdir -p "$work/cp"
sync
cp_s=$( { /usr/bin/time -f "%e" cp "$work"/out/*.safetensors "$work/cp/"; } 2>&1 | tail -1)
rm -rf "$work/cp"
"$python" - "$total_s" "$product" "$write_s" "$cp_s" "$out_bytes" <<'PY'
import sys
total, product, write, cp, size = map(float, sys.argv[1:])
print(f"whole program / similarity product: {total / product:.2f}x (target: at most 1.5x)")
print(f"write: {size / write / 1e9:.2f} GB/s (target: at least 1 GB/s); cp of the same bytes: {size / cp / 1e9:.2f} GB/s")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ "${CLP_BENCH_PERF:-0}" == 1 ]]; then
  perf report -i "$work/perf.data" --no-children --sort dso,symbol --percent-limit 1 --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
fi
