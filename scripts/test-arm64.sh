#!/usr/bin/env bash
# The arm64 stage (scripts/test.sh arm64): the library, the CPU engine's tests and the CLI
# cross-built for 64-bit Arm (the aarch64 preset: cmake/toolchains/aarch64-linux-gnu.cmake), run
# under qemu-user on every Highway target attainable there, each named in the output:
#   NEON       qemu's neoverse-n1 (NEON only): the tiled kernel (the one x86 runs), its whole
#              per-target suite but the random-problem tests (`leanattn check` draws those below)
#              and the allocation-free steady state (cpu_alloc_tests); the tests of no target (the
#              SIMD registry and its ranking: NEON first, the prefetch plan, lent threads) on max
#   SVE2_128   qemu's max at 128 bits: the row kernel (row_kernel-inl.hpp) at 4 lanes, the
#              per-target tests that read every dtype, head_dim, group size, loader and variant,
#              and K and V of different types
#   SVE_256    qemu's max at 256 bits   )  the row kernel at 8 and 16 lanes, SVE and SVE2: the
#   SVE2       qemu's max at 512 bits   )  cheap part of the same list (wide_tests below: every
#   SVE        qemu's a64fx (SVE, no SVE2) at 512 bits )  loader, dtype and variant once); the
#              sweeps of head_dim x group size, query type and narrower V stay on SVE2_128 and
#              NEON: qemu emulates wide SVE in software floating point, 6-10x slower on a
#              Sapphire Rapids host than on Zen 4 (docs/testing.md)
#   core_tests (f16, f8 and validation rules), the cycle counter and `--from-cache` (bench_tests),
#              then `leanattn check --count $ARM64_CHECK_COUNT` (40) at 128 bits, which takes
#              NEON, SVE, SVE2 and SVE2_128 in turn
#   the planted bug: a second build with the mutation hooks (build/aarch64-mutation) runs the
#              tests that catch it (planted_tests: the head_dim sweep, whose d = 48 is an odd
#              count of 16-lane vectors) on SVE2 at 512 bits as they are (they must pass), then
#              with LEANATTN_MUTATION=row_dot_drops_odd_vector, an SVE-only bug that only
#              16-lane vectors meet (they must fail)
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
  timed build cmake --build --preset aarch64 -j "$jobs" --target cpu_tests cpu_alloc_tests \
    core_tests bench_tests leanattn_cli >/dev/null || {
  echo "test-arm64: cross build failed"
  exit 1
}

# The row kernel's tests: every dtype, head_dim and group size, the loaders bit by bit, the
# variants, NaN and overflow rules, V narrower than K in its own cache and in K's rows (about
# 30-40 s per target under qemu; the layout and worker sweeps, identical for every target's
# kernel, and absorbed MLA's shapes run on NEON). SVE2_128 adds K and V of different types (11 s
# there: the 4-lane vectors are where q4_0's half blocks differ most).
row_tests=(BlockFormatsTest.QueryTypes\* BlockFormatsTest.\*Loaders\* BlockFormatsTest.RowsAtOdd\*
  BlockFormatsTest.VariantsAndSeveral\* QuantizedKvTest.QueryTypes\* QuantizedKvTest.Loaders\*
  QuantizedKvTest.Variants\* NumericsTest.\* EngineTest.HeadDimsAndGroupSizes\*
  EngineTest.ChecksEdited\* EngineTest.Rejects\* EngineTest.Strided\*
  VariantsTest.SoftcapSinksAlibi\* VariantsTest.BiasHiding\* VariantsTest.SinksAbove\*
  ValueWidthsTest.NarrowerV\*)
# The wide-vector targets' part of it: every loader, dtype (f32, f16, bf16 queries, fp8/int8 and
# q8_0/q4_0 caches) and variant (window, soft-cap, sinks, ALiBi, bias, paged) once, without the
# five sweeps that take nine tenths of the list's time under qemu (head_dim x group size, the
# query types of both quantized families, the variants one by one, narrower V: SVE2_128 and NEON
# run them). Measured on Zen 4 at 256 bits: 3.7 s of the list's 29.6 s.
wide_tests=(BlockFormatsTest.\*Loaders\* BlockFormatsTest.RowsAtOdd\*
  BlockFormatsTest.VariantsAndSeveral\* QuantizedKvTest.Loaders\* QuantizedKvTest.Variants\*
  NumericsTest.\* EngineTest.ChecksEdited\* EngineTest.Rejects\* EngineTest.Strided\*
  VariantsTest.BiasHiding\* VariantsTest.SinksAbove\*)
# The tests that catch the planted bug (all that do, of row_tests on SVE2: this one,
# QuantizedKvTest.QueryTypes* and ValueWidthsTest.NarrowerV*, measured 2026-12-05).
planted_tests=(EngineTest.HeadDimsAndGroupSizes\*)
# The gtest filter of TESTS... on target T (the per-target instances end in /T).
filter_for() {
  local target=$1 f=""
  shift
  for t in "$@"; do f+="*$t/$target:"; done
  echo "${f%:}"
}

