#!/usr/bin/env bash
# Paired A/B of two leanattn builds' CPU kernels from the CPU caches: `leanattn bench
# --from-cache` (MHA 32/32, GQA 32/8, MQA 8/1, d 128, f16, one worker) with binary A and binary
# B alternated, round after round, for each SIMD target; then per target and shape the median
# over the rounds of each binary's median cycles per token x KV head, and B / A. Alternating
# spreads a shared machine's drift over both. Prints a table; --out FILE also keeps every run.
#   bench/cpu_cycles_ab.sh A_BIN B_BIN [--rounds N] [--repeat N] [--simd LIST] [--out FILE]
#                          [-- extra leanattn bench flags]
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
a=$1 b=$2
shift 2
rounds=7 repeat=300 simds="AVX3,AVX2" out="" extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --simd) simds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "cpu_cycles_ab.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for bin in "$a" "$b"; do
  [[ -x "$bin" ]] || { echo "cpu_cycles_ab.sh: no binary at $bin" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for simd in ${simds//,/ }; do
    for side in A B; do
      bin=$a
      [[ $side == B ]] && bin=$b
      echo "round $r/$rounds $simd $side" >&2
      "$bin" bench --from-cache --simd "$simd" --repeat "$repeat" "${extra[@]}" \
        --csv "$tmp/$side-$simd-$r.csv" > "$tmp/$side-$simd-$r.txt" 2>/dev/null
    done
  done
done
python3 - "$tmp" "$a" "$b" "$rounds" "$repeat" ${out:+"$out"} <<'PY'
import csv, glob, os, statistics, sys
tmp, a, b, rounds, repeat = sys.argv[1:6]
out = sys.argv[6] if len(sys.argv) > 6 else None
runs = {}  # (simd, case, side) -> [median cycles per run]
counter, clock, roof = "", [], {}
for path in sorted(glob.glob(os.path.join(tmp, "*.csv"))):
    side = os.path.basename(path).split("-")[0]
    for row in csv.DictReader(open(path)):
        runs.setdefault((row["simd"], row["case"], side), []).append(float(row["cycles_per_token_head"]))
        counter = row["counter"]
        clock.append(float(row["clock_ghz"]))
        roof[(row["simd"], row["case"])] = float(row["roof_cycles"])
lines = [f"A = {a}", f"B = {b}",
         f"{rounds} rounds x {repeat} runs, A and B alternated; counter: {counter}; "
         f"clock {min(clock):.2f}-{max(clock):.2f} GHz",
         f"{'simd':<6} {'case':<5} {'roof':>6} {'A_median':>9} {'B_median':>9} {'B/A':>6}  "
         f"A runs / B runs (cycles per token x KV head)"]
for simd, case in sorted({(k[0], k[1]) for k in runs}):
    ra, rb = runs.get((simd, case, "A"), []), runs.get((simd, case, "B"), [])
    ma, mb = statistics.median(ra), statistics.median(rb)
    lines.append(f"{simd:<6} {case:<5} {roof[(simd, case)]:>6.1f} {ma:>9.1f} {mb:>9.1f} "
                 f"{mb / ma:>6.3f}  {' '.join(f'{x:.1f}' for x in ra)} / "
                 f"{' '.join(f'{x:.1f}' for x in rb)}")
print("\n".join(lines))
if out:
    with open(out, "a") as f:
        f.write("\n".join(lines) + "\n")
PY
