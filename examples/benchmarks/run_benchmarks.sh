#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One command for the whole comparison: builds bench_synthesis (Eigen + OpenBLAS, as the
# programs are built) and bench_synthesis_eigen (Eigen's own kernels), then, in this one run:
#   - the machine's float32 GEMM ceiling: NumPy/OpenBLAS np.dot and Eigen (both builds) on 4096^3;
#   - clp::synthesize_rows at three shapes (small, GPT2-XL, BLOOM-7B1 -> German), both builds;
#   - the NumPy peer (numpy_peer.py, on the same inputs): `batched` at every shape, `loop` at
#     the small shape only;
#   - the clamped policy at every shape: the same dense work without the projection that
#     paper weights allow (see synthesize.hpp), i.e. the efficiency of the blocked products;
#   - the top-k and omp policies at the GPT2-XL shape;
# and prints markdown tables: times side by side, GFLOP/s, share of the best GEMM rate, peak
# RSS, and whether each project target is met.
#
# Usage: examples/benchmarks/run_benchmarks.sh [--out FILE] [--quick]
#   --out FILE  also write the markdown to FILE
#   --quick     small shape only (a smoke test, ~1 minute)
# Environment overrides:
#   CLP_BENCH_PEER       NumPy peer script   (default: numpy_peer.py beside this script; another
#                        peer must take numpy_peer.py's options and print its seconds=)
#   CLP_BENCH_PYTHON     Python with NumPy   (default: /usr/bin/python3)
#   CLP_BENCH_BUILD_DIR  build tree to use   (default: <repo>/build/release, the release preset)
#   CLP_BENCH_NO_BUILD=1 use the binaries already in the build tree
#   CLP_BENCH_THREADS    worker threads      (default: 0 = all)
#   CLP_BENCH_TILE_MB    synthesis_options::tile_bytes in MiB (default: the library's default)
#
# OpenBLAS picks a slow generic kernel when OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set, so
# every measurement here (ours and NumPy's alike) runs with both unset; the kernel that ran
# is printed with each GEMM result.

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
peer="${CLP_BENCH_PEER:-$repo/examples/benchmarks/numpy_peer.py}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
build_dir="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
threads="${CLP_BENCH_THREADS:-0}"
tile_args=()
[[ -n "${CLP_BENCH_TILE_MB:-}" ]] && tile_args=(--tile-mb "$CLP_BENCH_TILE_MB")
out_file=""
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out_file="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '3,27p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run_benchmarks.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
run_clean() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }

[[ -f "$peer" ]] || { echo "run_benchmarks.sh: NumPy peer not found at $peer (set CLP_BENCH_PEER)" >&2; exit 1; }
"$python" -c 'import numpy' 2>/dev/null ||
  { echo "run_benchmarks.sh: $python has no NumPy (set CLP_BENCH_PYTHON)" >&2; exit 1; }

# --- build
targets=(bench_synthesis bench_synthesis_eigen)
if [[ "${CLP_BENCH_NO_BUILD:-0}" != 1 ]]; then
  log "building ${targets[*]} in $build_dir"
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    if [[ "$build_dir" == "$repo/build/release" ]]; then
      (cd "$repo" && cmake --preset release >&2) || true
    else
      cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -march=native -DNDEBUG" -DCLP_BUILD_TESTS=OFF >&2 || true
    fi
  fi
  if ! cmake --build "$build_dir" --target "${targets[@]}" >&2; then
    # The full configure can fail on work in progress elsewhere in the tree: fall back to a
    # scratch tree with the examples only.
    build_dir="${TMPDIR:-/tmp}/clp-bench-build"
    log "full build failed; building the benchmarks alone in $build_dir"
    cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -march=native -DNDEBUG" -DCLP_BUILD_TESTS=OFF >&2
    cmake --build "$build_dir" --target "${targets[@]}" >&2
  fi
fi
bench="$build_dir/examples/benchmarks/bench_synthesis"
bench_eigen="$build_dir/examples/benchmarks/bench_synthesis_eigen"
for b in "$bench" "$bench_eigen"; do
  [[ -x "$b" ]] || { echo "run_benchmarks.sh: $b not built" >&2; exit 1; }
done

results="$(mktemp "${TMPDIR:-/tmp}/clp-bench.XXXXXX")"
trap 'rm -f "$results"' EXIT

