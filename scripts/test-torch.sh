#!/usr/bin/env bash
# The torch-based tests (tests/python/torch: torch tensors, the torch custom op and
# torch.compile, transformers models, torch.distributed on Gloo), in their own venv: PyTorch
# from the registry is ~5 GB with its CUDA libraries, so the venv lives outside the clone, in
# ${LEANATTN_CACHE:-$HOME/.cache/leanattn}/venv-torch-<hash of python/requirements/torch-tests*.txt>,
# and is reused by every later run (and clone) with the same requirements; venvs of other
# requirements are removed. scripts/test-python.sh installs the package's wheel into it (the one
# build of scripts/python-wheel.sh, shared with the python stage), then runs pytest on
# tests/python/torch. With
# LEANATTN_REQUIRE_TORCH=1 (set here) the tests fail, rather than skip, where torch is missing.
#   scripts/test-torch.sh [pytest arguments...]   (arguments replace the default test selection)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh
timed setup scripts/install-deps.sh python

python=${PYTHON:-python3}
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$(cat python/requirements/torch-tests-nodeps.txt python/requirements/torch-tests.txt |
  sha256sum | cut -c1-12)
venv="$cache/venv-torch-$key"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# (Each step checked: set -e does not reach into a function that `timed` calls.)
make_venv() {
  echo "== torch: creating $venv (PyTorch and transformers from the registry, minutes)"
  mkdir -p "$cache" || return
  for old in "$cache"/venv-torch-*; do
    if [ -e "$old" ] && [ "$old" != "$venv" ]; then rm -rf "$old" || return; fi
  done
  rm -rf "$venv" &&
    "$python" -m venv "$venv" &&
    "$venv/bin/python" -m pip install -q -r python/requirements/torch-tests.txt &&
    "$venv/bin/python" -m pip install -q --no-deps -r python/requirements/torch-tests-nodeps.txt &&
    touch "$venv/.complete"
}
[ -f "$venv/.complete" ] || timed setup make_venv
"$venv/bin/python" -c 'import torch, transformers; print("== torch", torch.__version__,
      "transformers", transformers.__version__)'

[ $# -eq 0 ] && set -- tests/python/torch
export LEANATTN_REQUIRE_TORCH=1
# torch.compile's code caches in a folder of this run: Inductor's default, /tmp/torchinductor_$USER,
# outlives runs, and its keys do not cover a custom op's schema, so a graph compiled against an
# earlier schema of torch.ops.leanattn was replayed (seen: a positional call of the old schema).
inductor=$(mktemp -d)
trap 'rm -rf "$inductor"' EXIT
export TORCHINDUCTOR_CACHE_DIR=$inductor
LEANATTN_VENV="$venv" scripts/test-python.sh "$@"
