#!/usr/bin/env bash
# The CUDA engine's check on a machine with a GPU (the project's H200 device machine, which has
# nvcc, CMake, ninja and Python but no Debian dev packages and no network), made to explain
# itself even when things fail. One call of at most 9 minutes; every phase is time-boxed against
# a global deadline, small things first, the big sweep last:
#   1. tools; 2. configure for sm_90 against the carried dependencies in .carry/
#      (scripts/prepare-device-carry.sh) and build; 3. the ptxas report (spills) and SASS counts;
#   4. diagnostics: kernel attributes and occupancy (kernels.csv), two tiny cases per kernel
#      configuration (plain; q_len 3 with a window, soft-cap, sinks and ALiBi; the 8-bit
#      configurations on an fp8 e4m3 cache, then an int8 one), per-CTA traces of a few lean plans (trace-*.csv: SM, start, end, merge);
#   5. compute-sanitizer memcheck, racecheck and synccheck on the tiny cases (time-boxed);
#   6. every GPU test in its own process (an illegal address takes down only that test), one
#      line per configuration ("[config] ... ok|FAIL <what>": rows never written / NaN /
#      numeric mismatch, split vs direct pairs), --gtest_output=xml into $OUT/gtest/; then
#      `cmake --install` and tests/install_consumer (scripts/install-consumer-check.sh), which
#      runs make_executor("cuda") from the installed package;
#   6b. the Python module with the CUDA engine, built in the same build directory (the image's
#      python3 has nanobind, PyTorch and CuPy), and pytest on the torch tests that use CUDA
#      tensors: sinks, ALiBi and 8-bit scales on the device (test_torch_device_arrays.py) and the
#      CUDA cases of test_torch_tensors.py / test_torch_quantized.py / test_torch_value_widths.py
#      (K and V of different widths refused by name; V read from K's rows), Llama and Gemma 2
#      generating through the CUDA engine in transformers (test_transformers.py), and
#      torch.cuda.graph captures replayed with new lengths (the op's plan="device", a
#      host-planned leanattn.DecodeStep: test_torch_step.py; python.log);
#   7. `leanattn bench --backend cuda` over a sweep, KV capped per case (contiguous d64/d128,
#      then DeepSeek's absorbed MLA (K 576 / V 512 from one latent cache, 16 and 128 heads) and
#      K 192 / V 128, d256, paged, the variants: q_len 4, a 4096-token window on 128k, window +
#      sinks, and 8-bit caches: fp8 e4m3 and int8 beside bf16 at 32/8 heads, d 128, 128k, batch 1),
#      against the device read probe; 8. ncu on one case when present;
#   9. the closing table (summary.txt), printed last.
# Writes everything into $OUT (else build/device-check-out): device-check.log (all output),
# ptxas.txt, kernels.csv, trace-*.csv, sanitizer-*.log, tests.txt (one line per test and per
# configuration), gtest/*.xml, test-*.log, python.log, bench.csv, bench.json, ncu.txt,
# summary.txt.
# Exit status: 0 when everything passed, 1 otherwise (the later phases still run).
#   scripts/device-check.sh            (on the device: run(command="scripts/device-check.sh",
#                                       carry=[".carry"], timeout_s=570))
# Environment: OUT, LEANATTN_CARRY (default .carry), JOBS, LEANATTN_MAX_KV_GIB (default 2),
# LEANATTN_BENCH_REPEAT (default 20), LEANATTN_BUILD_GTEST=1 (rebuild GoogleTest from the carried
# sources instead of using the carried archives), LEANATTN_BUILD_TIMEOUT (seconds, default 240),
# LEANATTN_DEADLINE (seconds for the whole run, default 520), LEANATTN_DEVICE_BUILD (build
# directory, default build/device), LEANATTN_SKIP_BUILD=1 (use that directory as it is: a dry run
# on a machine without a GPU, e.g. LEANATTN_DEVICE_BUILD=build/cuda).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
out=${OUT:-$root/build/device-check-out}
carry=${LEANATTN_CARRY:-$root/.carry}
build=${LEANATTN_DEVICE_BUILD:-$root/build/device}
case $build in /*) ;; *) build=$root/$build ;; esac
jobs=${JOBS:-$(nproc)}
max_kv_gib=${LEANATTN_MAX_KV_GIB:-2}
repeat=${LEANATTN_BENCH_REPEAT:-20}
deadline=${LEANATTN_DEADLINE:-520}
mkdir -p "$out" "$out/gtest"
log=$out/device-check.log
: >"$log"
status=0
start=$SECONDS

say() { echo "[device-check $((SECONDS - start))s] $*" | tee -a "$log"; }
fail() { say "FAILED: $*"; status=1; }
# run_logged <seconds> <command...>: output to the log, a time limit, the exit status kept.
run_logged() {
  local limit=$1
  shift
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >>"$log" 2>&1
}
# left: seconds before the global deadline; budget <want>: min(want, left - 10), at least 1.
left() { echo $((deadline - (SECONDS - start))); }
budget() {
  local l
  l=$(($(left) - 10))
  [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"
}
# One line per phase and result for the closing table.
results=$out/results.txt
: >"$results"
note() { echo "$*" >>"$results"; }

# --- 1. tools -------------------------------------------------------------------------------------
say "tools"
nvcc_bin=$(command -v nvcc || true)
[ -n "$nvcc_bin" ] || for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
  [ -x "$c" ] && nvcc_bin=$c && break
done
if [ -z "$nvcc_bin" ]; then
  fail "no nvcc found"
  exit 1
fi
export CUDACXX=$nvcc_bin
{
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version \
    --format=csv 2>&1 || echo "nvidia-smi unavailable"
  "$nvcc_bin" --version | tail -2
  cmake --version | head -1
  ninja --version
  ${CXX:-g++} --version | head -1
} >>"$log" 2>&1

# --- 2. configure and build ----------------------------------------------------------------------
carry_args=()
if [ -d "$carry/usr" ]; then
  mapfile -t carry_args < <(scripts/prepare-device-carry.sh --cmake-args "$carry")
  if [ "${LEANATTN_BUILD_GTEST:-0}" = 1 ]; then
    say "building GoogleTest from the carried sources"
    gtest_prefix=$root/build/gtest-prefix
    run_logged 300 cmake -S "$carry/usr/src/googletest" -B "$root/build/gtest" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gtest_prefix" -DCMAKE_INSTALL_LIBDIR=lib &&
      run_logged 300 cmake --build "$root/build/gtest" -j "$jobs" --target install ||
      fail "GoogleTest build"
    carry_args+=("-DGTest_DIR=$gtest_prefix/lib/cmake/GTest")
  fi
  say "using the carried dependencies in $carry"
else
  say "no carry at $carry: using the system's packages"
fi
configure() {
  run_logged 300 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLEANATTN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLEANATTN_WARNINGS_AS_ERRORS=OFF \
    -DLEANATTN_BUILD_PYTHON=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${carry_args[@]}"
}
if [ "${LEANATTN_SKIP_BUILD:-0}" = 1 ]; then
  say "LEANATTN_SKIP_BUILD=1: using $build as it is"
elif say "configure (sm_90)" && ! configure; then
  fail "configure (see device-check.log)"
  tail -40 "$log"
  exit 1
fi
targets=(leanattn_cuda cuda_gpu_tests cuda_host_tests leanattn_cli leanattn)
if [ "${LEANATTN_SKIP_BUILD:-0}" != 1 ] && say "build with $jobs jobs" &&
   ! run_logged "${LEANATTN_BUILD_TIMEOUT:-240}" cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  if [ -d "$carry/usr/src/googletest" ] && [ "${LEANATTN_BUILD_GTEST:-0}" != 1 ] &&
     grep -q "undefined reference to .*testing::" "$log"; then
    say "the carried GoogleTest archives do not link here: rebuilding from source"
    LEANATTN_BUILD_GTEST=1 exec "$0" "$@"
  fi
  fail "build (see device-check.log)"
  grep -E "error|FAILED" "$log" | head -20
  exit 1
fi
note "build: ok ($((SECONDS - start)) s)"

# --- 3. ptxas report ----------------------------------------------------------------------------
say "ptxas report"
scripts/check-ptxas.sh "$build" >"$out/ptxas.txt" 2>&1 || fail "ptxas: spills (ptxas.txt)"
note "ptxas: $(tail -1 "$out/ptxas.txt")"
tail -1 "$out/ptxas.txt" | tee -a "$log"
# SASS of the inner loop, where cuobjdump exists: tensor-core MMAs (HMMA), ldmatrix (LDSM),
# cp.async (LDGSTS), and no local memory (LDL/STL) in any kernel object.
cuobjdump_bin=$(command -v cuobjdump || ls "$(dirname "$nvcc_bin")"/cuobjdump 2>/dev/null || true)
if [ -n "$cuobjdump_bin" ]; then
  {
    echo
    echo "SASS instruction counts (sm_90): object HMMA LDSM LDGSTS LDL STL"
    for obj in "$build"/src/cuda/CMakeFiles/leanattn_cuda_kernels.dir/generated/*.o; do
      sass=$("$cuobjdump_bin" -sass "$obj" 2>/dev/null)
      printf '%s' "$(basename "$obj")"
      for op in HMMA LDSM LDGSTS LDL STL; do printf ' %s' "$(grep -c "$op" <<<"$sass")"; done
      echo
    done
  } >>"$out/ptxas.txt"
  if awk '/SASS instruction counts/ {on = 1; next} on && ($5 + $6 > 0)' "$out/ptxas.txt" | grep -q .; then
    fail "SASS uses local memory (ptxas.txt)"
  fi
fi

# --- 4. diagnostics, 5. sanitizers, 6. tests ----------------------------------------------------
gpu_tests=$build/tests/cuda/cuda_gpu_tests
host_tests=$build/tests/cuda/cuda_host_tests
: >"$out/tests.txt"
# run_test <binary> <test> <seconds> [runner...]: one test in its own process; its output in
# test-<test>.log, its [config]/[kernel]/[trace]/[tiny] lines and its verdict in tests.txt.
run_test() {
  local bin=$1 name=$2 limit rc
  limit=$(budget "$3")
  shift 3
  local tag
  tag=$(basename "$bin").${name//\//_}
  tag=${tag//\*/all}
  local logf="$out/test-$tag.log"
  if [ "$(left)" -lt 15 ]; then
    echo "SKIPPED (time) $name" >>"$out/tests.txt"
    return 0
  fi
  LEANATTN_DIAG_DIR=$out timeout --signal=TERM --kill-after=5 "$limit" "$@" "$bin" \
    --gtest_filter="$name" --gtest_output="xml:$out/gtest/$tag.xml" >"$logf" 2>&1
  rc=$?
  cat "$logf" >>"$log"
  grep -E "^\[(config|kernel|device|device-plan|host-plan|planner-cost|trace|tiny)\]" "$logf" | sed 's/^/    /' >>"$out/tests.txt"
  local verdict=PASSED
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="TIMEOUT after ${limit}s"
  elif grep -q "^\[  SKIPPED \]" "$logf" && ! grep -q "^\[  PASSED  \] [1-9]" "$logf"; then
    verdict=SKIPPED
  elif [ $rc -ne 0 ]; then
    verdict="FAILED (exit $rc$(grep -m1 -oE "an illegal memory access|unspecified launch failure|misaligned address|CudaError[^\n]{0,80}" "$logf" | sed 's/^/: /'))"
  fi
  echo "$verdict $name ($limit s box)" >>"$out/tests.txt"
  case $verdict in PASSED | SKIPPED) ;; *) fail "test $name: $verdict (test-$tag.log)" ;; esac
}

