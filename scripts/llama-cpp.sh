#!/usr/bin/env bash
# llama.cpp from the registry, built once per machine and kept outside the clone, as the torch
# venv is. The `llama-cpp-python` sdist on PyPI vendors llama.cpp's whole tree (tools and tests
# included); this pins one release of it, unpacks it whole and builds its `vendor/llama.cpp` the
# way llama.cpp's release binaries are built, so that what is measured is what users run:
#   - shared libraries and GGML_BACKEND_DL=ON: every backend, the CPU one included, is a module
#     that `ggml_backend_load_all()` loads, so every tool (llama-cli, llama-server,
#     llama-perplexity, not only llama-bench and test-backend-ops) reads GGML_BACKEND_PATH and
#     loads an out-of-tree backend from it (docs/llama-cpp.md);
#   - one CPU backend for this CPU: GGML_NATIVE is refused with GGML_BACKEND_DL, so the features
#     /proc/cpuinfo lists are turned on one by one (GGML_AVX2, GGML_AVX512, ...), which is what
#     the native build would pick, but AMX: ggml's AMX matrix product crashes on Sapphire Rapids
#     VMs (SIGSEGV in ggml_backend_amx_mul_mat on SmolLM2's q4_1 weights, seen here; upstream
#     ggml-org/llama.cpp#20824, closed without a fix); OpenMP as by default;
#   - only the tools measured and tested here: llama-bench, llama-cli, llama-completion,
#     llama-perplexity, llama-batched-bench, llama-server, test-backend-ops.
# The sdist carries the submodule's git metadata (a shallow gitdir under its .git/modules): built
# inside it, as pip builds the package (scripts/llama-cpp-python.sh), ggml_commit() is the
# vendored commit ("0c1e570-dirty"), the same in both builds; a backend built against this tree
# checks it and ggml_version() (0.25.3) when it is loaded (integrations/llama.cpp).
# Cache: ${LEANATTN_CACHE:-~/.cache/leanattn}/llama.cpp-<version>-<hash of this script and the
# feature list: a build for one CPU may not run on another>/ with sdist/ (the unpacked package),
# src/ (a link to its vendor/llama.cpp), build/ and the binaries in build/bin; other folders are
# removed. Prints that folder on stdout (everything else on stderr).
#   scripts/llama-cpp.sh            build if missing, print the folder
#   scripts/llama-cpp.sh --cpu-features   print the -DGGML_<feature>=ON list, one per line
#                                   (scripts/llama-cpp-python.sh builds the package with it)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh

version=0.3.36  # llama-cpp-python; vendors llama.cpp with ggml 0.25.3 (backend API version 2)

# GGML_<feature>=ON for each x86 feature this CPU has (what GGML_NATIVE would detect, AMX left
# out: above).
cpu_features() {
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  local pair
  for pair in sse4_2:SSE42 avx:AVX f16c:F16C fma:FMA avx2:AVX2 bmi2:BMI2 avx512f:AVX512 \
    avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
    case "$flags" in *" ${pair%%:*} "*) echo "-DGGML_${pair#*:}=ON" ;; esac
  done
}

if [ "${1:-}" = "--cpu-features" ]; then
  cpu_features
  exit 0
fi

cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
key=$({ cat scripts/llama-cpp.sh; cpu_features; } | sha256sum | cut -c1-12)
dir="$cache/llama.cpp-$version-$key"
targets=(llama-bench llama-cli llama-completion llama-perplexity llama-batched-bench llama-server
         test-backend-ops ggml-cpu)

# (Each step checked: set -e does not reach into a function that `timed` calls.)
fetch() {
  echo "== llama.cpp: fetching llama-cpp-python $version (sdist, ~76 MB)" >&2
  mkdir -p "$cache" || return
  for old in "$cache"/llama.cpp-*; do
    if [ -e "$old" ] && [ "$old" != "$dir" ]; then rm -rf "$old" || return; fi
  done
  rm -rf "$dir" && mkdir -p "$dir/download" "$dir/sdist" &&
    python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$version" \
      -d "$dir/download" >&2 &&
    tar -xzf "$dir/download/llama_cpp_python-$version.tar.gz" -C "$dir/sdist" \
      --strip-components=1 &&
    ln -s sdist/vendor/llama.cpp "$dir/src" &&
    rm -rf "$dir/download"
}

build() {
  echo "== llama.cpp: building ${targets[*]} (minutes)" >&2
  local features
  mapfile -t features < <(cpu_features)
  # GIT_CEILING_DIRECTORIES: llama.cpp asks git for its commit, which the sdist's own gitdir
  # answers; a repository above the cache must not. The source by its real path, not src/:
  # llama.cpp makes the gitdir's index (reached by "..") a configure input, and through the link
  # ninja would look for it elsewhere and regenerate forever.
  GIT_CEILING_DIRECTORIES=$dir cmake -S "$dir/sdist/vendor/llama.cpp" -B "$dir/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF \
    "${features[@]}" \
    -DGGML_CCACHE=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
    >&2 &&
    cmake --build "$dir/build" -j "$(nproc)" --target "${targets[@]}" >&2 &&
    touch "$dir/.complete"
}

if [ ! -f "$dir/.complete" ]; then
  timed setup fetch
  timed build build
fi
echo "$dir"
