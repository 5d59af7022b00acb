#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The NumPy peer of bench_synthesis: eq. 3-4 with the paper's weights, written in NumPy, on
the very inputs bench_synthesis draws, so that the two run side by side and their rows can be
compared.

Two ways to write it:
  batched  what a careful NumPy user writes: the missing rows in blocks, two BLAS products per
           block (the block's cosines against the overlap, then those weights times the
           overlapping source rows). float32 output.
  loop     the structure of the paper's published code: every missing row's cosines in one
           |missing| x |overlap| float32 matrix, then a Python loop that takes each row's
           weighted average of all overlapping source rows (np.average). float64 output.
And one part of it:
  product  the similarity product alone: the missing rows' unit helper rows times the
           overlap's, transposed, block by block into one reused float32 buffer (the rows
           normalised before the timing). The floor of any weighting that reads cosines.

Inputs: the rows bench_synthesis draws (bench_support.hpp's counter-based streams, rebuilt
here in NumPy): source rows N(0, 1) + 0.5 x one shared row, helper rows N(0, 1) + 1.0 x another;
target ids 0 .. overlap-1 overlap, target t <-> source (t * 7919) mod |vocabulary|. Drawing
them is not timed. Only the synthesis is.

Usage:
  numpy_peer.py --impl batched --shape gpt2-xl
  numpy_peer.py --impl loop --target-vocab 8000 --overlap 2000 --helper-dim 256 --source-dim 1024
  numpy_peer.py --impl batched --shape small --check --save out.npy