say "diagnostics (kernel attributes, occupancy, tiny cases, per-CTA traces)"
run_test "$gpu_tests" Diagnostics.KernelAttributes 30
run_test "$gpu_tests" Diagnostics.TinyCasePerConfiguration 30
run_test "$gpu_tests" Diagnostics.TracedRuns 40
grep -E "\[(device|kernel|trace|tiny)\]" "$out/tests.txt" | tee -a "$log"
if grep -q "no CUDA device" "$out"/test-cuda_gpu_tests.Diagnostics.KernelAttributes.log 2>/dev/null; then
  fail "no usable CUDA device: the GPU phases skip"
  note "GPU: none usable (see test-cuda_gpu_tests.Diagnostics.KernelAttributes.log)"
  no_gpu=1
else
  no_gpu=0
fi

say "compute-sanitizer (memcheck, racecheck, synccheck) on the tiny cases"
sanitizer=$(command -v compute-sanitizer || ls "$(dirname "$nvcc_bin")"/compute-sanitizer 2>/dev/null || true)
if [ -z "$sanitizer" ]; then
  note "sanitizer: compute-sanitizer not found"
elif [ "$no_gpu" = 1 ]; then
  note "sanitizer: skipped (no GPU)"
else
  for tool in memcheck racecheck synccheck; do
    limit=$(budget 60)
    timeout --signal=TERM --kill-after=5 "$limit" "$sanitizer" --tool "$tool" --error-exitcode 3 \
      --kernel-name regex:decode_kernel "$gpu_tests" --gtest_filter=Diagnostics.TinyCasePerConfiguration \
      >"$out/sanitizer-$tool.log" 2>&1
    rc=$?
    summary=$(grep -m1 -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer-$tool.log" || true)
    case $rc in
      0) note "sanitizer $tool: clean (${summary:-no summary})" ;;
      124 | 137) note "sanitizer $tool: TIMEOUT after ${limit}s (sanitizer-$tool.log)" ;;
      *) note "sanitizer $tool: FAILED exit $rc: ${summary:-see sanitizer-$tool.log}"
         fail "compute-sanitizer $tool (sanitizer-$tool.log)" ;;
    esac
    cat "$out/sanitizer-$tool.log" >>"$log"
  done