# Every result is one "RESULT key=value ..." line, tagged with the implementation name.
record() {  # record IMPL COMMAND...
  local impl="$1"; shift
  local output
  if ! output="$(run_clean "$@")"; then
    echo "run_benchmarks.sh: failed: $*" >&2
    echo "$output" >&2
    exit 1
  fi
  echo "$output" | grep -v '^RESULT' | sed 's/^/    /' >&2
  echo "$output" | grep '^RESULT' | sed "s/^RESULT /RESULT impl=$impl /" >>"$results"
}

# The NumPy peer, with its peak RSS (getrusage of the child) and data sizes added.
peer_run() {  # peer_run IMPL SHAPE TARGET OVERLAP HELPER SOURCE
  run_clean "$python" - "$python" "$peer" "$@" <<'EOF'
import re, resource, subprocess, sys
python, peer, impl, shape, target, overlap, helper, source = sys.argv[1:]
cmd = [python, peer, "--impl", impl, "--target-vocab", target, "--overlap", overlap,
       "--helper-dim", helper, "--source-dim", source]
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
seconds = float(re.search(r"seconds=([0-9.]+)", out).group(1))
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
t, o, h, s = int(target), int(overlap), int(helper), int(source)
out_bytes = 8 if impl == "loop" else 4  # the loop peer's output is float64
data_mb = (t * s * 4 + t * h * 4 + t * s * out_bytes) / 2**20
gflops = 2 * (t - o) * o * (h + s) / seconds / 1e9
print("\n".join("    " + line for line in out.strip().splitlines() if not line.startswith("RESULT")), file=sys.stderr)
print(f"RESULT mode=synthesis backend=numpy shape={shape} weighting=paper repeats=1 seconds={seconds:.6f} "
      f"gflops={gflops:.2f} rss_mb={rss_mb:.1f} data_mb={data_mb:.1f} extra_mb={rss_mb - data_mb:.1f}")
EOF
}
record_peer() {  # record_peer IMPL SHAPE DIMS...
  local impl="$1"; shift
  local output
  output="$(peer_run "$impl" "$@")"
  echo "$output" | sed "s/^RESULT /RESULT impl=numpy-$impl /" >>"$results"
}

