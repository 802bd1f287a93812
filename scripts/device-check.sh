#!/usr/bin/env bash
# The CUDA engine's check on a machine with a GPU (the project's H200 device machine, which has
# nvcc, CMake, ninja and Python but no Debian dev packages and no network): configures for sm_90
# (-DCMAKE_CUDA_ARCHITECTURES=90, i.e. -gencode arch=compute_90,code=sm_90) against the carried
# dependencies in .carry/ (scripts/prepare-device-carry.sh; not needed where the packages are
# installed), builds with ninja, checks the ptxas report for spills, runs the GPU and GPU-free CUDA
# tests, then `leanattn bench --backend cuda` over a fixed sweep (batch 1 and 16; heads 32/8 d128,
# 16/1 d64, 32/32 d128; contexts 4k, 32k, 128k; bf16; cases above 4 GiB of KV skipped) with the
# device read-bandwidth probe. Writes into $OUT (else build/device-check-out), at most 8 files:
#   device-check.log  everything below      ptxas.txt   registers and spills per kernel
#   gpu-tests.log     the GPU test output   bench.csv, bench.json   the sweep, one row per plan
#   summary.txt       the closing table (also printed last)
# Finishes in under 8 minutes on the H200 machine (each phase has a time limit). Exit status:
# 0 when everything passed, 1 otherwise (the later phases still run).
#   scripts/device-check.sh            (on the device: run(command="scripts/device-check.sh",
#                                       carry=[".carry"]))
# Environment: OUT, LEANATTN_CARRY (default .carry), JOBS, LEANATTN_MAX_KV_GIB (default 4),
# LEANATTN_BENCH_REPEAT (default 20), LEANATTN_BUILD_GTEST=1 (rebuild GoogleTest from the carried
# sources instead of using the carried archives), LEANATTN_BUILD_TIMEOUT (seconds, default 360;
# raise it for a dry run on a small machine).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/build/device-check-out}
carry=${LEANATTN_CARRY:-$root/.carry}
build=$root/build/device
jobs=${JOBS:-$(nproc)}
max_kv_gib=${LEANATTN_MAX_KV_GIB:-4}
repeat=${LEANATTN_BENCH_REPEAT:-20}
mkdir -p "$out"
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
say "configure (sm_90)"
if ! configure; then
  fail "configure (see device-check.log)"
  tail -40 "$log"
  exit 1
fi
say "build with $jobs jobs"
targets=(leanattn_cuda cuda_gpu_tests cuda_host_tests leanattn_cli)
if ! run_logged "${LEANATTN_BUILD_TIMEOUT:-360}" cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  if [ -d "$carry/usr/src/googletest" ] && [ "${LEANATTN_BUILD_GTEST:-0}" != 1 ] &&
     grep -q "undefined reference to .*testing::" "$log"; then
    say "the carried GoogleTest archives do not link here: rebuilding from source"
    LEANATTN_BUILD_GTEST=1 exec "$0" "$@"
  fi
  fail "build (see device-check.log)"
  grep -E "error|FAILED" "$log" | head -20
  exit 1
fi

# --- 3. ptxas report ----------------------------------------------------------------------------
say "ptxas report"
scripts/check-ptxas.sh "$build" >"$out/ptxas.txt" 2>&1 || fail "ptxas: spills (ptxas.txt)"
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

# --- 4. tests -----------------------------------------------------------------------------------
say "GPU tests"
{
  timeout 240 "$build/tests/cuda/cuda_gpu_tests" --gtest_brief=1 2>&1
  echo "cuda_gpu_tests exit status $?"
  timeout 60 "$build/tests/cuda/cuda_host_tests" --gtest_brief=1 2>&1
  echo "cuda_host_tests exit status $?"
} >"$out/gpu-tests.log"
cat "$out/gpu-tests.log" >>"$log"
grep -q "cuda_gpu_tests exit status 0" "$out/gpu-tests.log" || fail "GPU tests (gpu-tests.log)"
grep -q "cuda_host_tests exit status 0" "$out/gpu-tests.log" || fail "host tests (gpu-tests.log)"
grep -E "PASSED|FAILED|SKIPPED" "$out/gpu-tests.log" | tee -a "$log"

# --- 5. benchmark sweep -------------------------------------------------------------------------
say "benchmark sweep (bf16, KV up to $max_kv_gib GiB per case)"
# label batch q_heads kv_heads head_dim
shapes=("gqa8 32 8 128" "mqa16 16 1 64" "mha32 32 32 128")
tmp=$(mktemp -d)
cases=0
for batch in 1 16; do
  for shape in "${shapes[@]}"; do
    read -r name q kv d <<<"$shape"
    for ctx in 4096 32768 131072; do
      kv_bytes=$((batch * ctx * kv * d * 2 * 2))
      label="$name-b$batch-${ctx}"
      if [ "$kv_bytes" -gt $((max_kv_gib << 30)) ]; then
        say "skip $label ($((kv_bytes >> 20)) MiB of KV)"
        continue
      fi
      if [ $((SECONDS - start)) -gt 380 ]; then
        say "skip $label (time budget)"
        continue
      fi
      cases=$((cases + 1))
      say "bench $label ($((kv_bytes >> 20)) MiB of KV)"
      run_logged 60 "$build/apps/leanattn/leanattn" bench --backend cuda --batch "$batch" \
        --q-heads "$q" --kv-heads "$kv" --head-dim "$d" --seq-len "$ctx" --dtype bf16 \
        --repeat "$repeat" --csv "$tmp/$cases.csv" --json "$tmp/$cases.json" ||
        fail "bench $label"
      if grep -q "no CUDA device" "$log"; then
        say "no usable CUDA device: the sweep stops"
        break 3
      fi
      # Name the case (the CLI calls a single problem "custom").
      [ -f "$tmp/$cases.csv" ] && sed -i "s/,custom,/,$label,/" "$tmp/$cases.csv"
      [ -f "$tmp/$cases.json" ] && sed -i "s/\"case\": \"custom\"/\"case\": \"$label\"/" "$tmp/$cases.json"
    done
  done
done
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

# --- 6. summary ---------------------------------------------------------------------------------
{
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  echo "device-check: ${gpu:-no GPU found}; $(grep "check-ptxas.sh:" "$out/ptxas.txt")"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/gpu-tests.log" | sed 's/^/  tests: /'
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
