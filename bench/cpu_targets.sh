#!/usr/bin/env bash
# The three CPU performance targets of the CPU-engine issue, measured `--runs` times each with
# `leanattn bench` (2 workers, f16, d 128; each run interleaves its probe passes with its timed
# runs), then the median of each figure over the runs. Writes the runs' CSVs and a log under
# bench/results/ (name: cpu-targets-<cpu>-<cores>c-<date>). Needs a release build
# (cmake --preset release && cmake --build build/release) or --leanattn BIN.
# --with-head-major adds the GPU's plans of every strategy (leanattn bench --with-head-major).
#   bench/cpu_targets.sh [--runs N] [--repeat N] [--leanattn BIN] [--out PREFIX]
#                        [--with-head-major]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 repeat=10 bin=build/release/apps/leanattn/leanattn out="" extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --leanattn) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --with-head-major) extra+=(--with-head-major); shift ;;
    *) echo "cpu_targets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "cpu_targets.sh: no leanattn binary at $bin (build the release preset)" >&2; exit 2; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/ /-/g' | tr 'A-Z' 'a-z')
out=${out:-bench/results/cpu-targets-${cpu}-$(nproc)c-$(date -u +%F)}
mkdir -p "$(dirname "$out")"
common=(--head-dim 128 --dtype f16 --workers 2 --repeat "$repeat" "${extra[@]}")
declare -A shape=(
  [1-gqa262k]="--q-heads 32 --kv-heads 8 --seq-len 262144"
  [2-mqa512k]="--q-heads 8 --kv-heads 1 --seq-len 524288"
  [3-mixed]="--q-heads 8 --kv-heads 1 --seq-lens 262144,4096,4096,4096,4096,4096,4096,4096"
)
: > "$out.txt"
for t in 1-gqa262k 2-mqa512k 3-mixed; do
  for r in $(seq "$runs"); do
    echo "target $t run $r/$runs" >&2
    # shellcheck disable=SC2086
    "$bin" bench ${shape[$t]} "${common[@]}" --csv "$out-$t-run$r.csv" >> "$out.txt" 2>/dev/null
  done
done
python3 - "$out" "$runs" <<'PY' | tee -a "$out.txt"
import csv, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
goals = {"1-gqa262k": "lean >= 0.85 of the probe", "2-mqa512k": "lean >= 1.5x head",
         "3-mixed": "lean >= 1.4x head and >= split"}
print(f"\nsummary: medians over {runs} runs (each run: median of its repeats; probe passes interleaved)")
for t, goal in goals.items():
    rows = {}
    for r in range(1, runs + 1):
        for row in csv.DictReader(open(f"{out}-{t}-run{r}.csv")):
            rows.setdefault(row["strategy"], []).append(row)
    lean = rows["lean"]
    med = lambda key: statistics.median(float(x[key]) for x in lean)
    each = lambda key: ", ".join("%.2f" % float(x[key]) for x in lean)
    print(f"  target {t} ({goal}): lean {med('gbps'):.2f} GB/s, probe {med('probe_gbps'):.1f} "
          f"GB/s, of_probe {med('probe_fraction'):.2f} [{each('probe_fraction')}], "
          f"vs_head {med('speedup_vs_head'):.2f} [{each('speedup_vs_head')}], "
          f"vs_split {med('speedup_vs_split'):.2f} [{each('speedup_vs_split')}]")
PY
