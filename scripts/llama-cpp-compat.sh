#!/usr/bin/env bash
# Which llama.cpp builds leanattn's ggml backend loads into and passes in: the evidence behind
# the backend's version policy (integrations/llama.cpp/ggml_version_policy.hpp, docs/llama-cpp.md;
# the table in bench/results/llama-cpp-compat-*.md). For each llama-cpp-python release below and
# the pinned one (scripts/llama-cpp.sh, CI's):
#   1. llama.cpp from that release's PyPI sdist (it vendors the whole tree with the submodule's git
#      metadata), built in its default CMake configuration (shared libraries, GGML_BACKEND_DL off,
#      GGML_NATIVE, OpenMP), test-backend-ops only, under
#      ${LEANATTN_CACHE:-~/.cache/leanattn}/compat-llama.cpp-<version>/ (src/, build/; the pinned
#      one is scripts/llama-cpp.sh's own folder, built its way);
#   2. libggml-leanattn.so built against each tree (build/llama-compat-<version>);
#   3. the layouts the backend relies on, printed by a probe compiled against each tree's headers
#      (GGML_BACKEND_API_VERSION, the ops and types it names, ggml_tensor, ggml_cgraph, the
#      interface structs it fills) and compared with the pinned tree's;
#   4. every backend in every tree: does the version policy load it (no override), and, loaded
#      with LEANATTN_GGML_ANY_VERSION=1 whatever the policy says, test-backend-ops -o
#      FLASH_ATTN_EXT -b LEANATTN: cases taken and passed, failed, declined.
# Prints a markdown table on stdout (progress on stderr). Everything runs under nice with at most
# LEANATTN_COMPAT_JOBS (2) compile jobs. 8-11 minutes per llama.cpp build on 2 shared cores, then
# under a minute per backend and tree (bench/results/llama-cpp-compat-amd-epyc-2c-2026-12-06.md).
#   scripts/llama-cpp-compat.sh                   the versions below (and the pinned one)
#   LEANATTN_COMPAT_VERSIONS="0.3.34" scripts/llama-cpp-compat.sh

# llama-cpp-python releases tried beside the pinned one: the adjacent release (ggml 0.20.0,
# llama.cpp 4df29be, 2026-08-16) and one 3.5 months older (ggml 0.15.1, e3a74b2, 2026-06-16).
read -r -a versions <<<"${LEANATTN_COMPAT_VERSIONS:-0.3.35 0.3.30}"

set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/compiler-cache.sh

cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}
jobs=${LEANATTN_COMPAT_JOBS:-2}
nice=(nice -n 19)
pinned_version=$(sed -n 's/^version=\([0-9.]*\).*/\1/p' scripts/llama-cpp.sh)
say() { echo "== compat: $*" >&2; }

say "the pinned llama.cpp (llama-cpp-python $pinned_version, scripts/llama-cpp.sh)"
pinned=$("${nice[@]}" scripts/llama-cpp.sh)

tree() {  # the llama.cpp folder (src/, build/) of a llama-cpp-python version
  if [ "$1" = "$pinned_version" ]; then echo "$pinned"; else echo "$cache/compat-llama.cpp-$1"; fi
}

# 1. llama.cpp from the sdist, its default build (test-backend-ops and what it links).
build_tree() {
  local v=$1 d
  d=$(tree "$v")
  [ -f "$d/.complete" ] && return
  say "llama-cpp-python $v: sdist and llama.cpp's default build in $d (minutes)"
  rm -rf "$d" && mkdir -p "$d/download" "$d/sdist"
  python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$v" -d "$d/download" >&2
  tar -xzf "$d/download/llama_cpp_python-$v.tar.gz" -C "$d/sdist" --strip-components=1
  ln -s sdist/vendor/llama.cpp "$d/src"
  rm -rf "$d/download"
  # As scripts/llama-cpp.sh: git answers from the sdist's own gitdir, the source by its real path.
  GIT_CEILING_DIRECTORIES=$d "${nice[@]}" cmake -S "$d/sdist/vendor/llama.cpp" -B "$d/build" \
    -G Ninja -DCMAKE_BUILD_TYPE=Release >"$d/configure.log"
  local start=$SECONDS
  "${nice[@]}" cmake --build "$d/build" -j "$jobs" --target test-backend-ops >"$d/build.log"
  echo "$((SECONDS - start))" >"$d/build-seconds"
  touch "$d/.complete"
}

