#!/usr/bin/env bash
# The Python package's wheel, built once for the python, torch and package stages of
# scripts/test.sh: scikit-build-core + nanobind (pyproject.toml) in the build venv build/venv
# (scripts/python-env.sh; extra packages given are added to it), without build isolation, so the
# CMake build in build/python/<wheel tag> is the same folder every run and only what changed is
# recompiled (through ccache: scripts/compiler-cache.sh). Writes build/wheel/leanattn-*.whl (the
# folder emptied first) and prints its path as the only line on stdout; the rest goes to stderr.
#   scripts/python-wheel.sh [extra packages for the build venv...]
# Environment: PYTHON (default python3) makes the venv; CMAKE_BUILD_PARALLEL_LEVEL (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/compiler-cache.sh
. scripts/stage-timing.sh
venv=build/venv
out=build/wheel
export PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
{
  timed setup scripts/python-env.sh "$venv" "$@"
  echo "== python: building the wheel (build dir build/python)"
  rm -rf "$out"
  timed build "$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$out" \
    -Cbuild-dir="build/python/{wheel_tag}" -Ccmake.define.LEANATTN_WARNINGS_AS_ERRORS=ON .
} >&2
ls "$PWD/$out"/leanattn-*.whl