fi

say "GPU tests, one process each (small first)"
mapfile -t listed < <("$gpu_tests" --gtest_list_tests 2>/dev/null | awk '
  /^[^ ]/ {suite = $1; next} {print suite $1}' | grep -v "^Diagnostics\.")
# Small and structural tests first, the big per-configuration sweeps last.
ordered=()
for t in "${listed[@]}"; do
  case $t in *EveryConfiguration* | *RandomProblems* | *ManyMoreCtas*) ;; *) ordered+=("$t") ;; esac
done
for t in "${listed[@]}"; do
  case $t in *EveryConfiguration* | *RandomProblems* | *ManyMoreCtas*) ordered+=("$t") ;; esac
done
for t in "${ordered[@]}"; do
  case $t in *EveryConfiguration* | *RandomProblems*) box=90 ;; *) box=45 ;; esac
  run_test "$gpu_tests" "$t" "$box"
done
run_test "$host_tests" "*" 60
passed=$(grep -c "^PASSED" "$out/tests.txt")
failed=$(grep -cE "^(FAILED|TIMEOUT)" "$out/tests.txt")
skipped=$(grep -c "^SKIPPED" "$out/tests.txt")
configs_failed=$(grep -c "\[config\].*FAIL" "$out/tests.txt")
note "tests: $passed passed, $failed failed, $skipped skipped; $configs_failed configurations failed (tests.txt)"
grep -E "^(FAILED|TIMEOUT)|\[config\].*FAIL" "$out/tests.txt" | head -20 | tee -a "$log"

