#!/usr/bin/env bash
# Prints the ptxas resource report of every CUDA kernel of a build (registers, stack frame, spill
# stores and loads, per architecture) and exits 1 if any kernel spills, 2 if there is no report.
# The report is written during the build by src/cuda/capture_ptxas.sh (-Xptxas -v of each kernel
# object) into <build-dir>/ptxas/ and gathered in <build-dir>/ptxas-report.txt.
#   scripts/check-ptxas.sh build/cuda
set -euo pipefail
build=${1:?usage: check-ptxas.sh <build-dir>}
dir="$build/ptxas"
shopt -s nullglob
reports=("$dir"/*.ptxas.txt)
if [ ${#reports[@]} -eq 0 ]; then
  echo "check-ptxas.sh: no ptxas reports in $dir (build the leanattn_cuda target first)" >&2
  exit 2
fi
demangle=cat
command -v c++filt >/dev/null && demangle=c++filt

# One line per (kernel, arch): name, arch, registers, stack, spill stores, spill loads.
cat "${reports[@]}" | awk '
  /Compiling entry function/ {
    match($0, /function \x27[^\x27]+\x27/); name = substr($0, RSTART + 10, RLENGTH - 11)
    match($0, /for \x27[^\x27]+\x27/); arch = substr($0, RSTART + 5, RLENGTH - 6)
    next
  }
  /bytes stack frame/ { stack = $1; stores = $5; loads = $9; next }
  /Used [0-9]+ registers/ {
    match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
    if (name != "") print name, arch, regs, stack, stores, loads
    name = ""
  }' | sort -u | while read -r name arch regs stack stores loads; do
  pretty=$(echo "$name" | $demangle | sed -E 's/leanattn::cuda:://g; s/\(KernelParams\)//; s/^void //')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$pretty" "$arch" "$regs" "$stack" "$stores" "$loads"
done >"$build/ptxas-summary.tsv"

printf '%-52s %-6s %5s %6s %12s %11s\n' kernel arch regs stack spill_stores spill_loads
spills=0
while IFS=$'\t' read -r name arch regs stack stores loads; do
  printf '%-52s %-6s %5s %6s %12s %11s\n' "$name" "$arch" "$regs" "$stack" "$stores" "$loads"
  if [ "$stores" != 0 ] || [ "$loads" != 0 ]; then spills=$((spills + 1)); fi
done <"$build/ptxas-summary.tsv"
kernels=$(wc -l <"$build/ptxas-summary.tsv")
if [ "$spills" -ne 0 ]; then
  echo "check-ptxas.sh: $spills of $kernels kernel builds spill registers" >&2
  exit 1
fi
echo "check-ptxas.sh: $kernels kernel builds, no spills"
