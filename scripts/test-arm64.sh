#!/usr/bin/env bash
# The arm64 stage (scripts/test.sh arm64): the library, the CPU engine's tests and the CLI
# cross-built for 64-bit Arm (the aarch64 preset: cmake/toolchains/aarch64-linux-gnu.cmake), run
# under qemu-user on every Highway target attainable there, each named in the output:
#   NEON       qemu's neoverse-n1 (NEON only): the tiled kernel (the one x86 runs), its whole
#              per-target suite but the random-problem tests (`leanattn check` draws those below)
#   SVE2_128   qemu's max at 128 bits   )  the row kernel (row_kernel-inl.hpp) at 4, 8 and 16
#   SVE_256    qemu's max at 256 bits   )  lanes, SVE and SVE2: the per-target tests that read
#   SVE2       qemu's max at 512 bits   )  every dtype, head_dim, group size, loader and variant
#   SVE        qemu's a64fx (SVE, no SVE2) at 512 bits
#   core_tests (f16, f8 and validation rules), the cycle counter and `--from-cache` (bench_tests),
#              then `leanattn check --count $ARM64_CHECK_COUNT`
#              (40) at 128 bits, which takes NEON, SVE, SVE2 and SVE2_128 in turn
#   the planted bug: a second build with the mutation hooks (build/aarch64-mutation) runs the
#              512-bit suite with LEANATTN_MUTATION=row_dot_drops_odd_vector, an SVE-only bug
#              that only 16-lane vectors meet; the suite must fail there
# Two qemu processes run at a time (the CI machine's two cores). Times under qemu are the
# emulator's, not Arm hardware's: this stage checks correctness only. docs/cpu-engine.md
# ("Arm64") says what is and is not tested.
#   scripts/test-arm64.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh
jobs=$(nproc)
build=build/aarch64
mutant_build=build/aarch64-mutation
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

timed setup scripts/install-deps.sh arm64 || exit 1
timed build cmake --preset aarch64 >/dev/null &&
  timed build cmake --build --preset aarch64 -j "$jobs" --target cpu_tests core_tests \
    bench_tests leanattn_cli >/dev/null || {
  echo "test-arm64: cross build failed"
  exit 1
}

# The row kernel's tests: every dtype, head_dim and group size, the loaders bit by bit, the
# variants, NaN and overflow rules (about 40 s per target under qemu; the layout and worker
# sweeps, identical for every target's kernel, run on NEON).
row_tests=(BlockFormatsTest.QueryTypes\* BlockFormatsTest.\*Loaders\* BlockFormatsTest.RowsAtOdd\*
  BlockFormatsTest.VariantsAndSeveral\* QuantizedKvTest.QueryTypes\* QuantizedKvTest.Loaders\*
  QuantizedKvTest.Variants\* NumericsTest.\* EngineTest.HeadDimsAndGroupSizes\*
  EngineTest.ChecksEdited\* EngineTest.Rejects\* EngineTest.Strided\*
  VariantsTest.SoftcapSinksAlibi\* VariantsTest.BiasHiding\* VariantsTest.SinksAbove\*)
# The gtest filter of TESTS... on target T (the per-target instances end in /T).
filter_for() {
  local target=$1 f=""
  shift
  for t in "$@"; do f+="*$t/$target:"; done
  echo "${f%:}"
}

# suite NAME QEMU_CPU TARGET FILTER [BUILD]: cpu_tests on TARGET under that CPU; fails unless
# every test of the filter passed and at least one ran on TARGET.
suite() {
  local name=$1 cpu=$2 target=$3 filter=$4 dir=${5:-$build} log=$logs/$1.log
  local t0=$SECONDS
  LEANATTN_QEMU_CPU=$cpu scripts/qemu-aarch64.sh "$dir/tests/cpu_tests" --gtest_filter="$filter" \
    >"$log" 2>&1
  local rc=$?
  local ran
  ran=$(grep -c "^\[       OK \] .*/$target " "$log")
  echo "$name: qemu -cpu $cpu, target $target: $ran tests passed," \
    "$(grep -c '^\[  FAILED  \] .*/' "$log") failed, $((SECONDS - t0)) s" >>"$log.summary"
  [ "$rc" -eq 0 ] && [ "$ran" -gt 0 ]
}