# The installed package: `cmake --install` of this build, tests/install_consumer built against it
# (find_package(leanattn) with the carried Highway) and run: the CPU engine, then "cpu" and "cuda"
# through the executor seam, "cuda" on this GPU.
say "install consumer (cmake --install; make_executor(\"cuda\") from the installed package)"
hwy_arg=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)  # as the build's own configure above
for a in "${carry_args[@]}"; do
  case $a in -DHWY_DIR=*) hwy_arg+=("$a") ;; esac
done
if run_logged "$(budget 120)" scripts/install-consumer-check.sh "$build" "${hwy_arg[@]}"; then
  note "install consumer: ok ($(grep '^make_executor("cuda")' "$log" | tail -1))"
  # With a GPU here the installed CUDA executor must have run, not skipped.
  if [ "$no_gpu" = 0 ] && grep -q 'no CUDA device here' "$log"; then
    fail "install consumer: make_executor(\"cuda\") skipped its runs on a GPU machine"
  fi
else
  fail "install consumer (device-check.log)"
  note "install consumer: FAILED ($(grep -E '^FAIL' "$log" | tail -1))"
fi

# --- 6b. the Python package with CUDA arrays -----------------------------------------------------
# The module is built in $build (the libraries it links are already there; only python/src and
# nanobind compile), copied next to python/leanattn in build/device-python, and imported from
# there. A configure that fails (no Python headers or nanobind in the image) is noted, not failed.
python_bin=$(command -v python3 || true)
pkg=$root/build/device-python
if [ "$no_gpu" = 1 ]; then
  note "python: skipped (no GPU)"
