#!/usr/bin/env bash
# The venv of the torch stage (scripts/test-torch.sh): PyTorch, transformers and the real-model
# example's packages from the registry (python/requirements/torch-tests.txt, and
# torch-tests-nodeps.txt with --no-deps). PyTorch is ~5 GB with its CUDA libraries, so the venv
# lives outside the clone, in ${LEANATTN_CACHE:-$HOME/.cache/leanattn}/venv-torch-<hash of both
# files>, reused by every later run and clone with the same requirements; venvs of other hashes
# are removed. One maker at a time (a lock beside it): scripts/test.sh may start this in the
# background while the builds run, and the stage then waits for it. Prints the venv's folder on
# stdout (progress on stderr).
#   scripts/torch-venv.sh
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$(cat python/requirements/torch-tests-nodeps.txt python/requirements/torch-tests.txt |
  sha256sum | cut -c1-12)
venv="$cache/venv-torch-$key"
export PIP_DISABLE_PIP_VERSION_CHECK=1

mkdir -p "$cache"
exec 9>"$cache/.venv-torch.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  echo "== torch: creating $venv (PyTorch and transformers from the registry, minutes)" >&2
  for old in "$cache"/venv-torch-*; do
    if [ -e "$old" ] && [ "$old" != "$venv" ]; then rm -rf "$old"; fi
  done
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q -r python/requirements/torch-tests.txt >&2
  "$venv/bin/python" -m pip install -q --no-deps -r python/requirements/torch-tests-nodeps.txt >&2
  touch "$venv/.complete"
fi
echo "$venv"