# gtests NAME QEMU_CPU BINARY FILTER [TARGET]: runs BINARY with FILTER under that CPU and writes
# a summary line "NAME: ...: P tests passed, F failed, S s" (each test counted once: gtest names
# a failed test twice). With TARGET, fails unless at least one test ran on it (its instances end
# in /TARGET). Exit code non-zero if a test failed or the binary did.
gtests() {
  local name=$1 cpu=$2 binary=$3 filter=$4 target=${5:-} log=$logs/$1.log t0=$SECONDS rc=0
  LEANATTN_QEMU_CPU=$cpu scripts/qemu-aarch64.sh "$binary" --gtest_filter="$filter" >"$log" 2>&1 ||
    rc=1
  local passed failed on_target
  passed=$(grep -c '^\[       OK \] ' "$log")
  failed=$(grep -E '^\[  FAILED  \] [^ ]+\.[^ ]+' "$log" | awk '{print $4}' | tr -d , |
    sort -u | grep -c .)
  echo "$name: qemu -cpu $cpu, $(basename "$binary")${target:+ on $target}: $passed tests" \
    "passed, $failed failed, $((SECONDS - t0)) s" >"$log.summary"
  if [ -n "$target" ]; then
    on_target=$(grep -c "^\[       OK \] .*/$target " "$log")
    [ "$on_target" -gt 0 ] || { echo "$name: no test ran on $target" >>"$log.summary"; rc=1; }
  fi
  return $rc
}

# NEON: the per-target suite (the random-problem tests left to `leanattn check`, the large mixed
# batch to its small one) and the engine's allocation-free steady state; the tests of no target
# (the SIMD registry and its ranking, the prefetch plan, lent threads) on qemu's max, where NEON
# and the SVE targets are all supported.
neon_filter="*/NEON:-*RandomProblems*:*RandomVariantProblems*:*PromptChunksAndDecodeRows*"
untargeted_filter="SimdTargets.*:PrefetchPlan*:LentThreads.*"
check_count=${ARM64_CHECK_COUNT:-40}
# Two lanes of work of about equal length.
(
  rc=0
  gtests neon neoverse-n1 "$build/tests/cpu_tests" "$neon_filter" NEON || rc=1
  gtests alloc neoverse-n1 "$build/tests/cpu_alloc_tests" "*" || rc=1
  echo "== leanattn check --count $check_count (qemu max at 128 bits)" >"$logs/check.log"
  LEANATTN_QEMU_CPU=max,sve-default-vector-length=16 scripts/qemu-aarch64.sh \
    "$build/apps/leanattn/leanattn" check --count "$check_count" --max-len 400 --long-len 0 \
    >>"$logs/check.log" 2>&1 || rc=1
  exit $rc
) &
lane_a=$!
(
  rc=0
  gtests core max "$build/tests/core_tests" "*" || rc=1
  gtests bench max "$build/tests/bench_tests" "CycleCounter*:CacheBench*" || rc=1
  gtests untargeted max "$build/tests/cpu_tests" "$untargeted_filter" || rc=1
  gtests sve2_128 max,sve-default-vector-length=16 "$build/tests/cpu_tests" \
    "$(filter_for SVE2_128 "${row_tests[@]}" BlockFormatsTest.KAndVOfDifferentTypes)" SVE2_128 ||
    rc=1
  gtests sve_256 max,sve-default-vector-length=32 "$build/tests/cpu_tests" \
    "$(filter_for SVE_256 "${wide_tests[@]}")" SVE_256 || rc=1
  gtests sve2 max "$build/tests/cpu_tests" "$(filter_for SVE2 "${wide_tests[@]}")" SVE2 || rc=1
  gtests sve a64fx "$build/tests/cpu_tests" "$(filter_for SVE "${wide_tests[@]}")" SVE || rc=1
  exit $rc
) &
lane_b=$!
wait $lane_a
rc_a=$?
wait $lane_b
rc_b=$?

status=0
tail -n 1 "$logs/check.log"
cat "$logs"/*.summary
# The total in the form scripts/test.sh counts (the check's line above counts on its own).
cat "$logs"/*.summary | awk '{ for (i = 2; i <= NF; i++) { if ($i == "tests") p += $(i - 1);
  if ($i == "failed,") f += $(i - 1) } } END { printf "%d passed, %d failed\n", p, f }'
for f in "$logs"/*.log; do
  if grep -q '^\[  FAILED  \]' "$f"; then
    echo "== failures in $(basename "$f")"
    grep -E '^\[  FAILED  \]|Failure|error' "$f" | head -40
  fi
done
[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] || status=1
if [ $status -eq 0 ]; then
  echo "== the Arm suites passed"
else
  echo "== the Arm suites FAILED"
  tail -n 20 "$logs/check.log"
fi

# The planted bug: only core and the CPU engine compile differently with the hooks
# (src/CMakeLists.txt), so ccache serves the rest from the build above. The hooked build must pass
# as it is, then fail with the bug.
echo "== planted bug: LEANATTN_MUTATION=row_dot_drops_odd_vector on SVE2 at 512 bits"
timed build cmake --preset aarch64 -B "$mutant_build" -DLEANATTN_MUTATIONS=ON >/dev/null &&
  timed build cmake --build "$mutant_build" -j "$jobs" --target cpu_tests >/dev/null || {
  echo "test-arm64: the mutation build failed"
  exit 1
}
mutant_filter=$(filter_for SVE2 "${planted_tests[@]}")
if ! gtests hooked max "$mutant_build/tests/cpu_tests" "$mutant_filter" SVE2; then
  echo "the build with the mutation hooks fails without a mutation:"
  cat "$logs/hooked.log.summary"
  status=1
elif LEANATTN_MUTATION=row_dot_drops_odd_vector gtests mutant max \
  "$mutant_build/tests/cpu_tests" "$mutant_filter" SVE2; then
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