elif [ -z "$python_bin" ] || [ "$(left)" -lt 150 ]; then
  note "python: skipped (${python_bin:+time budget}${python_bin:-no python3})"
elif say "python module (LEANATTN_BUILD_PYTHON=ON, $python_bin)" &&
     ! run_logged "$(budget 60)" cmake -S "$root" -B "$build" -DLEANATTN_BUILD_PYTHON=ON \
       -DPython_EXECUTABLE="$python_bin"; then
  note "python: skipped (configure with LEANATTN_BUILD_PYTHON=ON failed; device-check.log)"
elif ! run_logged "$(budget 120)" cmake --build "$build" -j "$jobs" --target _leanattn; then
  fail "python module build (see device-check.log)"
  note "python: module build FAILED"
else
  rm -rf "$pkg" && mkdir -p "$pkg" && cp -r python/leanattn "$pkg/" &&
    cp "$build"/python/_leanattn*.so "$pkg/leanattn/"
  limit=$(budget 90)
  say "pytest on the CUDA tensor tests ($limit s box)"
  PYTHONPATH=$pkg LEANATTN_REQUIRE_TORCH=1 timeout --signal=TERM --kill-after=5 "$limit" \
    "$python_bin" -m pytest -q -p no:cacheprovider -rs tests/python/torch/test_torch_device_arrays.py \
    tests/python/torch/test_torch_tensors.py tests/python/torch/test_torch_quantized.py \
    tests/python/torch/test_torch_value_widths.py::test_cuda_refuses_v_of_another_width \
    tests/python/torch/test_torch_value_widths.py::test_cuda_reads_v_from_ks_rows_at_ks_width \
    tests/python/torch/test_torch_value_widths.py::test_cuda_runs_deepseeks_widths \
    tests/python/torch/test_torch_value_widths.py::test_cuda_refuses_a_v_cache_of_its_own_at_mla_widths \
    tests/python/torch/test_transformers.py::test_bf16_generation_llama_and_gemma2 \
    tests/python/torch/test_torch_step.py::test_cuda_graph_of_the_op_replays_new_lengths \
    tests/python/torch/test_torch_step.py::test_cuda_graph_of_a_host_planned_step \
    tests/python/torch/test_torch_step.py::test_cuda_device_step_reports_a_length_out_of_bounds \
    >"$out/python.log" 2>&1
  rc=$?
  cat "$out/python.log" >>"$log"
  line=$(grep -E "^=*.*(passed|failed|error)" "$out/python.log" | tail -1 | tr -d '=')
  note "python: pytest exit $rc:${line:- see python.log}"
  [ $rc -eq 0 ] || fail "python tests with CUDA arrays (python.log)"
  # On the GPU nothing of the device-array tests may skip (a skip there would hide the check).
  if grep -q -E "^SKIPPED.*(test_torch_device_arrays|test_transformers|test_torch_step)" \
    "$out/python.log"; then
    fail "python: device-array tests skipped on the GPU (python.log)"
  fi