numpy_gemm() {
  run_clean "$python" - <<'EOF'
import ctypes, sys, time
import numpy as np
n = 4096
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
np.dot(a, b)  # warm-up
best = min((lambda t0: (np.dot(a, b), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
core, threads = "unknown", 0
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if "openblas" in path or "libblas" in path:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            core, threads = lib.openblas_get_corename().decode(), lib.openblas_get_num_threads()
            break
        except (OSError, AttributeError):
            pass
gflops = 2 * n**3 / best / 1e9
print(f"    numpy {np.__version__} np.dot {n}^3 float32: best {best:.4f} s, {gflops:.1f} GFLOP/s, "
      f"OpenBLAS core {core}, {threads} threads", file=sys.stderr)
print(f"RESULT impl=numpy-gemm mode=gemm backend=openblas:{core} threads={threads} size={n} "
      f"seconds={best:.6f} gflops={gflops:.2f}")
EOF
}

log "load before start: $(cut -d' ' -f1-3 /proc/loadavg)"
start_seconds=$SECONDS

# --- GEMM ceilings
log "GEMM ceiling: NumPy / OpenBLAS"
numpy_gemm >>"$results"
log "GEMM ceiling: Eigen + OpenBLAS (bench_synthesis --gemm)"
record ours-blas "$bench" --gemm --threads "$threads"
log "GEMM ceiling: Eigen alone (bench_synthesis_eigen --gemm)"
record ours-eigen "$bench_eigen" --gemm --threads "$threads"

# --- synthesis at each shape: name, dims, repeats (BLAS build), repeats (Eigen build)
shapes=(
  "small 8000 2000 256 1024 5 3"
  "gpt2-xl 50257 12213 768 1600 3 1"
  "bloom-7b1-de 50257 13930 2048 4096 1 1"
)
[[ $quick == 1 ]] && shapes=("${shapes[0]}")
for spec in "${shapes[@]}"; do
  read -r name target overlap helper source repeats repeats_eigen <<<"$spec"
  log "shape $name: ours (Eigen + OpenBLAS)"
  record ours-blas "$bench" --shape "$name" --threads "$threads" --repeats "$repeats" "${tile_args[@]}"
  log "shape $name: ours (Eigen + OpenBLAS), clamped weights: both products in full"
  record ours-blas "$bench" --shape "$name" --threads "$threads" --repeats "$repeats" --weighting clamped "${tile_args[@]}"
  log "shape $name: ours (Eigen alone)"
  record ours-eigen "$bench_eigen" --shape "$name" --threads "$threads" --repeats "$repeats_eigen" "${tile_args[@]}"
  log "shape $name: NumPy batched peer"
  record_peer batched "$name" "$target" "$overlap" "$helper" "$source"
  if [[ $name == small ]]; then
    log "shape $name: NumPy loop peer (the published code's structure)"
    record_peer loop "$name" "$target" "$overlap" "$helper" "$source"
  fi
  if [[ $name == gpt2-xl ]]; then
    log "shape $name: ours, top-k (k = 10) weighting"
    record ours-blas "$bench" --shape "$name" --threads "$threads" --repeats 3 --weighting top-k --k 10 "${tile_args[@]}"
    log "shape $name: ours, omp (k = 8) weighting, Batch-OMP"
    record ours-blas "$bench" --shape "$name" --threads "$threads" --repeats 1 --weighting omp --k 8 "${tile_args[@]}"
  fi
done
elapsed=$((SECONDS - start_seconds))
log "measurements took ${elapsed} s; load now: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- the tables
report="$("$python" - "$results" "$elapsed" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import sys
path, elapsed, cores, load = sys.argv[1:]
rows = []
for line in open(path):
    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
    rows.append(fields)
gemm = {r["impl"]: r for r in rows if r["mode"] == "gemm"}
synth = [r for r in rows if r["mode"] == "synthesis"]
best_gemm = max(float(r["gflops"]) for r in gemm.values())
best_gemm_name = max(gemm.values(), key=lambda r: float(r["gflops"]))["backend"]

def find(impl, shape, weighting="paper"):
    for r in synth:
        if r["impl"] == impl and r["shape"] == shape and r.get("weighting", "paper") == weighting:
            return r
    return None

labels = {"ours-blas": "clp (Eigen + OpenBLAS)", "ours-eigen": "clp (Eigen only)",
          "numpy-batched": "NumPy batched", "numpy-loop": "NumPy loop (published code)",
          "numpy-gemm": "NumPy np.dot"}
out = []
out.append(f"## CLP-Transfer synthesis benchmark ({cores} cores, float32, load average at end {load})\n")
out.append("### GEMM ceiling (float32, 4096^3, all threads, best of 5)\n")
out.append("| implementation | backend (OpenBLAS kernel) | GFLOP/s |")
out.append("|---|---|---:|")
for impl in ("numpy-gemm", "ours-blas", "ours-eigen"):
    if impl in gemm:
        name = {"numpy-gemm": "NumPy np.dot", "ours-blas": "Eigen + OpenBLAS (bench_synthesis --gemm)",
                "ours-eigen": "Eigen alone (bench_synthesis_eigen --gemm)"}[impl]
        out.append(f"| {name} | {gemm[impl]['backend']} | {float(gemm[impl]['gflops']):.1f} |")
out.append(f"\nBest measured GEMM rate: **{best_gemm:.1f} GFLOP/s** ({best_gemm_name}).\n")

shapes = []
for r in synth:
    if r["shape"] not in shapes:
        shapes.append(r["shape"])
dims = {"small": "8000 / 2000 / 256 / 1024", "gpt2-xl": "50257 / 12213 / 768 / 1600",
        "bloom-7b1-de": "50257 / 13930 / 2048 / 4096"}
out.append("### Synthesis time, side by side (seconds; paper weights)\n")
out.append("| shape (target / overlap / helper dim / source dim) | clp + OpenBLAS | clp, Eigen only | clp clamped (both products) | NumPy batched | NumPy loop | clp vs batched | clp vs loop |")
out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
def sec(r):
    return f"{float(r['seconds']):.3f}" if r else "—"
for shape in shapes:
    ours, eig, bat, loop = (find(i, shape) for i in ("ours-blas", "ours-eigen", "numpy-batched", "numpy-loop"))
    vs_bat = f"{float(bat['seconds']) / float(ours['seconds']):.2f}x" if ours and bat else "—"
    vs_loop = f"{float(loop['seconds']) / float(ours['seconds']):.0f}x" if ours and loop else "—"
    dense = find("ours-blas", shape, "clamped")
    out.append(f"| {shape} ({dims.get(shape, '?')}) | {sec(ours)} | {sec(eig)} | {sec(dense)} | {sec(bat)} | {sec(loop)} | {vs_bat} | {vs_loop} |")

out.append("\n### Every run: rate, share of the best GEMM rate, memory\n")
out.append("GFLOP/s counts the dense work, 2 x missing x overlap x (helper dim + source dim), for every policy. "
           "Extra memory = peak RSS - (source + helper + output bytes); the loop peer's output is float64. "
           "Cores busy = CPU time / wall time of our runs: below the thread count means other processes "
           "took the cores (a noisy measurement).\n")
out.append("| shape | implementation | weighting | tile MiB | repeats | time s (median) | GFLOP/s | % of best GEMM | cores busy | peak RSS MiB | inputs+output MiB | extra MiB |")
out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in synth:
    g = float(r["gflops"])
    out.append(f"| {r['shape']} | {labels[r['impl']]} | {r.get('weighting', 'paper')} | "
               f"{r.get('tile_mb', '—')} | {r.get('repeats', '1')} | "
               f"{float(r['seconds']):.3f} | {g:.1f} | {100 * g / best_gemm:.0f}% | {r.get('cores_busy', '—')} | "
               f"{float(r['rss_mb']):.0f} | "
               f"{float(r['data_mb']):.0f} | {float(r['extra_mb']):.0f} |")

out.append("\n### Targets\n")
def verdict(ok):
    return "met" if ok else "**NOT met**"
for shape in shapes:
    ours, bat = find("ours-blas", shape), find("numpy-batched", shape)
    if ours and bat:
        o, b = float(ours["seconds"]), float(bat["seconds"])
        out.append(f"- {shape}: at least as fast as NumPy batched: {verdict(o <= b)} ({o:.3f} s vs {b:.3f} s)")
ours, loop = find("ours-blas", "small"), find("numpy-loop", "small")
if ours and loop:
    ratio = float(loop["seconds"]) / float(ours["seconds"])
    out.append(f"- small: at least 50x the loop peer: {verdict(ratio >= 50)} ({ratio:.0f}x)")
for shape in shapes:
    ours = find("ours-blas", shape)
    if ours:
        share = float(ours["gflops"]) / best_gemm
        out.append(f"- {shape}: at least 70% of the best GEMM rate: {verdict(share >= 0.7)} "
                   f"({float(ours['gflops']):.1f} of {best_gemm:.1f} GFLOP/s = {100 * share:.0f}%)")
for shape in shapes:
    dense = find("ours-blas", shape, "clamped")
    if dense:
        share = float(dense["gflops"]) / best_gemm
        out.append(f"- {shape}, clamped weights (no projection, both products in full): at least 70% of the best "
                   f"GEMM rate: {verdict(share >= 0.7)} ({float(dense['gflops']):.1f} GFLOP/s = {100 * share:.0f}%)")
ours = find("ours-blas", "gpt2-xl")
if ours:
    extra = float(ours["extra_mb"])
    out.append(f"- gpt2-xl: peak RSS at most inputs + output + 300 MB: {verdict(extra * 2**20 <= 300e6)} "
               f"(peak {float(ours['rss_mb']):.0f} MiB, inputs + output {float(ours['data_mb']):.0f} MiB, "
               f"extra {extra:.0f} MiB)")
topk, paper = find("ours-blas", "gpt2-xl", "top-k"), find("ours-blas", "gpt2-xl")
if topk and paper:
    out.append(f"- gpt2-xl top-k (k = 10): {float(topk['seconds']):.3f} s vs paper weights "
               f"{float(paper['seconds']):.3f} s (the similarity product alone is "
               f"{768 / (768 + 1600):.0%} of the dense work)")
omp = find("ours-blas", "gpt2-xl", "omp")
if omp and topk:
    out.append(f"- gpt2-xl omp (k = 8, Batch-OMP): {float(omp['seconds']):.3f} s, "
               f"{float(omp['seconds']) / float(topk['seconds']):.2f}x top-k (peak RSS {float(omp['rss_mb']):.0f} MiB "
               f"against top-k's {float(topk['rss_mb']):.0f}: the overlap's Gram matrix)")
out.append(f"\nMeasured in one run of {elapsed} s with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset.")
print("\n".join(out))
EOF
)"
echo "$report"
if [[ -n "$out_file" ]]; then
  echo "$report" >"$out_file"
  log "wrote $out_file"
fi
