#!/bin/sh
# Figure 2 of CLP-Transfer in miniature (see examples/figure2/README.md).
#
#   examples/figure2/run.sh                      # default: one seed (0), every initialisation
#   examples/figure2/run.sh --seeds 1,2          # add seeds 1 and 2 to results.csv, re-render
#   examples/figure2/run.sh --seeds 1,2 --inits overlap-random,clp-sparsemax,clp-top-k
#   examples/figure2/run.sh --report-only        # re-render figure2.png / results.md only
#
# Builds clp-transfer from the current tree (Release) into $FIG2_BUILD (default
# /tmp/clp-figure2-build) unless CLP_TRANSFER names a binary, then runs figure2.py with
# Debian's /usr/bin/python3 (torch, numpy, matplotlib).  Other options go to figure2.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
start=$(date +%s)
if [ -z "${CLP_TRANSFER:-}" ]; then
    build=${FIG2_BUILD:-/tmp/clp-figure2-build}
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=native -DNDEBUG" -DCLP_BUILD_TESTS=OFF >/dev/null
    cmake --build "$build" --target clp-transfer
    CLP_TRANSFER=$build/examples/clp-transfer/clp-transfer
fi
echo "clp-transfer: $CLP_TRANSFER; load: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$root/examples/figure2/figure2.py" --clp "$CLP_TRANSFER" "$@"
echo "run.sh: $(( $(date +%s) - start )) s wall; load: $(cut -d' ' -f1-3 /proc/loadavg)"