fi

# --- 7. benchmark sweep -------------------------------------------------------------------------
say "benchmark sweep (bf16, KV up to $max_kv_gib GiB per case, small first)"
# label batch q_heads kv_heads head_dim context page_size (0: contiguous) [variant options of
# `leanattn bench`]. Small contexts first, then the larger ones; d256, paged caches and the
# variants after the contiguous d64/d128 cases.
sweep=()
for ctx in 4096 32768 131072; do
  for batch in 1 16; do
    sweep+=("gqa8-b$batch-$ctx $batch 32 8 128 $ctx 0" "mqa16-b$batch-$ctx $batch 16 1 64 $ctx 0"
            "mha32-b$batch-$ctx $batch 32 32 128 $ctx 0")
  done
done
# DeepSeek: absorbed MLA (K 576 / V 512 from one latent cache, 128 query heads, or 16 as on
# one of 8 tensor-parallel GPUs) and the model's own K 192 / V 128 (128 heads, MHA).
sweep+=("mla128-b1-32768 1 128 1 576 32768 0 --mla" "mla16-b64-4096 64 16 1 576 4096 0 --mla"
        "mla128-b16-4096 16 128 1 576 4096 0 --mla" "mla128-b1-131072 1 128 1 576 131072 0 --mla"
        "ds192-mha128-b1-8192 1 128 128 192 8192 0 --head-dim-v 128")
sweep+=("d256-gqa8-b1-32768 1 32 8 256 32768 0" "d256-gqa8-b16-4096 16 32 8 256 4096 0"
        "paged16-gqa8-b16-4096 16 32 8 128 4096 16" "paged256-gqa8-b1-32768 1 32 8 128 32768 256"
        "paged16-mqa16-b1-131072 1 16 1 64 131072 16"
        "q4-gqa8-b1-32768 1 32 8 128 32768 0 --q-len 4"
        "win4096-gqa8-b1-131072 1 32 8 128 131072 0 --window 4096"
        "gptoss-win128-sinks-b16-4096 16 64 8 64 4096 0 --window 128 --sinks"
        "fp8e4m3-gqa8-b1-131072 1 32 8 128 131072 0 --kv-dtype fp8_e4m3"
        "int8-gqa8-b1-131072 1 32 8 128 131072 0 --kv-dtype int8")
tmp=$(mktemp -d)
cases=0
bench_failed=0
for entry in "${sweep[@]}"; do
  [ "$no_gpu" = 1 ] && { say "no usable CUDA device: no sweep"; break; }
  read -r label batch q kv d ctx page extra <<<"$entry"
  read -ra variant_args <<<"$extra"
  element_bytes=2
  [[ "$extra" == *--kv-dtype* ]] && element_bytes=1  # an 8-bit cache (bf16 Q)
  kv_bytes=$((batch * ctx * kv * d * element_bytes * 2))
  if [ "$kv_bytes" -gt $((max_kv_gib << 30)) ]; then
    say "skip $label ($((kv_bytes >> 20)) MiB of KV)"
    continue
  fi
  if [ "$(left)" -lt 60 ]; then
    say "skip $label (time budget)"
    continue
  fi
  cases=$((cases + 1))
  say "bench $label ($((kv_bytes >> 20)) MiB of KV)"
  run_logged "$(budget 45)" "$build/apps/leanattn/leanattn" bench --backend cuda --batch "$batch" \
    --q-heads "$q" --kv-heads "$kv" --head-dim "$d" --seq-len "$ctx" --dtype bf16 \
    --page-size "$page" --repeat "$repeat" --csv "$tmp/$cases.csv" --json "$tmp/$cases.json" \
    "${variant_args[@]}" || {
    fail "bench $label"
    bench_failed=$((bench_failed + 1))
  }
  # Name the case (the CLI calls a single problem "custom").
  [ -f "$tmp/$cases.csv" ] && sed -i "s/,custom,/,$label,/" "$tmp/$cases.csv"
  [ -f "$tmp/$cases.json" ] && sed -i "s/\"case\": \"custom\"/\"case\": \"$label\"/" "$tmp/$cases.json"
