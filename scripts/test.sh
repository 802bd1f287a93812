#!/usr/bin/env bash
# All tests, as CI runs them (.ci/run calls this): installs what is missing, then
#   release   clang-format check, unit tests (GoogleTest via CTest), `leanattn check --count 500`
#   asan      the unit tests and a short `leanattn check` under AddressSanitizer +
#             UndefinedBehaviorSanitizer
#   tsan      the threaded-engine and executor-cache tests under ThreadSanitizer
#   cuda      compiles and links the CUDA engine (nvcc present), runs its tests (they skip
#             without a GPU), checks the ptxas report for register spills, and installs the
#             build for the install consumer (scripts/install-consumer-check.sh: it links the
#             CUDA engine and runs "cuda" where a GPU is present)
#   mutation  scripts/mutation-check.sh: deliberately broken builds must fail the suite
#   fuzz      the libFuzzer target over the planner, validators, interpreter and CPU engine, for
#             FUZZ_SECONDS (60)
#   python    pip install of the package into a venv and its pytest suite (without torch)
#   torch     the torch-based tests (torch tensors and custom op, transformers models,
#             torch.distributed) in a venv cached outside the clone (scripts/test-torch.sh)
#   package   scripts/package-check.sh: `cmake --install` and a find_package(leanattn) consumer
#             built against it; the wheel, repaired, in a fresh venv with the system's libhwy
#             hidden
# Stages can be chosen: scripts/test.sh release asan ... (default: all). Exit code non-zero if
# any stage failed; a summary of the stages is printed last, a stage that could not run on this
# machine (cuda without nvcc) as "skipped", never as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(release asan tsan cuda mutation fuzz python torch package)

groups=()
for s in "${stages[@]}"; do
  case "$s" in
    fuzz) groups+=(fuzz) ;;
    python | torch | package) groups+=(python) ;;
  esac
done
scripts/install-deps.sh "${groups[@]}" || exit 1

declare -A result
declare -A seconds
run_stage() {
  local name=$1
  shift
  echo
  echo "======== stage $name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  case $rc in
    0) result[$name]=passed ;;
    77) result[$name]=skipped ;;
    *) result[$name]=FAILED ;;
  esac
  seconds[$name]=$((SECONDS - start))
}

build_preset() {
  cmake --preset "$1" >/dev/null && cmake --build --preset "$1" -j "$jobs"
}

# Every C++/CUDA source tracked by git must match the repo's .clang-format.
check_format() {
  echo "== clang-format check"
  git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror
}

stage_release() {
  check_format &&
    build_preset release &&
    ctest --preset release -j "$jobs" &&
    echo "== leanattn check --count 500" &&
    build/release/apps/leanattn/leanattn check --count 500
}

stage_asan() {
  build_preset asan &&
    ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j "$jobs" &&
    echo "== leanattn check --count 60 (sanitized)" &&
    ASAN_OPTIONS=detect_leaks=1 build/asan/apps/leanattn/leanattn check --count 60
}

stage_tsan() {
  build_preset tsan &&
    TSAN_OPTIONS=halt_on_error=1 ctest --preset tsan -j 1 \
      -R "EngineTest|NumericsTest|Reproducibility|BadInput|LargeSizes|ExecutorCache|PlanMemo"
}

stage_cuda() {
  if ! command -v nvcc >/dev/null; then
    echo "nvcc not found: CUDA stage skipped"
    return 77
  fi
  build_preset cuda &&
    ctest --preset cuda -j "$jobs" -L cuda &&
    echo "== cmake --install of the CUDA build and the install consumer" &&
    scripts/install-consumer-check.sh build/cuda
}

stage_mutation() {
  scripts/mutation-check.sh
}

stage_fuzz() {
  build_preset fuzz || return 1
  local work
  work=$(mktemp -d)
  build/fuzz/fuzz/plan_fuzzer -max_total_time="${FUZZ_SECONDS:-60}" -print_final_stats=1 \
    -artifact_prefix="$work/" "$work" fuzz/corpus/plan 2>&1 | tail -12
  local rc=${PIPESTATUS[0]}
  rm -rf "$work"
  return "$rc"
}

stage_python() {
  scripts/test-python.sh
}

stage_torch() {
  scripts/test-torch.sh
}

stage_package() {
  scripts/package-check.sh
}

for s in "${stages[@]}"; do
  case "$s" in
    release | asan | tsan | cuda | mutation | fuzz | python | torch | package) run_stage "$s" "stage_$s" ;;
    *) echo "test.sh: unknown stage '$s'"; result[$s]=FAILED; seconds[$s]=0 ;;
  esac
done

echo
echo "======== summary"
status=0
declare -A count=([passed]=0 [FAILED]=0 [skipped]=0)
for s in "${stages[@]}"; do
  printf '  %-8s %-7s %5ss\n' "$s" "${result[$s]}" "${seconds[$s]}"
  count[${result[$s]}]=$((count[${result[$s]}] + 1))
  [ "${result[$s]}" = FAILED ] && status=1
done
echo "stages: ${count[passed]} passed, ${count[FAILED]} failed, ${count[skipped]} skipped"
exit $status
