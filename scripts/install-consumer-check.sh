#!/usr/bin/env bash
# `cmake --install` of a configured and built leanattn build directory into a temporary prefix,
# then tests/install_consumer (find_package(leanattn), leanattn::leanattn, the umbrella header)
# configured against that prefix alone, built and run. The `package` stage of scripts/test.sh
# runs it on the CPU build (build/release), the `cuda` stage on the CUDA build (build/cuda): there
# the consumer also links the CUDA engine and runs "cuda" when a GPU is present.
# scripts/device-check.sh runs it on the GPU machine's build, passing where the carried Highway is.
#   scripts/install-consumer-check.sh <build-dir> [CMake arguments of the consumer's configure]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/install-consumer-check.sh <build-dir> [cmake args]}
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
find "$prefix" -type f | sed "s|^$prefix/|   |" | sort | grep -v '/leanattn/.*\.hpp$'
sed -n 's/^set(leanattn_WITH_CUDA \(.*\))$/   leanattn_WITH_CUDA: \1/p' \
  "$(find "$prefix" -name leanattnConfig.cmake)"
if [ -x "$prefix/bin/leanattn" ]; then
  "$prefix/bin/leanattn" --version
fi

echo "== install consumer against $prefix"
cmake -S tests/install_consumer -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" ${1+"$@"} >/dev/null
cmake --build "$work/consumer"
"$work/consumer/install_consumer"
