#!/usr/bin/env bash
# The CPU performance targets of the variants issue (16), measured `--runs` times each with
# `leanattn bench` (lean only, 2 workers, f16, d 128, 32/8 heads), then the median of each
# figure over the runs. Writes the runs' CSVs and a log under bench/results/ (name:
# variant-targets-<cpu>-<cores>c-<date>). Needs a release build or --leanattn BIN.
#   q_len 4 on 32k tokens: one call >= 1.5x faster than four q_len = 1 calls (K/V read once);
#   window 4096 on 128k tokens: within 1.3x of a 4096-token sequence without a window.
# The third target (the plain path does not slow down) is the default sweep, `leanattn bench`,
# compared with the sweep recorded before the variants (bench/results/).
#   bench/variant_targets.sh [--runs N] [--repeat N] [--leanattn BIN] [--out PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 repeat=10 bin=build/release/apps/leanattn/leanattn out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --leanattn) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "variant_targets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "variant_targets.sh: no leanattn binary at $bin" >&2; exit 2; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/ /-/g' | tr 'A-Z' 'a-z')
out=${out:-bench/results/variant-targets-${cpu}-$(nproc)c-$(date -u +%F)}
mkdir -p "$(dirname "$out")"
common=(--q-heads 32 --kv-heads 8 --head-dim 128 --dtype f16 --workers 2 --strategy lean
        --repeat "$repeat")
declare -A shape=(
  [q1-32k]="--seq-len 32768 --q-len 1"
  [q4-32k]="--seq-len 32768 --q-len 4"
  [window4k-128k]="--seq-len 131072 --window 4096"
  [plain-4k]="--seq-len 4096"
)
cases=(q1-32k q4-32k window4k-128k plain-4k)
: > "$out.txt"
for r in $(seq "$runs"); do
  for c in "${cases[@]}"; do  # interleaved, so drift hits every case alike
    echo "case $c run $r/$runs" >&2
    # shellcheck disable=SC2086
    "$bin" bench ${shape[$c]} "${common[@]}" --csv "$out-$c-run$r.csv" >> "$out.txt" 2>/dev/null
  done
done
python3 - "$out" "$runs" <<'PY' | tee -a "$out.txt"
import csv, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def us(case):
    return [float(row["median_us"]) for r in range(1, runs + 1)
            for row in csv.DictReader(open(f"{out}-{case}-run{r}.csv"))
            if row["strategy"] == "lean"]
q1, q4, win, plain = (us(c) for c in ("q1-32k", "q4-32k", "window4k-128k", "plain-4k"))
m = statistics.median
print(f"\nsummary: medians over {runs} runs of lean's median time (us)")
print(f"  q_len 4 vs 4 x q_len 1 (goal >= 1.5): {4 * m(q1) / m(q4):.2f} "
      f"(q_len 1 {m(q1):.0f} us, q_len 4 {m(q4):.0f} us; per run "
      + ", ".join(f"{4 * a / b:.2f}" for a, b in zip(q1, q4)) + ")")
print(f"  window 4096 on 128k vs 4096 tokens (goal <= 1.3): {m(win) / m(plain):.2f} "
      f"(window {m(win):.0f} us, 4096 tokens {m(plain):.0f} us; per run "
      + ", ".join(f"{a / b:.2f}" for a, b in zip(win, plain)) + ")")
PY
