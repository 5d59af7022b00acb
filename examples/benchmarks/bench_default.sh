#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The program as users run it, beside its peers, in one run: `clp-transfer transfer` with every
# default on, as a user types it, at three pairs,
#   shipped  examples/models/en-large -> de-small (the quick start's pair; trained weights),
#   gpt2-xl  a 50,257 x 1,600 F32 source and a 50,257 x 768 helper (make_checkpoints.py gpt2-xl),
#   llama2-qwen3  a 32,000 x 4,096 BF16 source with an untied head and Qwen3's 151,680 x 1,024
#            BF16 helper, the real tokenizers (make_checkpoints.py llama2-qwen3),
# (random weights of the real shapes for the last two: their top variances are close, the case
# where the under-trained screen's principal component is hardest), and at each pair the same
# transfer with one default turned off: `--undertrained keep` (no screen) and `--row-norms map`
# (no row-norm rule: the map's own norms, which need no neighbour lists, so no similarity
# product). The commands alternate, round by round, each into a fresh output folder. Beside them:
#   - at gpt2-xl, `--weighting paper` against the NumPy peer's batched synthesis with the paper's
#     weights at the same shape (numpy_peer.py --impl batched --shape gpt2-xl);
#   - at llama2-qwen3, NumPy's float32 similarity product alone at the run's shape (missing rows
#     x overlap x 1,024; numpy_peer.py --impl product): the floor of any weighting that reads
#     cosines, and the bar the whole default transfer is held to.
# Each row of the table is the median of the rounds, with the phases the program reports
# (read, screen, synthesize, write, check, total; seconds), peak RSS, and the ratios. The CPU is
# named in the table's heading.
#
# Usage: examples/benchmarks/bench_default.sh [--out FILE.md] [WORK_DIR]   (about 3 GB of disk)
# Environment: CLP_BENCH_RUNS (rounds, default 3; the shipped pair runs 5x as many),
# CLP_BENCH_PAIRS (default "shipped gpt2-xl llama2-qwen3"), CLP_BENCH_BUILD_DIR (default
# build/release), CLP_BENCH_PYTHON (default /usr/bin/python3, which needs python3-numpy),
# CLP_BENCH_NO_BUILD=1 (time the program as built). OpenBLAS runs its fast kernel only with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: every command here runs without them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out_file=""
if [[ "${1:-}" == "--out" ]]; then
  out_file=$2
  shift 2
fi
work="${1:-/tmp/clp-bench-default}"
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
runs="${CLP_BENCH_RUNS:-3}"
pairs="${CLP_BENCH_PAIRS:-shipped gpt2-xl llama2-qwen3}"
run() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
[[ "${CLP_BENCH_NO_BUILD:-0}" == 1 ]] || cmake --build "$build" --target clp-transfer > /dev/null
program="$build/examples/clp-transfer/clp-transfer"
mkdir -p "$work"
results="$work/results.tsv"
: > "$results"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
bf16=$(grep -o 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "CPU: $cpu, $(nproc) cores, ${bf16:-no avx512_bf16 or AMX}; $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo ' (with uncommitted changes)')"

folders() {  # folders PAIR -> "SOURCE HELPER"
  case $1 in
    shipped) echo "$repo/examples/models/en-large $repo/examples/models/de-small" ;;
    gpt2-xl | llama2-qwen3)
      if [[ ! -f "$work/$1/helper/model.safetensors" ]]; then
        [[ $1 == llama2-qwen3 ]] && bash "$repo/tests/data/fetch_tokenizers.sh" llama2 > /dev/null
        "$python" "$repo/examples/benchmarks/make_checkpoints.py" "$1" "$work/$1" > /dev/null
      fi
      echo "$work/$1/source $work/$1/helper" ;;
    *) echo "bench_default.sh: unknown pair $1 (shipped, gpt2-xl, llama2-qwen3)" >&2; exit 2 ;;
  esac
}

