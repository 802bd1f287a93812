#!/usr/bin/env bash
# The main job: installs what is missing, builds the release preset and runs `leanattn bench`,
# the default CPU sweep (every strategy, the bandwidth probe, correctness against the fp64
# reference; about a minute on 2 cores). Extra arguments go to `leanattn bench`, e.g.
#   scripts/main.sh --csv results.csv
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
exec build/release/apps/leanattn/leanattn bench "$@"
