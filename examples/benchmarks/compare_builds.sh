#!/usr/bin/env bash
# Two builds of the synthesis benchmark side by side, in one session: for each shape and
# weighting, BEFORE and AFTER run alternately three times each, and each run's median synthesis
# time and peak RSS are printed as one line: shape weighting run side seconds rss_mib.
#   examples/benchmarks/compare_builds.sh BUILD_BEFORE BUILD_AFTER   (build folders, e.g. build/release)
# OpenBLAS picks its fastest kernel only with these two unset.
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 BUILD_BEFORE BUILD_AFTER" >&2
  exit 2
fi
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
for shape in small gpt2-xl; do
  for weighting in paper top-k sparsemax omp; do
    for run in 1 2 3; do
      for side in before after; do
        build=$1
        [[ $side == after ]] && build=$2
        result=$("$build/examples/benchmarks/bench_synthesis" --shape "$shape" --weighting "$weighting" \
                   --repeats 3 --no-verify 2>&1 | grep '^RESULT')
        seconds=$(grep -o ' seconds=[0-9.]*' <<<"$result" | cut -d= -f2)
        rss=$(grep -o 'rss_mb=[0-9.]*' <<<"$result" | cut -d= -f2)
        echo "$shape $weighting $run $side $seconds $rss"
      done
    done
  done
done
