#!/usr/bin/env bash
# Python package tests: installs what is missing, builds the wheel (scripts/python-wheel.sh: one
# incremental build in build/python, shared with the torch and package stages), installs it with
# its test extras into a venv (default build/venv, the build venv), then runs pytest on
# tests/python (less tests/python/torch, the torch stage's: scripts/test-torch.sh) and prints its
# summary. Exit code non-zero if the build or any test failed. Called by scripts/test.sh.
#   scripts/test-python.sh [pytest arguments...]   (arguments replace the default test selection)
# Environment: PYTHON (default python3) makes a missing venv; LEANATTN_VENV (default build/venv)
# lets scripts/test-torch.sh install the same wheel into its cached venv.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh
timed setup scripts/install-deps.sh python

venv=${LEANATTN_VENV:-build/venv}
export PIP_DISABLE_PIP_VERSION_CHECK=1
wheel=$(scripts/python-wheel.sh)
if ! "$venv/bin/python" -c "import sys" 2>/dev/null; then
  timed setup "${PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
echo "== python: installing $(basename "$wheel") into $venv"
timed setup "$py" -m pip install -q --force-reinstall --no-deps "$wheel"
timed setup "$py" -m pip install -q "$wheel[test]"

[ $# -eq 0 ] && set -- tests/python --ignore=tests/python/torch
echo "== python: pytest $*"
# From the repository root: `import leanattn` finds the installed package (python/leanattn has
# no compiled module).
exec "$py" -m pytest -q "$@"