# One transfer; appends "PAIR VARIANT read screen synthesize write check total wall rss_mib
# overlap missing moments fit prepare similarities rows held_out_check product" to the results
# (the synthesis' steps from the report's seconds.steps; "-" where a program reports none).
transfer() {  # transfer PAIR VARIANT SOURCE HELPER [OPTION...]
  local pair=$1 variant=$2 source=$3 helper=$4
  shift 4
  rm -rf "$work/out" "$work/report.json"
  sync
  local timing
  timing=$(run /usr/bin/time -f "%e %M" "$program" transfer --source "$source" --helper "$helper" \
    --output "$work/out" --report "$work/report.json" --quiet "$@" 2>&1 | tail -1)
  "$python" - "$work/report.json" "$pair" "$variant" $timing >> "$results" <<'PY'
import json, sys
STEPS = ("moments", "fit", "prepare", "similarities", "rows", "held_out_check")
report, pair, variant, wall, rss_kib = sys.argv[1:6]
r = json.load(open(report))
s = r["seconds"]
# A program older than the screen and check phases reports neither: "-".
phases = " ".join(f"{s[k]:.3f}" if k in s else "-" for k in ("read", "screen", "synthesize", "write", "check", "total"))
steps = s.get("steps", {})
step_fields = " ".join(f"{steps[k]:.3f}" if k in steps else "-" for k in STEPS)
ran = r.get("similarity_product", {}).get("ran", "-").split(" ")[0]
print(pair, variant, phases, wall, int(rss_kib) // 1024, r["overlap"], r["missing"], step_fields, ran)
PY
}

for pair in $pairs; do
  read -r source helper < <(folders "$pair")
  cat "$source"/*.safetensors "$helper"/*.safetensors > /dev/null  # inputs in the page cache
  rounds=$runs
  [[ $pair == shipped ]] && rounds=$((runs * 5))
  echo "== $pair ($rounds rounds)" >&2
  for ((round = 1; round <= rounds; ++round)); do
    transfer "$pair" default "$source" "$helper"
    transfer "$pair" keep "$source" "$helper" --undertrained keep
    transfer "$pair" map-norms "$source" "$helper" --row-norms map
    [[ $pair == gpt2-xl ]] && transfer "$pair" paper "$source" "$helper" --weighting paper
  done
  if [[ $pair == gpt2-xl ]]; then
    peer=$(run "$python" "$repo/examples/benchmarks/numpy_peer.py" --impl batched --shape gpt2-xl --repeats "$runs" |
      sed -n 's/^RESULT.* seconds=\([0-9.]*\).* rss_mb=\([0-9.]*\).*/\1 \2/p')
    read -r seconds rss <<< "$peer"
    echo "$pair numpy-batched - - $seconds - - $seconds $seconds ${rss%.*} - -" >> "$results"
  fi
  if [[ $pair == llama2-qwen3 ]]; then
    read -r overlap missing < <(awk -v p="$pair" '$1 == p && $2 == "default" {print $11, $12; exit}' "$results")
    peer=$(run "$python" "$repo/examples/benchmarks/numpy_peer.py" --impl product --target-vocab $((overlap + missing)) \
      --overlap "$overlap" --helper-dim 1024 --source-dim 1 --repeats "$runs" |
      sed -n 's/^RESULT.* seconds=\([0-9.]*\).* rss_mb=\([0-9.]*\).*/\1 \2/p')
    read -r seconds rss <<< "$peer"
    echo "$pair numpy-product - - $seconds - - $seconds $seconds ${rss%.*} - -" >> "$results"
  fi
done

"$python" - "$results" "$cpu" "$bf16" "$out_file" <<'PY'
import statistics, sys
from collections import defaultdict
results, cpu, bf16, out_file = sys.argv[1:5]
runs = defaultdict(list)
for line in open(results):
    f = line.split()
    runs[(f[0], f[1])].append(f[2:])

def values(rows, i):
    return [float(r[i]) for r in rows if r[i] != "-"]

def median(rows, i):
    v = values(rows, i)
    return statistics.median(v) if v else None

def least(rows, i):
    v = values(rows, i)
    return min(v) if v else None

def cell(x, digits=3):
    return "" if x is None else f"{x:.{digits}f}"

def ratio(a, b):
    return f"{median(a, 5) / median(b, 5):.2f} (least {least(a, 5) / least(b, 5):.2f})"

lines = [f"CPU: {cpu}, {bf16.strip() or 'no avx512_bf16 or AMX'}; medians of each command's rounds, seconds "
         "(total: also the least); ratios of medians (and of the least)", "",
         "| pair | command | read | screen | synthesize | write | check | total | least total | peak RSS MiB | ratio |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
names = {"default": "defaults", "keep": "`--undertrained keep`", "map-norms": "`--row-norms map`",
         "paper": "`--weighting paper`", "numpy-batched": "NumPy peer, batched synthesis (paper)",
         "numpy-product": "NumPy float32 similarity product alone"}
pairs = []
for pair, _ in runs:
    if pair not in pairs:
        pairs.append(pair)
for pair in pairs:
    default = runs.get((pair, "default"))
    for variant in ("default", "keep", "map-norms", "paper", "numpy-batched", "numpy-product"):
        rows = runs.get((pair, variant))
        if not rows:
            continue
        against = ""
        if variant in ("keep", "map-norms") and default:
            against = f"defaults / this: {ratio(default, rows)}"
        if variant == "numpy-batched" and (pair, "paper") in runs:
            against = f"this / `--weighting paper`: {ratio(rows, runs[(pair, 'paper')])}"
        if variant == "numpy-product" and default:
            against = f"defaults / this: {ratio(default, rows)}"
        lines.append(f"| {pair} | {names[variant]} | " + " | ".join(cell(median(rows, i)) for i in range(6)) +
                     f" | {cell(least(rows, 5))} | {cell(median(rows, 7), 0)} | {against} |")
lines.append("")
for pair in pairs:
    if (pair, "default") not in runs:
        continue
    d = runs[(pair, "default")]
    total = median(d, 5)
    shares = [f"{name} {median(d, i) / total:.1%}" if median(d, i) is not None else f"{name} not reported"
              for name, i in (("screen", 1), ("output check", 4))]
    if (pair, "map-norms") in runs:
        rule = total - median(runs[(pair, "map-norms")], 5)
        shares.append(f"row-norm rule {rule / total:.1%} (the defaults less `--row-norms map`)")
    lines.append(f"- {pair}: of the defaults' {total:.3f} s, " + ", ".join(shares))

# The defaults' synthesis step by step against its arithmetic floor: the floating-point work of
# each step at the CPU's rate, float32 at the rate NumPy's product reached in this run, bf16 at
# twice it (a bf16 dot instruction does two multiply-adds per float32 lane). The shapes are the
# pairs' (make_checkpoints.py): helper width, and the widths of the matrices the map writes.
shapes = {"gpt2-xl": (768, [1600]), "llama2-qwen3": (1024, [4096, 4096])}
product_rows = runs.get(("llama2-qwen3", "numpy-product"))
for pair in pairs:
    d = runs.get((pair, "default"))
    if pair not in shapes or not d or len(d[0]) < 17 or d[0][10] == "-":
        continue
    d_h, widths = shapes[pair]
    n, m = float(d[0][8]), float(d[0][9])
    ran = d[0][16]
    f32_rate = None
    if product_rows:
        pr = runs[("llama2-qwen3", "default")][0]
        f32_rate = 2 * float(pr[9]) * float(pr[8]) * 1024 / median(product_rows, 5)
    held = round(0.1 * n)
    work = {  # step: (flop, runs in bf16)
        "moments": (2 * n * d_h * sum(widths), False),
        "similarities": (2 * m * n * d_h, ran == "bf16"),
        "rows": (2 * m * d_h * sum(widths), False),
        "held_out_check": (2 * held * (n - held) * d_h + 2 * held * d_h * widths[0], ran == "bf16"),
    }
    lines += ["", f"{pair}, the defaults' synthesis step by step (medians, seconds; floors at "
              + (f"{f32_rate / 1e9:.0f} GFLOP/s float32, {2 * f32_rate / 1e9:.0f} bf16" if f32_rate else "no measured rate")
              + "):", "",
              "| step | seconds | GFLOP | floor s | seconds / floor |", "|---|---:|---:|---:|---:|"]
    floor_sum = 0.0
    for i, step in enumerate(("moments", "fit", "prepare", "similarities", "rows", "held_out_check")):
        seconds = median(d, 10 + i)
        flop, bf16_step = work.get(step, (0.0, False))
        floor = flop / (f32_rate * (2 if bf16_step else 1)) if f32_rate and flop else None
        floor_sum += floor or 0.0
        lines.append(f"| {step} | {cell(seconds)} | {cell(flop / 1e9, 0) if flop else ''} | {cell(floor)} | "
                     f"{cell(seconds / floor, 2) if floor and seconds else ''} |")
    if f32_rate:
        lines.append(f"| all the steps' floors | | | {floor_sum:.3f} | |")
text = "\n".join(lines)
print(text)
if out_file:
    open(out_file, "w").write(text + "\n")
PY