# 2. libggml-leanattn.so against a tree; prints its path. build/llama-compat-<v> sits beside
# build/llama, so ccache reuses the engine's objects.
build_backend() {
  local b=build/llama-compat-$1
  say "libggml-leanattn.so against llama-cpp-python $1's llama.cpp ($b)"
  "${nice[@]}" cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLEANATTN_WARNINGS_AS_ERRORS=ON -DLEANATTN_CUDA=OFF -DLEANATTN_BUILD_CLI=OFF \
    -DLEANATTN_LLAMA_CPP="$(tree "$1")" >/dev/null
  "${nice[@]}" cmake --build "$b" -j "$jobs" --target ggml-leanattn >&2
  echo "$PWD/$b/integrations/llama.cpp/libggml-leanattn.so"
}

# 3. The layouts the backend relies on, as a tree's headers define them.
probe_src=$cache/compat-probe.cpp
cat >"$probe_src" <<'EOF'
#include <cstddef>
#include <cstdio>
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-impl.h"
#define V(x) std::printf("%s %lld\n", #x, (long long)(x))
#define S(t) std::printf("sizeof(%s) %zu\n", #t, sizeof(struct t))
#define O(t, m) std::printf("offsetof(%s,%s) %zu\n", #t, #m, offsetof(struct t, m))
extern "C" void ggml_abort(const char*, int, const char*, ...) { __builtin_trap(); }  // unused
int main() {
  V(GGML_BACKEND_API_VERSION);
  V(GGML_OP_NONE); V(GGML_OP_RESHAPE); V(GGML_OP_VIEW); V(GGML_OP_PERMUTE); V(GGML_OP_TRANSPOSE);
  V(GGML_OP_FLASH_ATTN_EXT); V(GGML_OP_COUNT);
  V(GGML_TYPE_F32); V(GGML_TYPE_F16); V(GGML_TYPE_BF16); V(GGML_TYPE_Q8_0); V(GGML_TYPE_Q4_0);
  V(GGML_TYPE_COUNT);
  V(GGML_MAX_DIMS); V(GGML_MAX_SRC); V(GGML_MAX_OP_PARAMS); V(GGML_MAX_NAME);
  V(GGML_TENSOR_FLAG_COMPUTE); V(GGML_BACKEND_BUFFER_USAGE_ANY); V(GGML_BACKEND_DEVICE_TYPE_ACCEL);
  S(ggml_tensor); O(ggml_tensor, type); O(ggml_tensor, buffer); O(ggml_tensor, ne);
  O(ggml_tensor, nb); O(ggml_tensor, op); O(ggml_tensor, op_params); O(ggml_tensor, flags);
  O(ggml_tensor, src); O(ggml_tensor, view_src); O(ggml_tensor, data); O(ggml_tensor, name);
  S(ggml_cgraph); O(ggml_cgraph, n_nodes); O(ggml_cgraph, nodes);
  S(ggml_backend_i); O(ggml_backend_i, graph_compute); O(ggml_backend_i, graph_optimize);
  S(ggml_backend); O(ggml_backend, iface); O(ggml_backend, device); O(ggml_backend, context);
  S(ggml_backend_device_i); O(ggml_backend_device_i, supports_op);
  O(ggml_backend_device_i, event_synchronize);
  S(ggml_backend_device); O(ggml_backend_device, reg); O(ggml_backend_device, context);
  S(ggml_backend_reg_i); O(ggml_backend_reg_i, get_proc_address);
  S(ggml_backend_reg); O(ggml_backend_reg, iface); O(ggml_backend_reg, context);
  S(ggml_backend_buffer_type_i); S(ggml_backend_buffer_type);
  S(ggml_backend_buffer_i); S(ggml_backend_buffer); O(ggml_backend_buffer, usage);
  S(ggml_backend_dev_props); O(ggml_backend_dev_props, caps); S(ggml_backend_dev_caps);
  return 0;
}
EOF
layout() {  # prints the probe's "name value" lines for a tree
  local d out
  d=$(tree "$1")
  out=$cache/compat-probe-$1
  "${nice[@]}" c++ -std=c++17 -w -I"$d/src/ggml/include" -I"$d/src/ggml/src" "$probe_src" -o "$out"
  "$out"
}

