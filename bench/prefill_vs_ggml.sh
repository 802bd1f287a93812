#!/usr/bin/env bash
# prefill_vs_ggml.sh: a prompt micro-batch (--q-len rows, causal, at depth) through leanattn's CPU
# engine (`leanattn bench --q-len`, the many-rows path), ggml's own flash attention
# (bench/peers/ggml_prefill.cpp: its tiled kernel for f16, its per-row kernel for q8_0) and torch
# SDPA (bench/peers/torch_prefill.py: f32 and bf16, an explicit bottom-right causal mask), on the
# same shapes and thread count, in alternated rounds; every run checked against fp64. Prints one
# line per run and a table of medians.
#
#   bench/prefill_vs_ggml.sh [--rounds N] [--repeat N] [--threads N] [--depths LIST]
#
# Needs: the release build's CLI (built if missing), ggml's sources as scripts/llama-cpp.sh
# unpacks them (~/.cache/leanattn/llama.cpp-<version>-*/src/ggml; the llama stage makes them),
# and the torch venv of scripts/torch-venv.sh. Runs under `chrt -f 10` when allowed (the VMs are
# shared and noisy). Shapes: SmolLM2-135M's attention (9/3 heads, d 64) and Llama-3-8B's (32/8,
# d 128), a 512-row micro-batch, K/V f16 and q8_0.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2 repeat=3 threads=$(nproc) depths=4096,16384
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    *) echo "prefill_vs_ggml.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
ggml_src=$(ls -d "$cache"/llama.cpp-*/src/ggml 2>/dev/null | head -1)
[ -n "$ggml_src" ] || { echo "prefill_vs_ggml.sh: no ggml sources in $cache (run scripts/test.sh llama once)" >&2; exit 1; }
py=$(scripts/torch-venv.sh)/bin/python
cli=build/release/apps/leanattn/leanattn
[ -x "$cli" ] || { cmake --preset release >/dev/null && cmake --build --preset release -j2 --target leanattn_cli >/dev/null; }
harness=build/peers/prefill
mkdir -p build/peers
cmake -S bench/peers -B "$harness" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_SOURCE_DIR="$ggml_src" >"$harness.configure.log" 2>&1
cmake --build "$harness" -j2 --target ggml_prefill >"$harness.build.log" 2>&1
rt=(); chrt -f 10 true 2>/dev/null && rt=(chrt -f 10)

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%F); $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty)"
results=$(mktemp)
run() {  # label, command...
  local label=$1; shift
  local line
  line=$("${rt[@]}" "$@" 2>&1 | tail -1)
  echo "$label $line" | tee -a "$results"
}
for shape in "9 3 64" "32 8 128"; do
  read -r hq hkv d <<<"$shape"
  for depth in ${depths//,/ }; do
    for round in $(seq "$rounds"); do
      for type in f16 q8_0; do
        line=$("${rt[@]}" "$cli" bench --q-heads "$hq" --kv-heads "$hkv" --head-dim "$d" --q-len 512 \
          --seq-len $((depth + 512)) --dtype "$type" --strategy lean --workers "$threads" --repeat "$repeat" | grep '^  lean')
        read -r _ _ _ us _ _ _ _ _ err check <<<"$line"
        echo "leanattn-$type $hq/$hkv d$d depth=$depth median_us=$us max_err=$err check=$check" | tee -a "$results"
        run "ggml-$type $hq/$hkv d$d depth=$depth" "$harness/ggml_prefill" --q-heads "$hq" --kv-heads "$hkv" \
          --head-dim "$d" --depth "$depth" --q-len 512 --type "$type" --threads "$threads" --repeat "$repeat"
      done
      for type in f32 bf16; do
        run "torch-$type $hq/$hkv d$d depth=$depth" "$py" bench/peers/torch_prefill.py --q-heads "$hq" \
          --kv-heads "$hkv" --head-dim "$d" --depth "$depth" --q-len 512 --dtype "$type" --threads "$threads" --repeat "$repeat"
      done
    done
  done
done
echo "# medians of the rounds' medians (ms)"
python3 - "$results" <<'SUMMARY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    fields = dict(x.split("=", 1) for x in f[4:] if "=" in x)
    if "median_us" in fields:
        runs[" ".join(f[:4])].append(float(fields["median_us"]))
for key in sorted(runs):
    print(f"{key:<40} {statistics.median(runs[key]) / 1000:8.1f}  ({len(runs[key])} rounds)")
SUMMARY
rm -f "$results"
