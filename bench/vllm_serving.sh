#!/usr/bin/env bash
# vLLM with leanattn's backend against vLLM's own CPU attention (bench/vllm_serving.py), in
# vLLM's venv (scripts/vllm-venv.sh) with this checkout's wheel: each model and workload run
# ROUNDS times per backend, the backends alternated (this shared machine's speed drifts), each
# run under `chrt -f 10` (where allowed) and /tmp/leanattn-bench.lock, one JSON line per run on
# stdout; a failed run prints its log's tail and stops the sweep. Models are made by
# tests/vllm/models.py in $LEANATTN_CACHE, keyed by that script's hash.
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
key=$(sha256sum tests/vllm/models.py | cut -c1-12)
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}/vllm-bench-models-$key
mkdir -p "$cache"
cpu=$(lscpu | sed -n 's/^Model name: *//p')
echo "# $cpu, $(nproc) CPUs, $(date -u +%F), commit $(git rev-parse --short HEAD)" >&2
prio=(chrt -f 10)
chrt -f 10 true 2>/dev/null || prio=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for model in $models; do
  folder=$("$py" tests/vllm/models.py "$cache/$model" "$model" | tail -1)
  for w in $workloads; do
    IFS=: read -r n prompt tokens batched <<<"$w"
    for ((r = 0; r < rounds; r++)); do
      for backend in vllm leanattn; do
        if [ "$n" = mixed ]; then size=(--lengths "$prompt"); else
          size=(--requests "$n" --prompt "$prompt"); fi
        if ! flock /tmp/leanattn-bench.lock "${prio[@]}" "$py" bench/vllm_serving.py \
          --model "$folder" --backend "$backend" "${size[@]}" --tokens "$tokens" \
          --batched-tokens "$batched" >"$log" 2>&1; then
          echo "vllm_serving.sh: $model $w $backend failed:" >&2
          tail -30 "$log" >&2
          exit 1
        fi
        tail -1 "$log" | sed "s/^{/{\"model\": \"$model\", \"round\": $r, /"
      done
    done
  done
done
