#!/bin/sh
# Runs every libFuzzer target of the clp-transfer input parsers for SECONDS each (default 60),
# one after the other, and prints each target's executions. Build them first:
#   cmake --preset fuzz && cmake --build --preset fuzz
# The working corpus grows in build/fuzz/corpus/TARGET (seeded from tests/fuzz/corpus and
# tests/fuzz/regressions, which stay as they are); a finding is written to
# build/fuzz/findings/TARGET-crash-... and ends the run with status 1. Copy it into
# tests/fuzz/regressions/TARGET/ with the fix, so the test suite replays it from then on.
# Usage: tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]
# With CLP_FUZZ_RUNS=N each target also stops after N executions (whichever comes first).
set -eu
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-"safetensors_header tokenizer_json vocab_json shard_index config_json embedding_read sentencepiece_model torch_pickle torch_checkpoint wordpiece_vocab"}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${CLP_FUZZ_BUILD:-$root/build/fuzz}
mkdir -p "$build/findings"
total=0
status=0
for target in $targets; do
  corpus=$build/corpus/$target
  mkdir -p "$corpus"
  log=$build/findings/$target.log
  # A target's own dictionary where it has one (the binary formats), else the JSON one.
  dict=$root/tests/fuzz/$target.dict
  [ -f "$dict" ] || dict=$root/tests/fuzz/json.dict
  # A target without a finding yet has no regressions folder.
  regressions=$root/tests/fuzz/regressions/$target
  [ -d "$regressions" ] || regressions=
  if "$build/tests/fuzz/clp_fuzz_$target" "$corpus" "$root/tests/fuzz/corpus/$target" \
      ${regressions:+"$regressions"} -dict="$dict" -max_total_time="$seconds" \
      ${CLP_FUZZ_RUNS:+-runs=$CLP_FUZZ_RUNS} -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$target-" >"$log" 2>&1; then
    result=ok
  else
    result="FINDING (see $log)"
    status=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  runs=${runs:-0}
  total=$((total + runs))
  echo "$target: $runs executions in ${seconds}s, $result"
done
echo "all targets: $total executions"
exit $status
