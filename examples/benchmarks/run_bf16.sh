#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Issue 12, item 2: does a BF16 similarity product pay? Runs bench_bf16 (built only where
# oneDNN is installed: Debian libdnnl-dev) through every measurement of the README's section
# "BF16 similarity product (issue 12)":
#   - the 4096^3 ceilings, float32 (OpenBLAS) and bf16 (oneDNN);
#   - the top-k similarity product C = Q N^T over all blocks at GPT2-XL, Llama-2 -> Qwen3
#     matched exactly, and matched by bytes, float32 against bf16;
#   - how often the top-10 neighbours differ: on the shipped models (en-large source, de-small
#     helper), and on the Llama-2 -> Qwen3 checkpoints of make_checkpoints.py (real tokenizers,
#     random anisotropic BF16 embeddings), matched by bytes and exactly, with float64 as the
#     referee.
# Where oneDNN has no bf16 matmul for the CPU (oneDNN 2.6, Debian 12's: bf16 needs AVX-512),
# gemm and speed print the float32 figures and say so, and agreement emulates the bf16 product
# (bf16-rounded rows multiplied in float32; the products are exact, so only the order of the
# float32 sums differs). The agreement step at the Llama-2 -> Qwen3 shape takes most of the
# time (its float64 referee: about 10 minutes per --match on 2 cores).
# Prints bench_bf16's lines (RESULT lines for scripts).
#
# Usage: examples/benchmarks/run_bf16.sh [STEP...]   steps: gemm speed agreement (default: all)
# Environment: CLP_BENCH_BUILD_DIR (default <repo>/build/release), CLP_BENCH_THREADS (default 2),
#   CLP_BENCH_CHECKPOINTS (where make_checkpoints.py llama2-qwen3 writes; default
#   <build dir>/llama2-qwen3, made when missing), CLP_BENCH_PYTHON (Python with NumPy, default
#   /usr/bin/python3), CLP_BENCH_NO_BUILD=1.
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

log() { echo "[$(date -u +%H:%M:%S)] $* (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2; }
run_clean() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

if [[ "${CLP_BENCH_NO_BUILD:-0}" != 1 ]]; then
  log "building bench_bf16 in $build_dir"
  [[ -f "$build_dir/CMakeCache.txt" ]] || cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=native -DNDEBUG" >/dev/null
  cmake --build "$build_dir" --target bench_bf16 -j2 >/dev/null
fi
bench="$build_dir/examples/benchmarks/bench_bf16"
[[ -x "$bench" ]] || { echo "run_bf16.sh: $bench was not built (install libdnnl-dev, reconfigure)" >&2; exit 1; }

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
    *) echo "run_bf16.sh: unknown step '$step' (gemm, speed, agreement)" >&2; exit 2 ;;
  esac
done
log "done"
