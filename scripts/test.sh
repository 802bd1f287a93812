#!/usr/bin/env bash
# All tests: installs what is missing, then builds and runs the GoogleTest suite (release).
# Prints CTest's summary. Exit code non-zero if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== release: build and unit tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
