#!/usr/bin/env bash
# The CPU-kernel issue's measurements in one run: (1) from the CPU caches, one worker, every SIMD
# target given, the issue's shapes in f16 and bf16: TSC ticks per token x KV head, the compute
# ceiling at the instruction costs measured at the start of each run (vector_costs.hpp) and
# of_roof; (2) from DRAM, 2 workers, lean, f16 and bf16: GB/s, the fraction of the probe
# measured in the same run, and of_roof (GB/s over min(probe, compute ceiling)). Shapes and
# targets alternate within each round; medians over the rounds. Writes every run's CSV and a
# summary to bench/results/cpu-memory-limit-<cpu>-<cores>c-<date>{.txt,-cache.csv,-dram.csv}.
#   bench/cpu_memory_limit.sh [--rounds 3] [--simd AVX3_BF16,AVX3,AVX2,SSE4] [--leanattn BIN]
#                             [--dram-only | --cache-only] [--tag NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 simds="AVX3_BF16,AVX3,AVX2,SSE4" bin=build/release/apps/leanattn/leanattn tag= parts="cache dram"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --simd) simds=$2; shift 2 ;;
    --leanattn) bin=$2; shift 2 ;;
    --dram-only) parts=dram; shift ;;
    --cache-only) parts=cache; shift ;;
    --tag) tag=-$2; shift 2 ;;
    *) echo "cpu_memory_limit.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "cpu_memory_limit.sh: no leanattn at $bin" >&2; exit 2; }
model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || uname -m)
cpu=$(echo "$model" | sed 's/(R)//g; s/ Processor//; s/ /-/g' | tr 'A-Z' 'a-z')
stem=bench/results/cpu-memory-limit-$cpu-$(nproc)c-$(date -u +%F)$tag
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name q_heads kv_heads head_dim; from cache one request of 2048 tokens, from DRAM the lengths.
shapes=("gqa 32 8 128" "mha 32 32 128" "mqa 8 1 128" "smollm2 9 3 64" "gqa_d64 32 8 64"
  "qwen_14x2 14 2 64" "gemma_4x1 4 1 256")
declare -A dram=([gqa]=131072 [mha]=65536 [mqa]=131072 [smollm2]=16384,16384,16384,16384
  [gqa_d64]=32768,32768 [qwen_14x2]=16384,16384,16384,16384 [gemma_4x1]=32768,32768)
for r in $(seq "$rounds"); do
  for s in "${shapes[@]}"; do
    read -r name hq hkv d <<<"$s"
    for dt in f16 bf16; do
      if [[ $parts == *cache* ]]; then
        for simd in ${simds//,/ }; do
          [[ $simd == AVX3_BF16 && $dt == f16 ]] && continue  # the same code as AVX3 for f16
          echo "round $r/$rounds cache $name $dt $simd" >&2
          "$bin" bench --from-cache --simd "$simd" --q-heads "$hq" --kv-heads "$hkv" \
            --head-dim "$d" --seq-len 2048 --dtype "$dt" --repeat 400 \
            --csv "$tmp/cache-$r-$name-$dt-$simd.csv" >/dev/null 2>&1
        done
      fi
      if [[ $parts == *dram* ]]; then
        echo "round $r/$rounds dram $name $dt" >&2
        "$bin" bench --q-heads "$hq" --kv-heads "$hkv" --head-dim "$d" --seq-lens "${dram[$name]}" \
          --dtype "$dt" --workers 2 --strategy lean --repeat 10 \
          --csv "$tmp/dram-$r-$name-$dt.csv" >"$tmp/dram-$r-$name-$dt.txt" 2>/dev/null
      fi
    done
  done
done
{
  echo "bench/cpu_memory_limit.sh --rounds $rounds --simd $simds ($parts)"
  echo "machine: $model, $(nproc) cores"
  echo "vector flags: $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | tr ' ' '\n' |
    grep -E '^(avx2|fma|f16c|avx512f|avx512_bf16|avx512_fp16|avx512_vnni|amx_tile|amx_bf16|asimd|sve|sve2|bf16)$' | tr '\n' ' ')"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
  grep -h "compute ceiling:" "$tmp"/dram-*.txt 2>/dev/null | sort | uniq -c | sort -rn | head -3 ||
    true
  python3 - "$tmp" "$stem" <<'PY'
import csv, glob, os, statistics, sys
tmp, stem = sys.argv[1], sys.argv[2]
def load(kind):  # every run's rows, with the run's round, shape, dtype and target in front
    rows = []
    for f in sorted(glob.glob(f"{tmp}/{kind}-*.csv")):
        _, r, name, dt, *simd = os.path.basename(f)[:-4].split("-")
        for row in csv.DictReader(open(f)):
            rows.append({"round": r, "shape": name, "dtype_": dt,
                         "simd_": simd[0] if simd else row.get("simd", ""), **row})
    return rows
def write(path, rows):
    with open(path, "w") as out:
        w = csv.DictWriter(out, list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
med = lambda xs: statistics.median(float(x) for x in xs)
cache = load("cache")
if cache:
    write(f"{stem}-cache.csv", cache)
    print("\nfrom cache, 1 worker, 2048 tokens: median TSC ticks per token x KV head [min of the"
          " rounds' minima], roof (measured costs) and of_roof")
    print(f"{'shape':<10} {'dtype':<5} {'simd':<10} {'ticks':>7} {'min':>7} {'roof':>6}"
          f" {'of_roof':>7}")
    for key in dict.fromkeys((r["shape"], r["dtype_"], r["simd_"]) for r in cache):
        rs = [r for r in cache if (r["shape"], r["dtype_"], r["simd_"]) == key]
        ticks = med(r["cycles_per_token_head"] for r in rs)
        least = min(float(r["min_cycles"]) for r in rs)
        print(f"{key[0]:<10} {key[1]:<5} {key[2]:<10} {ticks:7.1f}"
              f" {least:7.1f} {med(r['roof_cycles'] for r in rs):6.1f}"
              f" {med(r['roof_fraction'] for r in rs):7.2f}")
dram = [r for r in load("dram") if r["strategy"] == "lean"]
if dram:
    write(f"{stem}-dram.csv", dram)
    print("\nfrom DRAM, 2 workers, lean: medians over the rounds [each round's of_probe]")
    print(f"{'shape':<10} {'dtype':<5} {'seq_lens':<24} {'GB/s':>6} {'probe':>6} {'of_probe':>8}"
          f" {'ceiling':>7} {'of_roof':>7}  rounds")
    for key in dict.fromkeys((r["shape"], r["dtype_"]) for r in dram):
        rs = [r for r in dram if (r["shape"], r["dtype_"]) == key]
        print(f"{key[0]:<10} {key[1]:<5} {rs[0]['seq_lens']:<24} {med(r['gbps'] for r in rs):6.2f}"
              f" {med(r['probe_gbps'] for r in rs):6.1f}"
              f" {med(r['probe_fraction'] for r in rs):8.2f}"
              f" {med(r['ceiling_gbps'] for r in rs):7.1f}"
              f" {med(r['roof_fraction'] for r in rs):7.2f}"
              f"  {' '.join('%.2f' % float(r['probe_fraction']) for r in rs)}")
PY
} | tee "$stem.txt"
