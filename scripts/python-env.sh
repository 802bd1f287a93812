#!/usr/bin/env bash
# The venv the Python package is built in, shared by scripts/test-python.sh and
# scripts/package-check.sh: made with $PYTHON (default python3) when missing, then the build
# requirements of pyproject.toml and any extra packages given installed into it, so that
# `pip install/wheel --no-build-isolation` builds with the same paths every run (the CMake build
# in scikit-build-core's build-dir is then incremental, and shared by both scripts).
#   scripts/python-env.sh VENV [extra packages...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
shift
python=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! "$venv/bin/python" -c "import sys" 2>/dev/null; then
  echo "== python: creating $venv with $("$python" --version)"
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"

mapfile -t build_requires < <("$py" - <<'PY'
try:
    import tomllib
    with open("pyproject.toml", "rb") as f:
        requires = tomllib.load(f)["build-system"]["requires"]
except ImportError:  # Python < 3.11: the one-line list of pyproject.toml
    import re
    text = open("pyproject.toml").read()
    requires = re.findall(r'"([^"]+)"', re.search(r"requires = \[(.*?)\]", text).group(1))
print("\n".join(requires))
PY
)
echo "== python: build requirements ${build_requires[*]} $*"
"$py" -m pip install -q "${build_requires[@]}" "$@"
