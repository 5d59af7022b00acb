#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Issue 12, item 2: does a BF16 similarity product pay? Runs bench_bf16 (built only where
# oneDNN is installed: Debian libdnnl-dev) through every measurement of the README's section
# "BF16 similarity product (issue 12)":
#   - the 4096^3 ceilings, float32 (OpenBLAS) and bf16 (oneDNN);
#   - the engine's top-k path (clp::synthesize_rows on a one-column source: the product, the
#     selection and, for bf16, the rescoring) at GPT2-XL, Llama-2 -> Qwen3 matched exactly, and
#     matched by bytes, float32 against the program's bf16 product, with that product's share;
#   - how often the top-10 neighbours differ: on the shipped models (en-large source, de-small
#     helper), and on the Llama-2 -> Qwen3 checkpoints of make_checkpoints.py (real tokenizers,
#     random anisotropic BF16 embeddings), matched by bytes and exactly, with float64 as the
#     referee.
# Where oneDNN has no bf16 matmul for the CPU (oneDNN 2.6, Debian 12's: bf16 needs AVX-512),
# gemm and speed print the float32 figures and say so, and agreement stops. The agreement step
# at the Llama-2 -> Qwen3 shape takes most of the time: its float64 referee (about 10 minutes
# per --match on 2 cores), and k = 10 syntheses per path to read the engine's choice back.
#   - program (issue 22): the whole `clp-transfer transfer` at the GPT2-XL and Llama-2 -> Qwen3
#     shapes (make_checkpoints.py folders), the bf16 path (the default) and
#     --similarity-product float32 alternating, CLP_BENCH_RUNS times each (default 3), each into
#     a fresh output folder (so no --force and no fsync of a replaced output); then bench_bf16
#     --speed at the same shape, whose float32 top-k path is the floor of the float32 program;
#     medians and ratios at the end.
# Prints bench_bf16's lines (RESULT lines for scripts).
#
# Usage: examples/benchmarks/run_bf16.sh [STEP...]   steps: gemm speed agreement program
#   (default: gemm speed agreement)
# Environment: CLP_BENCH_BUILD_DIR (default <repo>/build/release), CLP_BENCH_THREADS (default 2),
#   CLP_BENCH_CHECKPOINTS (where make_checkpoints.py llama2-qwen3 writes; default
#   <build dir>/llama2-qwen3, made when missing), CLP_BENCH_PYTHON (Python with NumPy, default
#   /usr/bin/python3), CLP_BENCH_NO_BUILD=1, CLP_BENCH_RUNS (program: runs per path, default 3),
#   CLP_BENCH_SHAPES (program: default "gpt2-xl llama2-qwen3"), CLP_BENCH_WORK (program: where
#   the checkpoints and outputs go, default <build dir>/bf16-program).
#
# OpenBLAS picks a slow generic kernel when OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set, so
# every measurement runs with both unset.

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
threads="${CLP_BENCH_THREADS:-2}"
checkpoints="${CLP_BENCH_CHECKPOINTS:-$build_dir/llama2-qwen3}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(gemm speed agreement)
runs="${CLP_BENCH_RUNS:-3}"
work="${CLP_BENCH_WORK:-$build_dir/bf16-program}"

