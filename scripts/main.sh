#!/usr/bin/env bash
# The main job: installs what is missing, builds the release preset and runs the default CPU
# benchmark (every strategy, the bandwidth probe, correctness against the fp64 reference).
# Extra arguments go to `leanattn bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec build/release/apps/leanattn/leanattn plan --seq-lens 5000,300,17 --kv-heads 2 --workers 5 \
  --tile 128 "$@"