Prints human-readable lines, then one "RESULT key=value ..." line for scripts
(run_benchmarks.sh reads its seconds). OpenBLAS runs its fastest kernel only when neither
OPENBLAS_CORETYPE nor OPENBLAS_L2_SIZE is set: run it as
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 numpy_peer.py ...
"""
import argparse
import ctypes
import os
import resource
import sys
import time

import numpy as np

# The shapes of bench_synthesis --shape: target vocabulary, overlap, helper width, source width.
SHAPES = {
    "small": (8000, 2000, 256, 1024),
    "gpt2-xl": (50257, 12213, 768, 1600),
    "bloom-7b1-de": (50257, 13930, 2048, 4096),
}

# --- bench_support.hpp's random streams: splitmix64 over a per-row key, then Box-Muller.
# splitmix64 adds GAMMA to its state and mixes the new state, so the i-th number of a stream
# is mix(key + i * GAMMA): every row and column is drawn at once, without a Python loop.
GAMMA = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def mix(z):
    """splitmix64's output function on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def mix_int(z):
    """mix() on one Python integer."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def row_keys(seed, stream, rows):
    """stream_key(seed, stream, row) for each row of `rows` (uint64 array)."""
    key = mix_int((seed * 0x100000001B3 + stream + GAMMA) & MASK)
    state = np.uint64(key) ^ (rows.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03))
    return mix(state + np.uint64(GAMMA))


def standard_normal_rows(keys, cols):
    """fill_standard_normal(row, cols, key) for each key: a len(keys) x cols float32 array."""
    pairs = (cols + 1) // 2
    # The stream's first number is skipped; pair p takes numbers 2p + 1 and 2p + 2.
    step = np.arange(1, 2 * pairs + 1, dtype=np.uint64) * np.uint64(GAMMA)
    u1_bits = mix(keys[:, None] + np.uint64(GAMMA) + step[0::2])
    u2_bits = mix(keys[:, None] + np.uint64(GAMMA) + step[1::2])
    u1 = ((u1_bits >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53
    u2 = (u2_bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
    radius = np.sqrt(-2.0 * np.log(u1))
    angle = 2.0 * np.pi * u2
    out = np.empty((len(keys), 2 * pairs), dtype=np.float32)
    out[:, 0::2] = radius * np.cos(angle)
    out[:, 1::2] = radius * np.sin(angle)
    return out[:, :cols]


def anisotropic(rows, cols, scale, seed, stream):
    """bench_synthesis's anisotropic(): rows x cols float32, N(0, 1) + scale x one shared row."""
    shared = standard_normal_rows(row_keys(seed, stream, np.array([MASK], dtype=np.uint64)), cols)[0]
    shared *= np.float32(scale)
    out = np.empty((rows, cols), dtype=np.float32)
    chunk = max(1, (1 << 18) // cols)  # a few MB of temporaries at a time
    for first in range(0, rows, chunk):
        last = min(rows, first + chunk)
        out[first:last] = standard_normal_rows(row_keys(seed, stream, np.arange(first, last)), cols)
        out[first:last] += shared
    return out


def draw_inputs(target_vocab, overlap, helper_dim, source_dim, seed):
    source = anisotropic(target_vocab, source_dim, 0.5, seed, 1)
    helper = anisotropic(target_vocab, helper_dim, 1.0, seed, 2)
    target_ids = np.arange(overlap)
    source_ids = (target_ids * 7919) % target_vocab
    return source, helper, target_ids, source_ids


# --- eq. 3-4 with the paper's weights: w_tj = cos(h_t, h_j) / sum_j' cos(h_t, h_j').


def unit_rows(m):
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def synthesize_batched(source, helper, target_ids, source_ids, block):
    output = np.empty((helper.shape[0], source.shape[1]), dtype=np.float32)
    output[target_ids] = source[source_ids]
    missing = np.setdiff1d(np.arange(helper.shape[0]), target_ids)
    overlap_source = source[source_ids]  # |overlap| x d_source
    overlap_helper = unit_rows(helper[target_ids])  # |overlap| x d_helper
    for first in range(0, len(missing), block):
        rows = missing[first:first + block]
        weights = unit_rows(helper[rows]) @ overlap_helper.T  # block x |overlap| cosines
        weights /= weights.sum(axis=1, keepdims=True)
        output[rows] = weights @ overlap_source
    return output


def synthesize_loop(source, helper, target_ids, source_ids):
    output = np.zeros((helper.shape[0], source.shape[1]), dtype=np.float64)
    output[target_ids] = source[source_ids]
    missing = np.setdiff1d(np.arange(helper.shape[0]), target_ids)
    overlap_source = source[source_ids]
    cosines = unit_rows(helper[missing]) @ unit_rows(helper[target_ids]).T  # held whole
    for i, t in enumerate(missing):
        output[t] = np.average(overlap_source, axis=0, weights=cosines[i] / cosines[i].sum())
    return output


def similarity_product(helper, target_ids, block):
    """The cosines of every missing row with the overlap, a block of rows at a time; returns the
    seconds the products took (normalising the rows is not timed) and the last block's cosines."""
    missing = np.setdiff1d(np.arange(helper.shape[0]), target_ids)
    queries = unit_rows(helper[missing])
    overlap_helper_t = np.ascontiguousarray(unit_rows(helper[target_ids]).T)
    buffer = np.empty((block, len(target_ids)), dtype=np.float32)
    start = time.perf_counter()
    for first in range(0, len(missing), block):
        rows = queries[first:first + block]
        np.matmul(rows, overlap_helper_t, out=buffer[:len(rows)])
    return time.perf_counter() - start, buffer


def check_rows(source, helper, target_ids, source_ids, output):
    """Largest relative error of three missing rows (bench_synthesis checks the same three)
    against eq. 3-4 evaluated in float64."""
    missing = np.setdiff1d(np.arange(helper.shape[0]), target_ids)
    overlap_helper = helper[target_ids].astype(np.float64)
    overlap_helper /= np.linalg.norm(overlap_helper, axis=1, keepdims=True)
    overlap_source = source[source_ids].astype(np.float64)
    worst = 0.0
    for t in (missing[0], missing[len(missing) // 2], missing[-1]):
        query = helper[t].astype(np.float64)
        cosines = overlap_helper @ (query / np.linalg.norm(query))
        expected = (cosines / cosines.sum()) @ overlap_source
        worst = max(worst, np.linalg.norm(output[t] - expected) / np.linalg.norm(expected))
    return worst


def openblas_core():
    """The OpenBLAS kernel NumPy runs on, from the library this process loaded."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line}
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
            library.openblas_get_corename.restype = ctypes.c_char_p
            return library.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", choices=["batched", "loop", "product"], default="batched")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="bench_synthesis's shapes")
    parser.add_argument("--target-vocab", type=int)
    parser.add_argument("--overlap", type=int)
    parser.add_argument("--helper-dim", type=int)
    parser.add_argument("--source-dim", type=int)
    parser.add_argument("--seed", type=int, default=0, help="bench_synthesis --seed")
    parser.add_argument("--block", type=int, default=1024, help="batched: missing rows per block")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs; the median is reported")
    parser.add_argument("--check", action="store_true",
                        help="three rows against eq. 3-4 in float64 (fails above 1e-3)")
    parser.add_argument("--save", metavar="FILE.npy", help="write the whole output matrix")
    args = parser.parse_args()

    if args.impl == "product" and (args.check or args.save):
        parser.error("--check and --save need a synthesis; --impl product makes none")
    dims = list(SHAPES[args.shape] if args.shape else SHAPES["small"])
    for i, name in enumerate(("target_vocab", "overlap", "helper_dim", "source_dim")):
        if getattr(args, name) is not None:
            dims[i] = getattr(args, name)
    target_vocab, overlap, helper_dim, source_dim = dims
    if not 0 < overlap < target_vocab or helper_dim < 1 or source_dim < 1 or args.repeats < 1:
        parser.error("need 0 < overlap < target vocabulary, positive widths and repeats")
    shape = args.shape if args.shape and dims == list(SHAPES[args.shape]) else "custom"
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            print(f"numpy_peer.py: warning: {variable} is set; OpenBLAS may run a slow kernel "
                  f"(run with env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)", file=sys.stderr)

    start = time.perf_counter()
    source, helper, target_ids, source_ids = draw_inputs(target_vocab, overlap, helper_dim, source_dim, args.seed)
    draw_seconds = time.perf_counter() - start

    times = []
    for _ in range(args.repeats):
        output = None  # the previous repeat's output is freed before the next is made
        start = time.perf_counter()
        if args.impl == "batched":
            output = synthesize_batched(source, helper, target_ids, source_ids, args.block)
        elif args.impl == "loop":
            output = synthesize_loop(source, helper, target_ids, source_ids)
        else:
            seconds, output = similarity_product(helper, target_ids, args.block)
            times.append(seconds)
            continue
        times.append(time.perf_counter() - start)
    seconds = float(np.median(times))
    missing = target_vocab - overlap
    flops_per_pair = helper_dim if args.impl == "product" else helper_dim + source_dim
    gflops = 2.0 * missing * overlap * flops_per_pair / seconds / 1e9
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data_mb = (source.nbytes + helper.nbytes + output.nbytes) / 2**20
    error = check_rows(source, helper, target_ids, source_ids, output) if args.check else -1.0

    print(f"shape {shape}: target {target_vocab}, overlap {overlap}, missing {missing}, "
          f"helper dim {helper_dim}, source dim {source_dim}")
    print(f"NumPy {np.__version__} {args.impl}, OpenBLAS core {openblas_core()}; inputs drawn in {draw_seconds:.2f} s")
    what = "similarity product" if args.impl == "product" else "synthesis"
    print(f"{what}: median {seconds:.4f} s over {args.repeats} repeats; {gflops:.1f} GFLOP/s of dense work")
    print(f"memory: peak RSS {peak_rss_mb:.1f} MiB; inputs + output {data_mb:.1f} MiB")
    if args.check:
        print(f"check: max relative error of 3 rows vs float64 eq. 3-4: {error:.2e}")
    if args.save:
        np.save(args.save, output)
        print(f"output written to {args.save}")
    print(f"RESULT mode={'product' if args.impl == 'product' else 'synthesis'} backend=numpy impl={args.impl} shape={shape} target_vocab={target_vocab} "
          f"overlap={overlap} helper_dim={helper_dim} source_dim={source_dim} repeats={args.repeats} "
          f"seconds={seconds:.6f} gflops={gflops:.2f} rss_mb={peak_rss_mb:.1f} data_mb={data_mb:.1f} "
          f"verify_error={error:.3g}")
    if error > 1e-3:
        print("numpy_peer.py: the output disagrees with the float64 reference", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
