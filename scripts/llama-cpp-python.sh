#!/usr/bin/env bash
# The `llama-cpp-python` package as its users get it, in a venv kept outside the clone: `pip
# install llama-cpp-python==<version>` builds PyPI's sdist with the package's own CMake defaults
# (shared libraries, GGML_BACKEND_DL off: the CPU backend registered statically; OpenMP on) but
# two: its multimodal library (LLAVA_BUILD, libmtmd: image and audio encoders, which attention
# never touches) is left out (33 s of the 5.9-minute build on 2 cores), and the CPU features are
# the list scripts/llama-cpp.sh builds the tools with (`--cpu-features`: GGML_NATIVE's choice
# without AMX, whose matrix product crashes this package on Sapphire Rapids VMs: SIGSEGV in
# ggml_backend_amx_mul_mat on SmolLM2's q4_1 weights, with or without flash attention, seen
# here; upstream ggml-org/llama.cpp#20824). It is the same release that scripts/llama-cpp.sh
# builds the tools from, so that libggml-leanattn.so built against that tree loads into it
# (tests/llama_cpp/python_package_check.py, docs/llama-cpp.md). pip's wheel cache is not used
# (--no-cache-dir): it is keyed by the sdist, not by CMAKE_ARGS or the CPU. ccache misses here:
# pip builds in a new temporary folder each time.
# Cache: ${LEANATTN_CACHE:-~/.cache/leanattn}/venv-llama-cpp-python-<version>-<hash of this
# script and the feature list>/; other such venvs are removed. Prints the venv's python on stdout
# (everything else on stderr).
#   scripts/llama-cpp-python.sh     build if missing, print the venv's python
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh

# One version for the tools and the package: the one scripts/llama-cpp.sh pins.
version=$(sed -n 's/^version=\([0-9.]*\).*/\1/p' scripts/llama-cpp.sh)
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
mapfile -t features < <(scripts/llama-cpp.sh --cpu-features)
key=$({ cat scripts/llama-cpp-python.sh; printf '%s\n' "${features[@]}"; } | sha256sum | cut -c1-12)
venv="$cache/venv-llama-cpp-python-$version-$key"

make_venv() {
  echo "== llama-cpp-python: building $version from PyPI's sdist into $venv (minutes)" >&2
  mkdir -p "$cache" || return
  for old in "$cache"/venv-llama-cpp-python-*; do
    if [ -e "$old" ] && [ "$old" != "$venv" ]; then rm -rf "$old" || return; fi
  done
  rm -rf "$venv" &&
    python3 -m venv "$venv" &&
    CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF ${features[*]}" \
      CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$venv/bin/python" -m pip install -q --no-cache-dir \
      --no-binary llama-cpp-python "llama-cpp-python==$version" >&2 || return
  touch "$venv/.complete"
}

[ -f "$venv/.complete" ] || timed setup make_venv
echo "$venv/bin/python"