done
note "bench: $cases cases run, $bench_failed failed (bench.csv)"
first=$(ls "$tmp"/*.csv 2>/dev/null | head -1)
if [ -n "$first" ]; then
  head -1 "$first" >"$out/bench.csv"
  for f in $(ls "$tmp"/*.csv | sort -V); do tail -n +2 "$f" >>"$out/bench.csv"; done
fi
python3 - "$tmp" "$out/bench.json" <<'EOF' || echo "[]" >"$out/bench.json"
import json, pathlib, sys
runs = [json.loads(p.read_text()) for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json"),
                                                   key=lambda p: int(p.stem))]
json.dump(runs, open(sys.argv[2], "w"), indent=1)
EOF
rm -rf "$tmp"

# --- 8. ncu on one case ---------------------------------------------------------------------------
ncu_bin=$(command -v ncu || ls "$(dirname "$nvcc_bin")"/ncu /usr/local/cuda/nsight-compute*/ncu 2>/dev/null | head -1 || true)
if [ -z "$ncu_bin" ]; then
  note "ncu: not found"
elif [ "$no_gpu" = 1 ] || [ "$(left)" -lt 50 ]; then
  note "ncu: skipped ($([ "$no_gpu" = 1 ] && echo "no GPU" || echo "time budget"))"
else
  say "ncu on gqa8-b16-4k lean (one launch)"
  timeout --signal=TERM --kill-after=5 "$(budget 45)" "$ncu_bin" --kernel-name regex:decode_kernel \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats "$build/apps/leanattn/leanattn" bench --backend cuda --batch 16 \
    --q-heads 32 --kv-heads 8 --head-dim 128 --seq-len 4096 --dtype bf16 --strategy lean \
    --repeat 3 >"$out/ncu.txt" 2>&1
  rc=$?
  note "ncu: exit $rc ($(grep -m1 -E "Memory Throughput" "$out/ncu.txt" | tr -s ' ' || echo "see ncu.txt"))"
fi

# --- 9. summary ---------------------------------------------------------------------------------
{
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  echo "device-check: ${gpu:-no GPU found}; $(grep "check-ptxas.sh:" "$out/ptxas.txt")"
  sed 's/^/  /' "$results"
  grep -E "^(FAILED|TIMEOUT)" "$out/tests.txt" | sed 's/^/  test /'
  grep -E "\[config\].*FAIL" "$out/tests.txt" | head -10 | sed 's/^ */  /'
  grep -E "\[trace\]" "$out/tests.txt" | sed 's/^ */  /'
  if [ -f "$out/bench.csv" ]; then
    python3 - "$out/bench.csv" <<'EOF' 2>/dev/null || cat "$out/bench.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if rows:
    print(f"  probe {float(rows[0]['probe_gbps']):.0f} GB/s read; {rows[0]['simd']}")
print(f"  {'case':<20} {'strategy':<15} {'workers':>7} {'median_us':>10} {'GB/s':>8} "
      f"{'of_probe':>8} {'vs_split':>8} {'vs_head':>8}  check")
for r in rows:
    print(f"  {r['case']:<20} {r['strategy']:<15} {r['workers']:>7} {float(r['median_us']):>10.1f} "
          f"{float(r['gbps']):>8.0f} {float(r['probe_fraction']):>8.2f} "
          f"{float(r['speedup_vs_split']):>8.2f} {float(r['speedup_vs_head']):>8.2f}  "
          f"{'ok' if r['ok'] == '1' else 'FAIL'}")
EOF
  fi
  echo "device-check: $([ $status -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
} >"$out/summary.txt"
cat "$out/summary.txt" >>"$log"
cat "$out/summary.txt"
exit $status