log() { echo "[$(date -u +%H:%M:%S)] $* (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2; }
run_clean() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

if [[ "${CLP_BENCH_NO_BUILD:-0}" != 1 ]]; then
  log "building bench_bf16 in $build_dir"
  [[ -f "$build_dir/CMakeCache.txt" ]] || cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=native -DNDEBUG" >/dev/null
  cmake --build "$build_dir" --target bench_bf16 clp-transfer -j2 >/dev/null
fi
bench="$build_dir/examples/benchmarks/bench_bf16"
[[ -x "$bench" ]] || { echo "run_bf16.sh: $bench was not built (install libdnnl-dev, reconfigure)" >&2; exit 1; }

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One whole run: prints "wall user+sys" seconds; its summary lines go to the log.
program_run() {
  local shape="$1" product="$2" out="$work/out-$1-$2"
  rm -rf "$out" "$out.json"
  local start end
  start=$(date +%s.%N)
  run_clean /usr/bin/time -f "%U %S" -o "$work/time" "$build_dir/examples/clp-transfer/clp-transfer" transfer \
    --source "$work/$shape/source" --helper "$work/$shape/helper" --output "$out" --report "$out.json" \
    --similarity-product "$product" > "$work/log-$shape-$product" 2>&1 ||
    { echo "run_bf16.sh: clp-transfer failed; its output: $work/log-$shape-$product" >&2; exit 1; }
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" '{ printf "%.2f %.2f\n", e - s, $1 + $2 }' "$work/time"
}

program_step() {
  mkdir -p "$work"
  local shape product r
  for shape in ${CLP_BENCH_SHAPES:-gpt2-xl llama2-qwen3}; do
    if [[ ! -f "$work/$shape/helper/model.safetensors" ]]; then
      log "make_checkpoints.py $shape $work/$shape"
      "$python" "$repo/examples/benchmarks/make_checkpoints.py" "$shape" "$work/$shape"
    fi
    : > "$work/times-$shape-bf16"; : > "$work/times-$shape-float32"
    for ((r = 1; r <= runs; ++r)); do
      for product in bf16 float32; do
        local t
        t=$(program_run "$shape" "$product")
        echo "$t" >> "$work/times-$shape-$product"
        log "$shape $product run $r: wall, CPU seconds $t"
      done
    done
    local bench_shape="$shape"
    [[ "$shape" == llama2-qwen3 ]] && bench_shape=llama2-qwen3-bytes
    log "the top-k paths alone, $bench_shape"
    run_clean "$bench" --speed --shape "$bench_shape" --threads "$threads" --repeats "$runs" | tee "$work/speed-$shape"
    local bf16 float32 topk32
    bf16=$(cut -d' ' -f1 "$work/times-$shape-bf16" | median)
    float32=$(cut -d' ' -f1 "$work/times-$shape-float32" | median)
    topk32=$(grep -o 'f32_selected_seconds=[0-9.]*' "$work/speed-$shape" | cut -d= -f2)
    awk -v shape="$shape" -v runs="$runs" -v b="$bf16" -v f="$float32" -v p="$topk32" 'BEGIN {
      printf "RESULT mode=program shape=%s runs=%s bf16_wall_median=%s float32_wall_median=%s", shape, runs, b, f
      printf " float32_topk_seconds=%s speedup=%.3f bf16_over_float32_topk=%.3f\n", p, f / b, b / p }'
    grep -h "similarity product" "$work/log-$shape-bf16" || true
  done
}

for step in "${steps[@]}"; do
  case "$step" in
    gemm)
      log "4096^3 ceilings"
      run_clean "$bench" --gemm --threads "$threads" --repeats 5 ;;
    speed)
      for shape in gpt2-xl llama2-qwen3-exact llama2-qwen3-bytes; do
        log "similarity product, $shape"
        run_clean "$bench" --speed --shape "$shape" --threads "$threads" --repeats 3
      done ;;
    agreement)
      log "agreement, shipped models"
      run_clean "$bench" --agreement --source "$repo/examples/models/en-large" \
        --helper "$repo/examples/models/de-small" --float64 --threads "$threads"
      if [[ ! -f "$checkpoints/helper/model.safetensors" ]]; then
        log "make_checkpoints.py llama2-qwen3 $checkpoints"
        "$python" "$repo/examples/benchmarks/make_checkpoints.py" llama2-qwen3 "$checkpoints"
      fi
      for match in bytes exact; do
        log "agreement, Llama-2 -> Qwen3, --match $match"
        run_clean "$bench" --agreement --source "$checkpoints/source" --helper "$checkpoints/helper" \
          --match "$match" --float64 --threads "$threads"
      done ;;
    program) program_step ;;
    *) echo "run_bf16.sh: unknown step '$step' (gemm, speed, agreement, program)" >&2; exit 2 ;;
  esac
done
log "done"
