#!/usr/bin/env bash
# vLLM with leanattn's backend against vLLM's own CPU attention (bench/vllm_serving.py), in
# vLLM's venv (scripts/vllm-venv.sh) with this checkout's wheel: each model and workload run
# ROUNDS times per backend, the backends alternated (this shared machine's speed drifts), one
# JSON line per run on stdout. Models are made by tests/vllm/models.py in $LEANATTN_CACHE.
#   bench/vllm_serving.sh [ROUNDS (3)] [MODELS (llama8b-attention smollm2)]
# environment: WORKLOADS, space-separated "requests:prompt:tokens:batched_tokens" (default
# "4:8000:128:2048 8:2000:64:512": decode-heavy long context, then a burst of shorter ones), where
# requests may be "mixed" and prompt a comma-separated list of lengths (a mixed-length burst).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
models=${2:-llama8b-attention smollm2}
workloads=${WORKLOADS:-4:8000:128:2048 8:2000:64:512}
py=$(scripts/vllm-venv.sh)
wheel=$(scripts/python-wheel.sh)
"$py" -m pip install -q --force-reinstall --no-deps "$wheel" >&2
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}/vllm-bench-models
mkdir -p "$cache"
echo "# $(lscpu | sed -n 's/^Model name: *//p') $(nproc) CPUs, $(date -u +%F), commit $(git rev-parse --short HEAD)" >&2
for model in $models; do
  folder=$("$py" tests/vllm/models.py "$cache/$model" "$model" | tail -1)
  for w in $workloads; do
    IFS=: read -r n prompt tokens batched <<<"$w"
    for ((r = 0; r < rounds; r++)); do
      for backend in vllm leanattn; do
        if [ "$n" = mixed ]; then size=(--lengths "$prompt"); else
          size=(--requests "$n" --prompt "$prompt"); fi
        "$py" bench/vllm_serving.py --model "$folder" --backend "$backend" "${size[@]}" \
          --tokens "$tokens" --batched-tokens "$batched" 2>/dev/null |
          tail -1 | sed "s/^{/{\"model\": \"$model\", \"round\": $r, /"
      done
    done
  done
done
