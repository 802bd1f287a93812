#!/usr/bin/env bash
# The vLLM tests (tests/vllm): vLLM's own engine with leanattn's backend against vLLM's own CPU
# attention, offline and through its OpenAI server. vLLM runs in its own venv, cached outside the
# clone (scripts/vllm-venv.sh: torch at vLLM's pin, ~6 GB); the package's wheel (the one build of
# scripts/python-wheel.sh, shared with the python stage) is installed into it, then pytest runs
# tests/vllm (their models cached outside the clone too). Called by scripts/test.sh.
#   scripts/test-vllm.sh [pytest arguments...]   (arguments replace the default test selection)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh
timed setup scripts/install-deps.sh python vllm

venv_py=$(timed setup scripts/vllm-venv.sh)
wheel=$(scripts/python-wheel.sh)
echo "== vllm: installing $(basename "$wheel") into $(dirname "$(dirname "$venv_py")")"
timed setup "$venv_py" -m pip install -q --force-reinstall --no-deps "$wheel"

# The test models (tests/vllm/models.py: ~1 min to make) kept outside the clone, keyed by the
# hash of the script that makes them and of the venv's python path (its versions).
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$( (cat tests/vllm/models.py; echo "$venv_py") | sha256sum | cut -c1-12)
for old in "$cache"/vllm-models-*; do
  if [ -e "$old" ] && [ "$old" != "$cache/vllm-models-$key" ]; then rm -rf "$old"; fi
done
export LEANATTN_VLLM_MODELS=$cache/vllm-models-$key LEANATTN_REQUIRE_VLLM=1

[ $# -eq 0 ] && set -- tests/vllm
echo "== vllm: pytest $*"
# -s: the tests print what they measured (logprob differences, flips) into the log.
exec "$venv_py" -m pytest -q -s -p no:cacheprovider "$@"
