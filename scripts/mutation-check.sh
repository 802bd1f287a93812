#!/usr/bin/env bash
# The mutation check: proves the suite fails when the code is wrong. Builds the `mutation` preset
# (the release build with the deliberate bugs of src/problem/mutation.hpp compiled in, selected at
# run time by LEANATTN_MUTATION), then for the correct code and for each mutation runs a focused
# part of the suite: the CPU engine tests, the random strategy checks and a short `leanattn check`.
# The correct code must pass; every mutation must fail, and must fail the Sensitivity batches in
# every dtype, with and without an empty request. Prints which tests catch each mutation
# (docs/validation.md keeps the table). Exit code non-zero if any of this does not hold.
#   scripts/mutation-check.sh [mutation ...]      (default: all but row_dot_drops_odd_vector,
#                                                  an SVE-only bug the arm64 stage plants)
set -uo pipefail
cd "$(dirname "$0")/.."
build=build/mutation
all=(merge_without_rescale continuation_skips_tile scale_one_over_d long_row_zeros
  lse_off_by_one_tile gqa_head_mapping block_table_off_by_one)
mutations=("$@")
[ ${#mutations[@]} -eq 0 ] && mutations=("${all[@]}")

# The focused suite: the tests that compare the CPU engine with the fp64 reference (the
# long-running large-size, exhaustive-sweep and bitwise-reproducibility tests, and the plan
# interpreter's, are left to the release stage).
cpu_filter='Batches/Sensitivity.*:*EngineTest.HeadDims*:*EngineTest.OneLong*:*EngineTest.Random*:*NumericsTest.*'
checks_filter='Reproducibility.RandomStrategies*'
check_args=(check --count 40 --seed 5)

# Only core and the CPU engine compile differently here (LEANATTN_MUTATIONS is private to them:
# src/CMakeLists.txt); ccache (scripts/ccache-launcher.sh) serves every other object from the
# release build's, so the build costs what the mutation hooks change.
. scripts/stage-timing.sh
timed build cmake --preset mutation >/dev/null &&
  timed build cmake --build --preset mutation -j "$(nproc)" --target cpu_tests checks_tests \
    leanattn_cli >/dev/null || {
  echo "mutation-check: build failed"
  exit 1
}

# Runs the focused suite with LEANATTN_MUTATION=$1; prints the failing tests, one a line, and
# `leanattn-check` if the check fails, `<binary>-exit` if a test binary fails without naming a
# failed test (a crash). Exit code 0 when everything passed.
run_suite() {
  local out
  out=$(
    export LEANATTN_MUTATION=$1
    run() {
      local name=$1 log
      shift
      log=$("$@" 2>&1) && return 0
      grep -E '^\[  FAILED  \] [^ ]+\.[^ ]+' <<<"$log" | awk '{print $4}' | tr -d , | sort -u |
        grep . || echo "$name-exit"
    }
    run cpu_tests "$build/tests/cpu_tests" --gtest_filter="$cpu_filter"
    run checks_tests "$build/tests/checks_tests" --gtest_filter="$checks_filter"
    "$build/apps/leanattn/leanattn" "${check_args[@]}" >/dev/null 2>&1 || echo leanattn-check
  )
  out=$(sort -u <<<"$out" | grep .)
  [ -z "$out" ] && return 0
  echo "$out"
  return 1
}

status=0
start=$SECONDS
# The suites run $(nproc) at a time (the correct code's among them), each into its own file:
# much of a suite is the fp64 reference on one thread. The report below is in the list's order.
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
suite() {  # suite NAME MUTATION: NAME.out (the failures), NAME.rc and NAME.s (its seconds)
  local t0=$SECONDS rc=0
  run_suite "$2" >"$results/$1.out" || rc=1
  echo "$rc" >"$results/$1.rc"
  echo $((SECONDS - t0)) >"$results/$1.s"
}
names=(correct "${mutations[@]}")
running=0
for name in "${names[@]}"; do
  m=$name
  [ "$name" = correct ] && m=""
  suite "$name" "$m" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
echo "== correct code"
if [ "$(cat "$results/correct.rc")" -eq 0 ]; then
  echo "   passes"
else
  echo "   FAILS on correct code:"
  sed 's/^/     /' "$results/correct.out"
  status=1
fi
for m in "${mutations[@]}"; do
  failures=$(cat "$results/$m.out")
  n=$(grep -c . <<<"$failures")
  echo "== $m: $n failing ($(cat "$results/$m.s")s)"
  if [ "$n" -eq 0 ]; then
    echo "   NOT CAUGHT"
    status=1
    continue
  fi
  # One line per test, its instances (SIMD targets, dtypes, layouts) counted.
  sed -E 's#^[^/.]+/##; s#/[^/]+$##' <<<"$failures" | uniq -c | awk '{printf "     %s (%d)\n", $2, $1}'
  for dt in f32 f16 bf16; do
    for e in with_empty no_empty; do
      if ! grep -q "Sensitivity.*/${dt}_${e}_" <<<"$failures"; then
        echo "   NOT CAUGHT by the Sensitivity batches in $dt, $e"
        status=1
      fi
    done
  done
done
echo "mutation-check: $((SECONDS - start))s of tests, $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
