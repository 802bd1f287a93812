#!/usr/bin/env bash
# Compiler launcher of the decode-kernel objects (src/cuda/CMakeLists.txt sets it as
# CUDA_COMPILER_LAUNCHER): runs the nvcc command line it is given, saves the ptxas resource report
# of that object (-Xptxas -v: registers, stack frame, spill stores and loads per kernel and arch)
# to <log-dir>/<object>.ptxas.txt, and passes every other diagnostic through to the build log.
# scripts/check-ptxas.sh reads the saved reports.
#   capture_ptxas.sh <log-dir> <nvcc> <args...>
set -uo pipefail
log_dir=$1
shift
obj=unknown
prev=
for arg in "$@"; do
  [ "$prev" = "-o" ] && obj=$arg
  prev=$arg
done
mkdir -p "$log_dir"
stderr_file=$(mktemp)
"$@" 2>"$stderr_file"
rc=$?
report="$log_dir/$(basename "$obj").ptxas.txt"
grep -E "^ptxas info|bytes stack frame" "$stderr_file" >"$report.tmp" || true
mv "$report.tmp" "$report"
grep -v -E "^ptxas info|bytes stack frame" "$stderr_file" >&2 || true
rm -f "$stderr_file"
exit $rc
