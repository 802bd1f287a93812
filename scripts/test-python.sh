#!/usr/bin/env bash
# Python package tests: installs what is missing, builds and installs the package with pip
# (scikit-build-core + nanobind, pyproject.toml) into the venv build/venv, then runs pytest on
# tests/python (less tests/python/torch, the torch stage's: scripts/test-torch.sh) and prints its
# summary. Exit code non-zero if the build or any test failed. Repeated runs reuse the venv and
# the CMake build in build/python/<wheel tag> (scikit-build-core's build-dir), so only changed
# sources are recompiled; scripts/package-check.sh builds its wheel from the same venv and build.
# Called by scripts/test.sh.
#   scripts/test-python.sh [pytest arguments...]   (arguments replace the default test selection)
# Environment: PYTHON (default python3) makes the venv; CMAKE_BUILD_PARALLEL_LEVEL (default nproc);
# LEANATTN_VENV (default build/venv) and LEANATTN_PY_BUILD (default build/python) let
# scripts/test-torch.sh use its own cached venv and build dir.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh python

venv=${LEANATTN_VENV:-build/venv}
py_build=${LEANATTN_PY_BUILD:-build/python}
export PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

# The venv with pyproject.toml's build requirements, so that the build runs without isolation:
# the same paths every run, hence an incremental CMake build (shared with scripts/package-check.sh).
scripts/python-env.sh "$venv"
py="$venv/bin/python"

echo "== python: building and installing leanattn (build dir $py_build)"
"$py" -m pip install -q --no-build-isolation \
  -Cbuild-dir="$py_build/{wheel_tag}" \
  -Ccmake.define.LEANATTN_WARNINGS_AS_ERRORS=ON \
  ".[test]"

[ $# -eq 0 ] && set -- tests/python --ignore=tests/python/torch
echo "== python: pytest $*"
# From the repository root: `import leanattn` finds the installed package (python/leanattn has
# no compiled module).
exec "$py" -m pytest -q "$@"
