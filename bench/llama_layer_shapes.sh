#!/usr/bin/env bash
# Decode on the attention shapes people run, in stock llama.cpp with and without leanattn's
# backend (issue 54, item 4). Random-weight GGUF models of a few layers
# (bench/llama_layer_shapes.py: transformers' LlamaForCausalLM converted by llama.cpp's own
# convert_hf_to_gguf.py, q8_0 weights, SmolLM2's tokenizer), cached as
# ${LEANATTN_CACHE:-~/.cache/leanattn}/models/llama-shape-<shape>-<layers>l-q8_0.gguf:
#   8b   Llama-3-8B's attention (32 query heads, 8 KV heads, head size 128, hidden 4096)
#   1b   Llama-3.2-1B's (32 / 8 heads, head size 64, hidden 2048)
# then llama-bench -p 0 -n TOKENS -d DEPTH -t THREADS -r RUNS, one llama-bench per (shape, depth,
# cache type, configuration), each under `flock /tmp/leanattn-bench.lock chrt -f 10` (benchmarks
# on the shared VM take turns, at real-time priority):
#   stock-fa-on   -fa 1, LEANATTN_GGML=0
#   stock-fa-off  -fa 0, LEANATTN_GGML=0 (f16 cache only: llama.cpp quantizes V only with -fa)
#   leanattn      -fa 1, GGML_BACKEND_PATH=libggml-leanattn.so (as scripts/test-llama-cpp.sh
#                 loads it), LEANATTN_GGML_STATS=1 (the nodes it computed and their time)
# with f16 and q8_0 caches (-ctk -ctv), and once per shape at depth 0 (stock-fa-on, f16: the
# step without attention's cost, from which the per-layer attention time is taken).
# Appends one line per run to the CSV (shape, layers, depth, cache, config, tokens/s, its
# standard deviation, the backend's nodes and ms) and prints it.
#   bench/llama_layer_shapes.sh [--shapes "8b 1b"] [--layers 2] [--depths "4096 16384"]
#       [--caches "f16 q8_0"] [--configs "stock-fa-on stock-fa-off leanattn"] [--runs 2]
#       [--tokens 32] [--threads 2] [--backend libggml-leanattn.so] [--csv FILE] [--no-depth0]
# --backend: an already built backend (default: built in build/llama, as bench/llama_cpp_decode.sh
# builds it). The torch venv (scripts/test-torch.sh) makes the models: TORCH_PYTHON names
# another python with transformers and torch.
set -euo pipefail
cd "$(dirname "$0")/.."
shapes="8b 1b" layers=2 depths="4096 16384" caches="f16 q8_0"
configs="stock-fa-on stock-fa-off leanattn" runs=2 tokens=32 threads=2 backend= csv= depth0=1
while [ $# -gt 0 ]; do
  case "$1" in
    --shapes) shapes=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --caches) caches=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --no-depth0) depth0=0; shift ;;
    *) echo "llama_layer_shapes.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
llama=$(scripts/llama-cpp.sh)
bin=$llama/build/bin
smollm2=$(scripts/gguf-model.sh smollm2)
if [ -z "$backend" ]; then
  cmake -S . -B build/llama -G Ninja -DCMAKE_BUILD_TYPE=Release -DLEANATTN_CUDA=OFF \
    -DLEANATTN_BUILD_CLI=OFF -DLEANATTN_LLAMA_CPP="$llama" >/dev/null
  cmake --build build/llama --target ggml-leanattn >/dev/null
  backend=$PWD/build/llama/integrations/llama.cpp/libggml-leanattn.so
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/(R)//g; s/ Processor//; s/ /-/g' |
  tr 'A-Z' 'a-z' | cut -d- -f1-2)
csv=${csv:-bench/results/llama-layer-shapes-$cpu-$(nproc)c-$(date -u +%F).csv}
[ -f "$csv" ] ||
  echo "shape,layers,depth,cache,config,tokens_per_s,stddev,leanattn_nodes,leanattn_ms,commit" >"$csv"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

model_of() {  # $1: shape; makes the model if missing, prints its path
  local file="$cache/models/llama-shape-$1-${layers}l-q8_0.gguf"
  if [ ! -f "$file" ]; then
    local python=${TORCH_PYTHON:-}
    if [ -z "$python" ]; then
      python=$(ls -d "$cache"/venv-torch-*/bin/python 2>/dev/null | head -1)
    fi
    [ -n "$python" ] || { echo "llama_layer_shapes.sh: no torch venv (scripts/test-torch.sh)" >&2; exit 1; }
    echo "== making $file" >&2
    "$python" bench/llama_layer_shapes.py --shape "$1" --layers "$layers" --src "$llama/src" \
      --tokenizer-gguf "$smollm2" --out "$file" >&2
  fi
  echo "$file"
}

one() {  # $1 shape, $2 model, $3 depth, $4 cache, $5 config
  local env=(LEANATTN_GGML=0) fa=1 ct=()
  [ "$4" = f16 ] || ct=(-ctk "$4" -ctv "$4")
  case "$5" in
    stock-fa-off) fa=0 ;;
    leanattn) env=(GGML_BACKEND_PATH="$backend" LEANATTN_GGML_STATS=1) ;;
  esac
  local out err
  out=$(mktemp) err=$(mktemp)
  env "${env[@]}" flock /tmp/leanattn-bench.lock chrt -f 10 "$bin/llama-bench" -m "$2" -p 0 \
    -n "$tokens" -d "$3" -t "$threads" -r "$runs" -fa "$fa" "${ct[@]}" -o jsonl >"$out" 2>"$err" ||
    { tail -5 "$err" >&2; rm -f "$out" "$err"; return 1; }
  local stats
  stats=$(sed -n 's/^leanattn: computed \([0-9]*\) FLASH_ATTN_EXT nodes in \([0-9.]*\) ms.*/\1 \2/p' \
    "$err" | awk '{ n += $1; ms += $2 } END { if (NR) print n, ms; else print "", "" }')
  python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
n, ms = (sys.argv[7].split() + ["", ""])[:2]
ts, sd = r["avg_ts"], r["stddev_ts"]
print(",".join(sys.argv[2:7] + [f"{ts:.3f}", f"{sd:.3f}", n, ms, sys.argv[8]]))
' "$out" "$1" "$layers" "$3" "$4" "$5" "$stats" "$commit" | tee -a "$csv"
  rm -f "$out" "$err"
}

for shape in $shapes; do
  model=$(model_of "$shape")
  [ "$depth0" = 1 ] && one "$shape" "$model" 0 f16 stock-fa-on
  for depth in $depths; do
    for ct in $caches; do
      for config in $configs; do
        [ "$config" = stock-fa-off ] && [ "$ct" != f16 ] && continue
        one "$shape" "$model" "$depth" "$ct" "$config"
      done
    done
  done
done
echo "results: $csv"