neon_filter="*/NEON:-*RandomProblems*:*RandomVariantProblems*:*LargeSizes*"
check_count=${ARM64_CHECK_COUNT:-40}
# Two lanes of work of about equal length.
(
  suite neon neoverse-n1 NEON "$neon_filter" || exit 1
  echo "== leanattn check --count $check_count (qemu max at 128 bits)" >"$logs/check.log"
  LEANATTN_QEMU_CPU=max,sve-default-vector-length=16 scripts/qemu-aarch64.sh \
    "$build/apps/leanattn/leanattn" check --count "$check_count" --max-len 400 --long-len 0 \
    >>"$logs/check.log" 2>&1
) &
lane_a=$!
(
  rc=0
  LEANATTN_QEMU_CPU=max scripts/qemu-aarch64.sh "$build/tests/core_tests" >"$logs/core.log" 2>&1 ||
    rc=1
  LEANATTN_QEMU_CPU=max scripts/qemu-aarch64.sh "$build/tests/bench_tests" \
    --gtest_filter='CycleCounter*:CacheBench*' >"$logs/bench.log" 2>&1 || rc=1
  suite sve2_128 max,sve-default-vector-length=16 SVE2_128 \
    "$(filter_for SVE2_128 "${row_tests[@]}")" || rc=1
  suite sve_256 max,sve-default-vector-length=32 SVE_256 \
    "$(filter_for SVE_256 "${row_tests[@]}")" || rc=1
  suite sve2 max SVE2 "$(filter_for SVE2 "${row_tests[@]}")" || rc=1
  suite sve a64fx SVE "$(filter_for SVE "${row_tests[@]}")" || rc=1
  exit $rc
) &
lane_b=$!
wait $lane_a
rc_a=$?
wait $lane_b
rc_b=$?

status=0
for f in "$logs"/*.log; do
  case $f in
    */check.log) tail -n 3 "$f" ;;
    */core.log) echo "core_tests: $(tail -n 1 "$f")" ;;
    */bench.log) echo "bench_tests (the cycle counter, --from-cache): $(tail -n 1 "$f")" ;;
  esac
done
cat "$logs"/*.summary
# The suites' total in the form scripts/test.sh counts.
cat "$logs"/*.summary | awk '{ for (i = 2; i <= NF; i++) { if ($i == "tests") p += $(i - 1);
  if ($i == "failed,") f += $(i - 1) } } END { printf "%d passed, %d failed\n", p, f }'
for f in "$logs"/*.log; do
  grep -q '^\[  FAILED  \]' "$f" && { echo "== failures in $(basename "$f")"; grep -E '^\[  FAILED  \]|Failure|error' "$f" | head -40; }
done
[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] || status=1
[ $status -eq 0 ] && echo "== the Arm suites passed" || echo "== the Arm suites FAILED"

# The planted bug: only core and the CPU engine compile differently with the hooks
# (src/CMakeLists.txt), so ccache serves the rest from the build above.
echo "== planted bug: LEANATTN_MUTATION=row_dot_drops_odd_vector on SVE2 at 512 bits"
timed build cmake --preset aarch64 -B "$mutant_build" -DLEANATTN_MUTATIONS=ON >/dev/null &&
  timed build cmake --build "$mutant_build" -j "$jobs" --target cpu_tests >/dev/null || {
  echo "test-arm64: the mutation build failed"
  exit 1
}
if LEANATTN_MUTATION=row_dot_drops_odd_vector suite mutant max SVE2 \
  "$(filter_for SVE2 "${row_tests[@]}")" "$mutant_build"; then
  echo "row_dot_drops_odd_vector: NOT CAUGHT"
  status=1
else
  failing=$(grep -E '^\[  FAILED  \] [^ ]+/SVE2[, ]' "$logs/mutant.log" | awk '{print $4}' |
    tr -d , | sort -u)
  if [ -z "$failing" ]; then  # not a wrong result: a crash or a failed start
    echo "row_dot_drops_odd_vector: the suite failed without naming a test: NOT CAUGHT"
    tail -n 20 "$logs/mutant.log"
    status=1
  else
    echo "== row_dot_drops_odd_vector: $(grep -c . <<<"$failing") failing tests (caught)"
    echo "$failing" | sed 's/^/   /'
  fi
fi
exit $status
