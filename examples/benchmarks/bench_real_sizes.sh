#!/usr/bin/env bash
# clp-transfer at real model sizes, default options (top-k, matching by bytes):
#   llama2-qwen3   Llama-2-7B's embedding and untied head (32,000 x 4,096 BF16, no layers) to
#                  Qwen3's vocabulary through a Qwen3-0.6B-shaped helper (151,680 x 1,024)
#   llama3-gemma3  a whole Llama-3-8B-sized checkpoint (about 16 GB in four shards, every tensor
#                  at its published shape) to Gemma 3's vocabulary through a Gemma-3-1B-shaped
#                  helper (262,144 x 1,152)
# Each run is timed with /usr/bin/time -v and the program's --report, then checked: every tensor
# other than the embedding and the head byte-identical to the source's (same shards, names,
# dtypes, shapes and order), and the peak RSS against the inputs' embeddings + the output
# embeddings + 300 MB. Prints one markdown row per run.
#
# Usage: examples/benchmarks/bench_real_sizes.sh WORK_DIR [MODE...]
#        CLP_BENCH_ARGS="--tile-mb 128" examples/benchmarks/bench_real_sizes.sh ...  (more options)
# Generates what WORK_DIR lacks (make_checkpoints.py; about 17 GB for llama3-gemma3, and the
# run writes 18 GB more), keeps the inputs for the next run and removes each output once
# checked: rm -rf WORK_DIR when done. Needs tests/data/fetch_tokenizers.sh to have run.
# The page cache cannot be dropped here (no root in the machine's sense), so the row says how
# much of the inputs was in it before the run (fincore).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build="${CLP_BENCH_BUILD_DIR:-$repo/build/release}"
python="${CLP_BENCH_PYTHON:-/usr/bin/python3}"
[ $# -ge 1 ] || { echo "usage: $0 WORK_DIR [llama2-qwen3] [llama3-gemma3]" >&2; exit 2; }
work="$1"
shift
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(llama2-qwen3 llama3-gemma3)
[ -n "${CLP_BENCH_NO_BUILD:-}" ] || cmake --build "$build" --target clp-transfer > /dev/null
program="$build/examples/clp-transfer/clp-transfer"
mkdir -p "$work"

# Share of the bytes of the files given that are in the page cache, in percent.
cached() { fincore --bytes --noheadings --output RES,SIZE "$@" |
           awk '{ r += $1; s += $2 } END { printf "%.0f", s ? 100 * r / s : 0 }'; }

rows=()
for mode in "${modes[@]}"; do
  dir="$work/$mode"
  if [ ! -e "$dir/generated" ]; then
    rm -rf "$dir"
    echo "== generating $dir" >&2
    /usr/bin/time -f "   generated in %e s, peak RSS %M kB" "$python" "$repo/examples/benchmarks/make_checkpoints.py" "$mode" "$dir"
    touch "$dir/generated"
  fi
  rm -rf "$dir/out" "$dir/report.json"
  sync  # so that writing back earlier files does not throttle the run
  inputs=("$dir"/source/*.safetensors "$dir"/helper/*.safetensors)
  in_cache=$(cached "${inputs[@]}")
  echo "== $mode: clp-transfer transfer (inputs ${in_cache}% in the page cache)" >&2
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -v -o "$dir/time.txt" \
    "$program" transfer --source "$dir/source" --helper "$dir/helper" --output "$dir/out" \
    --report "$dir/report.json" ${CLP_BENCH_ARGS:-} 2> "$dir/stderr.txt" || { cat "$dir/stderr.txt" "$dir/time.txt" >&2; exit 1; }
  sed -n '/^clp-transfer: wrote/,$p' "$dir/stderr.txt" >&2
  echo "== $mode: checking the output" >&2
  rows+=("$("$python" - "$mode${CLP_BENCH_ARGS:+ $CLP_BENCH_ARGS}" "$dir" "$in_cache" <<'EOF'
import json, os, re, struct, sys

mode, folder, in_cache = sys.argv[1], sys.argv[2], sys.argv[3]
EMBEDDINGS = {"model.embed_tokens.weight", "lm_head.weight"}  # the tensors that follow the vocabulary here


def tensors(model):
    """name -> (shard file name, dtype, shape, absolute offset, bytes), and the shards in order."""
    index = os.path.join(model, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
    else:
        shards = ["model.safetensors"]
    found, order = {}, {}
    for shard in shards:
        with open(os.path.join(model, shard), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        entries = sorted(header.items(), key=lambda item: item[1]["data_offsets"][0])
        order[shard] = [name for name, _ in entries]
        for name, t in entries:
            begin, end = t["data_offsets"]
            found[name] = (shard, t["dtype"], t["shape"], 8 + n + begin, end - begin)
    return found, order


source, source_order = tensors(os.path.join(folder, "source"))
helper, _ = tensors(os.path.join(folder, "helper"))
output, output_order = tensors(os.path.join(folder, "out"))
assert source_order == output_order, "the output's shards or tensor order differ from the source's"
helper_rows = helper["model.embed_tokens.weight"][2][0]
identical = 0
for name, (shard, dtype, shape, offset, size) in source.items():
    o_shard, o_dtype, o_shape, o_offset, o_size = output[name]
    assert (o_shard, o_dtype) == (shard, dtype), name
    if name in EMBEDDINGS:
        assert o_shape == [helper_rows] + shape[1:], (name, o_shape)
        continue
    assert o_shape == shape and o_size == size, name
    with open(os.path.join(folder, "source", shard), "rb") as a, open(os.path.join(folder, "out", shard), "rb") as b:
        for at in range(0, size, 1 << 26):
            n = min(1 << 26, size - at)
            if os.pread(a.fileno(), n, offset + at) != os.pread(b.fileno(), n, o_offset + at):
                sys.exit("%s: tensor %s differs from the source's at byte %d" % (mode, name, at))
    identical += 1
identical_bytes = sum(t[4] for name, t in source.items() if name not in EMBEDDINGS)

with open(os.path.join(folder, "report.json")) as f:
    report = json.load(f)
transferred = {t["name"] for t in report["vocabulary_tensors"] if t["role"] != "warned"}
assert transferred == EMBEDDINGS & set(source), transferred
with open(os.path.join(folder, "time.txt")) as f:
    timing = f.read()
rss = 1024 * int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1))
clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", timing).group(1)
wall = sum(float(part) * 60**i for i, part in enumerate(reversed(clock.split(":"))))
cpu = sum(float(re.search(r"%s time \(seconds\): ([\d.]+)" % kind, timing).group(1)) for kind in ("User", "System"))

inputs = sum(source[name][4] for name in EMBEDDINGS & set(source)) + helper["model.embed_tokens.weight"][4]
outputs = sum(output[name][4] for name in EMBEDDINGS & set(output))
bound = inputs + outputs + 300 * 10**6
out_bytes = sum(os.path.getsize(os.path.join(folder, "out", shard)) for shard in output_order)
s = report["seconds"]
MiB = 1 << 20
print("| %s | %.1f s (read %.1f, synthesise %.1f, write %.1f; %.2f cores busy) | %.1f MiB | %.1f MiB (%s; peak %+.1f MiB over the embeddings) "
      "| %d (%d padding) | %d | %.2f GB | %.0f MB/s | %s%% | %s |" % (
          mode, wall, s["read"], s["synthesize"], s["write"], cpu / wall, rss / MiB, bound / MiB,
          "within" if rss <= bound else "OVER", (rss - inputs - outputs) / MiB, report["missing"], report["padding_rows"],
          report["overlap"], out_bytes / 1e9, (out_bytes - outputs) / 1e6 / max(s["write"], 1e-3), in_cache,
          "%d tensors, %.2f GB, byte-identical" % (identical, identical_bytes / 1e9) if identical
          else "none: embedding and head only"))
EOF
)")
  rm -rf "$dir/out"
done

echo
echo "| run | wall time | peak RSS | bound: input + output embeddings + 300 MB | rows synthesised | overlap | output | write rate (the tensors copied after the synthesis; the new ones stream out during it) | inputs in page cache | other tensors |"
echo "|---|---|---:|---|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
