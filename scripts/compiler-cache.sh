#!/usr/bin/env bash
# The compiler cache on the scripts' side: sourced (`. scripts/compiler-cache.sh`) by
# scripts/test.sh, scripts/main.sh and the stage scripts. The CMake presets start every compile
# through scripts/ccache-launcher.sh (where ccache is configured: cache outside the clone, shared
# by every clone on the machine); this exports the same launcher as CMAKE_<LANG>_COMPILER_LAUNCHER
# for the builds that do not use a preset (pip's scikit-build-core build, the install consumer),
# and defines ccache_stats for scripts/test.sh's timing table.
_compiler_cache_launcher=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/ccache-launcher.sh
export CMAKE_C_COMPILER_LAUNCHER=$_compiler_cache_launcher
export CMAKE_CXX_COMPILER_LAUNCHER=$_compiler_cache_launcher
export CMAKE_CUDA_COMPILER_LAUNCHER=$_compiler_cache_launcher

# ccache_zero: ccache's counters set to zero (nothing where ccache is missing).
ccache_zero() {
  "$_compiler_cache_launcher" --ccache --zero-stats >/dev/null 2>&1 || true
}

# ccache_stats: "H/C (P%)": hits of C cacheable compiles since ccache_zero, or "-" when nothing
# was compiled or ccache is missing.
ccache_stats() {
  "$_compiler_cache_launcher" --ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hit += $2 }
    $1 == "cache_miss" { miss += $2 }
    END {
      n = hit + miss
      if (n == 0) print "-"; else printf "%d/%d (%d%%)\n", hit, n, 100 * hit / n
    }'
}
