#!/usr/bin/env bash
# Decode speed of a real GGUF model in stock llama.cpp with and without leanattn's backend, in one
# llama.cpp binary (scripts/llama-cpp.sh): llama-bench -p 0 -n N -d DEPTH -t THREADS, three
# configurations alternated run by run at every depth:
#   stock-fa-on   -fa 1, LEANATTN_GGML=0 (the library is not loaded)
#   leanattn      -fa 1 with GGML_BACKEND_PATH=libggml-leanattn.so
#   stock-fa-off  -fa 0, LEANATTN_GGML=0 (matrix products and a softmax)
# and, with --configs naming it, leanattn-4k-pages: the backend with LEANATTN_GGML_HUGE_PAGES=0
# (the KV cache left on the pages ggml gave it; integrations/llama.cpp/kv_cache_pages.hpp).
# Each run prefills its depth (not timed) then decodes N tokens; the backend's own time per node
# and the KV cache it moved to huge pages come from LEANATTN_GGML_STATS. Prints the medians and
# writes
# bench/results/llama-cpp-decode-<model>-<cpu>-<cores>c-<date>.{csv,txt}.
# --prompt N measures prompt processing at each depth instead (llama-bench -p N -n 0: the
# backend declines batches of more than 8 rows, so this checks that having it loaded costs
# nothing there); the files are then llama-cpp-prompt<N>-<model>-....
#   bench/llama_cpp_decode.sh [--model smollm2] [--depths "0 4096 16384 32768"] [--runs 3]
#                             [--tokens 32] [--threads 2] [--cache-type f16] [--tag NAME]
#                             [--configs "stock-fa-on leanattn stock-fa-off"] [--prompt N]
# --tag adds "-NAME" to the file names (a second run on the same day keeps the first).
# --cache-type q8_0 (or q4_0, ...) runs llama-bench with -ctk and -ctv of that type; llama.cpp
# quantizes a V cache only with flash attention, so stock-fa-off runs only with f16.
set -euo pipefail
cd "$(dirname "$0")/.."
model=smollm2 depths="0 4096 16384 32768" runs=3 tokens=32 threads=2 tag= cache_type=f16
configs="stock-fa-on leanattn stock-fa-off" prompt=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --tag) tag=-$2; shift 2 ;;
    --cache-type) cache_type=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    *) echo "llama_cpp_decode.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$prompt" in
  '' | *[!0-9]*) echo "llama_cpp_decode.sh: --prompt must be a token count (got '$prompt')" >&2
    exit 2 ;;
esac
for c in $configs; do
  case "$c" in
    stock-fa-on | leanattn | leanattn-4k-pages | stock-fa-off) ;;
    *) echo "llama_cpp_decode.sh: unknown configuration '$c'" >&2; exit 2 ;;
  esac
done
llama=$(scripts/llama-cpp.sh)
gguf=$(scripts/gguf-model.sh "$model")
cmake -S . -B build/llama -G Ninja -DCMAKE_BUILD_TYPE=Release -DLEANATTN_CUDA=OFF \
  -DLEANATTN_BUILD_CLI=OFF -DLEANATTN_LLAMA_CPP="$llama" >/dev/null
cmake --build build/llama --target ggml-leanattn >/dev/null
backend=$PWD/build/llama/integrations/llama.cpp/libggml-leanattn.so
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/(R)//g; s/ Processor//; s/ /-/g' |
  tr 'A-Z' 'a-z')
ct=$([ "$cache_type" = f16 ] || echo "-$cache_type")
what=decode counts=(-p 0 -n "$tokens")
if [ "$prompt" -gt 0 ]; then what=prompt$prompt counts=(-p "$prompt" -n 0); fi
stem="bench/results/llama-cpp-$what-$model$ct-$cpu-$(nproc)c-$(date +%Y-%m-%d)$tag"
csv="$stem.csv"
echo "config,depth,run,tokens_per_s,leanattn_nodes,leanattn_ms,huge_page_mib" >"$csv"

one() {  # config depth run
  local fa=1 envs=(LEANATTN_GGML=0)
  [ "$1" = stock-fa-off ] && fa=0
  [ "$1" = leanattn ] && envs=(LEANATTN_GGML=1 LEANATTN_GGML_STATS=1)
  [ "$1" = leanattn-4k-pages ] && envs=(LEANATTN_GGML=1 LEANATTN_GGML_STATS=1 LEANATTN_GGML_HUGE_PAGES=0)
  local out
  out=$(env "${envs[@]}" GGML_BACKEND_PATH="$backend" "$llama/build/bin/llama-bench" -m "$gguf" \
    -fa "$fa" -ctk "$cache_type" -ctv "$cache_type" "${counts[@]}" -d "$2" -r 1 \
    -t "$threads" -o csv 2>&1)
  local ts
  ts=$(echo "$out" | grep '^"' | tail -1 | awk -F'","' '{ print $(NF - 1) }')
  local stats='^leanattn: computed \([0-9]*\) FLASH_ATTN_EXT nodes in \([0-9.]*\) ms; \([0-9]*\) MiB.*'
  local nodes ms mib  # the last stats line (one per backend freed; llama-bench frees one)
  nodes=$(echo "$out" | sed -n "s/$stats/\1/p" | tail -1)
  ms=$(echo "$out" | sed -n "s/$stats/\2/p" | tail -1)
  mib=$(echo "$out" | sed -n "s/$stats/\3/p" | tail -1)
  echo "$1,$2,$3,$ts,${nodes:-0},${ms:-0},${mib:-0}" | tee -a "$csv"
}

for depth in $depths; do
  for run in $(seq 1 "$runs"); do
    for config in $configs; do
      [ "$config" = stock-fa-off ] && [ "$cache_type" != f16 ] && continue
      one "$config" "$depth" "$run"
    done
  done
done

{
  echo "llama.cpp $what, $model, llama-bench ${counts[*]} -t $threads -ctk/-ctv $cache_type," \
    "$runs alternated runs"
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), llama.cpp: $llama"
  python3 - "$csv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = lambda c, d, k: statistics.median(float(r[k]) for r in rows if r["config"] == c and r["depth"] == d)
small = any(r["config"] == "leanattn-4k-pages" for r in rows)
print(f"{'depth':>6} {'fa-on':>8} {'leanattn':>9} {'fa-off':>8} {'x fa-on':>8} {'x best':>7} {'ms/node':>8}"
      + (f" {'4k-pages':>9} {'x 4k':>6}" if small else ""))
for d in dict.fromkeys(r["depth"] for r in rows):
    has = lambda c: any(r["config"] == c and r["depth"] == d for r in rows)
    on, lean, off = (med(c, d, "tokens_per_s") if has(c) else 0.0
                     for c in ("stock-fa-on", "leanattn", "stock-fa-off"))
    nodes = [float(r["leanattn_nodes"]) for r in rows if r["config"] == "leanattn" and r["depth"] == d]
    ms = [float(r["leanattn_ms"]) for r in rows if r["config"] == "leanattn" and r["depth"] == d]
    per = statistics.median(m / n for m, n in zip(ms, nodes) if n > 0) if any(nodes) else 0.0
    line = (f"{d:>6} {on:8.2f} {lean:9.2f} {off:8.2f} {lean / max(on, 1e-9):8.2f}"
            f" {lean / max(on, off, 1e-9):7.2f} {per:8.3f}")
    if small:
        four = med("leanattn-4k-pages", d, "tokens_per_s") if has("leanattn-4k-pages") else 0.0
        line += f" {four:9.2f} {lean / max(four, 1e-9):6.2f}"
    print(line)
EOF
} | tee "$stem.txt"