# 4. One backend in one tree. Prints "<policy> <loaded> <taken> <failed> <declined> <seconds>":
# policy "loads" or "refuses" (no override; test-backend-ops runs no case), then the run with
# LEANATTN_GGML_ANY_VERSION=1. The cases are counted on stdout alone: the backend's log lines
# (stderr) would otherwise land inside a case's line.
try_backend() {
  local so=$1 bin out err policy loaded start rc
  bin=$(tree "$2")/build/bin/test-backend-ops
  out=$(mktemp) err=$(mktemp)
  GGML_BACKEND_PATH=$so "$bin" -o FLASH_ATTN_EXT -p '^no-such-case$' -b LEANATTN >"$out" 2>"$err" ||
    true
  if grep -q "^Backend [0-9]*/[0-9]*: LEANATTN" "$out"; then policy=loads; else policy=refuses; fi
  grep -h "^leanattn: \(built\|not\)" "$err" >&2 || true
  start=$SECONDS rc=0
  LEANATTN_GGML_ANY_VERSION=1 GGML_BACKEND_PATH=$so "${nice[@]}" "$bin" -o FLASH_ATTN_EXT \
    -b LEANATTN >"$out" 2>"$err" || rc=$?
  if grep -q "^Backend [0-9]*/[0-9]*: LEANATTN" "$out"; then loaded=yes; else loaded=no; fi
  [ "$rc" -gt 1 ] && loaded="exit-$rc"  # 1: a failed case; more: a crash
  echo "$policy $loaded $(grep -c 'FLASH_ATTN_EXT(.*): .*OK' "$out" || true)" \
    "$(grep -c 'FLASH_ATTN_EXT(.*): .*FAIL' "$out" || true)" \
    "$(grep -c 'FLASH_ATTN_EXT(.*): not supported' "$out" || true) $((SECONDS - start))"
  grep "FLASH_ATTN_EXT(.*): .*FAIL" "$out" | head -5 >&2 || true
  rm -f "$out" "$err"
}

all=("$pinned_version" "${versions[@]}")
for v in "${versions[@]}"; do build_tree "$v"; done
declare -A so
for v in "${all[@]}"; do so[$v]=$(build_backend "$v"); done

echo "## The trees"
echo
echo "The headers' lines that differ from the pinned tree's: ggml-backend-impl.h, ggml-backend.h,"
echo "ggml.h, ggml-impl.h (ggml/include, ggml/src); the layouts: the probe's values that differ."
echo
echo "| llama-cpp-python | ggml | llama.cpp commit (ggml_commit()) | commit date | build | header lines differing | layouts vs the pinned tree |"
echo "|---|---|---|---|---|---|---|"
pinned_layout=$(layout "$pinned_version")
for v in "${all[@]}"; do
  d=$(tree "$v")
  # The backend's build took them from the tree's ggml-version.h or from its libggml-base.
  header=$d/build/ggml/src/ggml-version.h
  [ -f "$header" ] || header=build/llama-compat-$v/integrations/llama.cpp/ggml-version/ggml-version.h
  version=$(sed -n 's/^#define GGML_VERSION *"\(.*\)"/\1/p' "$header")
  commit=$(sed -n 's/^#define GGML_COMMIT *"\(.*\)"/\1/p' "$header")
  date=$(GIT_CEILING_DIRECTORIES=$d git -C "$d/src" log -1 --format=%cs 2>/dev/null || echo "?")
  if [ "$v" = "$pinned_version" ]; then
    how="scripts/llama-cpp.sh (GGML_BACKEND_DL)"
  else
    how="default, $(cat "$d/build-seconds" 2>/dev/null || echo "?") s"
  fi
  differs=$({ diff <(echo "$pinned_layout") <(layout "$v") || true; } | sed -n 's/^> //p' |
    while read -r name value; do
      printf '%s %s (pinned %s); ' "$name" "$value" \
        "$(echo "$pinned_layout" | awk -v n="$name" '$1 == n { print $2 }')"
    done)
  differs=${differs%; }
  lines=$(for h in src/ggml-backend-impl.h include/ggml-backend.h include/ggml.h src/ggml-impl.h; do
    { diff "$pinned/src/ggml/$h" "$d/src/ggml/$h" || true; } | grep -c '^[<>]' || true
  done | paste -sd/)
  echo "| $v | $version | $commit | $date | $how | $lines | ${differs:-the same} |"
done
echo
echo "## Each backend in each tree"
echo
echo "test-backend-ops -o FLASH_ATTN_EXT -b LEANATTN; \"policy\": whether the version policy loads it"
echo "without LEANATTN_GGML_ANY_VERSION; the rest with LEANATTN_GGML_ANY_VERSION=1."
echo
echo "| backend built against | loaded into | policy | loaded | taken and passed | failed | declined | seconds |"
echo "|---|---|---|---|---|---|---|---|"
for b in "${all[@]}"; do
  for t in "${all[@]}"; do
    say "the backend built against $b in $t's test-backend-ops"
    read -r policy loaded taken failed declined seconds <<<"$(try_backend "${so[$b]}" "$t")"
    echo "| $b | $t | $policy | $loaded | $taken | $failed | $declined | $seconds |"
  done
done
