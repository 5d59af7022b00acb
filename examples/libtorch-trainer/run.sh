#!/bin/sh
# The paper's Figure 2 in C++: prepare the German token ids, build the trainer, train from each
# initialisation and print the validation loss side by side (examples/libtorch-trainer/README.md).
#
#   examples/libtorch-trainer/run.sh                         # all four initialisations, seed 0
#   examples/libtorch-trainer/run.sh --inits overlap-random,clp --seed 1
#
# Options go to the trainer (clp_libtorch_trainer --help). Environment:
#   TRAINER_BUILD  build folder (default /tmp/clp-libtorch-trainer-build), unless
#   TRAINER        names a built clp_libtorch_trainer
#   TRAINER_DATA   folder for train.u16 and valid.u16 (default /tmp/clp-libtorch-trainer-data;
#                  written once by prepare_data.py with Debian's /usr/bin/python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
start=$(date +%s)
data=${TRAINER_DATA:-/tmp/clp-libtorch-trainer-data}
if [ ! -f "$data/train.u16" ] || [ ! -f "$data/valid.u16" ]; then
    /usr/bin/python3 "$here/prepare_data.py" "$data"
fi
if [ -z "${TRAINER:-}" ]; then
    build=${TRAINER_BUILD:-/tmp/clp-libtorch-trainer-build}
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=native -DNDEBUG" -DCLP_BUILD_TESTS=OFF >/dev/null
    cmake --build "$build" --target clp_libtorch_trainer
    TRAINER=$build/examples/libtorch-trainer/clp_libtorch_trainer
fi
# libgomp's threads spin while they wait; on two cores shared with other jobs that made two
# threads six times slower than one (measured), so they sleep instead unless told otherwise.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "trainer: $TRAINER; $(grep -m1 'model name' /proc/cpuinfo); load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
cd "$root"
"$TRAINER" --data "$data" "$@"
echo "run.sh: $(( $(date +%s) - start )) s wall; load: $(cut -d' ' -f1-3 /proc/loadavg)"
