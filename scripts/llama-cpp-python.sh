#!/usr/bin/env bash
# The `llama-cpp-python` package as its users get it, in a venv kept outside the clone: `pip
# install llama-cpp-python==<version>` builds PyPI's sdist with the package's own CMake defaults
# (shared libraries, GGML_BACKEND_DL off: the CPU backend registered statically; GGML_NATIVE and
# OpenMP on) but one: its multimodal library (LLAVA_BUILD, libmtmd: image and audio encoders,
# which attention never touches) is left out (33 s of the 5.9-minute build on 2 cores). It is
# the same release that scripts/llama-cpp.sh builds the tools from, so that
# libggml-leanattn.so built against that tree loads into it
# (tests/llama_cpp/python_package_check.py, docs/llama-cpp.md). pip keeps the built wheel in
# its cache, keyed by the sdist, not by CMAKE_ARGS (nor by the CPU GGML_NATIVE built for): a
# wheel with the multimodal library is refused as stale (`pip cache remove llama_cpp_python`
# after changing them). ccache misses here: pip builds in a new temporary folder each time.
# Cache: ${LEANATTN_CACHE:-~/.cache/leanattn}/venv-llama-cpp-python-<version>-<hash of this
# script>/; other versions' venvs are removed. Prints the venv's python on stdout (everything
# else on stderr).
#   scripts/llama-cpp-python.sh     build if missing, print the venv's python
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh

# One version for the tools and the package: the one scripts/llama-cpp.sh pins.
version=$(sed -n 's/^version=\([0-9.]*\).*/\1/p' scripts/llama-cpp.sh)
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$(sha256sum scripts/llama-cpp-python.sh | cut -c1-12)
venv="$cache/venv-llama-cpp-python-$version-$key"

make_venv() {
  echo "== llama-cpp-python: building $version from PyPI's sdist into $venv (minutes)" >&2
  mkdir -p "$cache" || return
  for old in "$cache"/venv-llama-cpp-python-*; do
    if [ -e "$old" ] && [ "$old" != "$venv" ]; then rm -rf "$old" || return; fi
  done
  rm -rf "$venv" &&
    python3 -m venv "$venv" &&
    CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
      "$venv/bin/python" -m pip install -q \
      --no-binary llama-cpp-python "llama-cpp-python==$version" >&2 || return
  if compgen -G "$venv/lib/python*/site-packages/llama_cpp/lib/libmtmd*" >/dev/null; then
    echo "llama-cpp-python: pip installed a wheel built with other CMAKE_ARGS (libmtmd is in" \
      "it) from its cache; run: python3 -m pip cache remove llama_cpp_python" >&2
    return 1
  fi
  touch "$venv/.complete"
}

[ -f "$venv/.complete" ] || timed setup make_venv
echo "$venv/bin/python"
