#!/usr/bin/env bash
# The compiler cache of every build the scripts make: sourced (`. scripts/compiler-cache.sh`) by
# scripts/test.sh, scripts/main.sh and the stage scripts before they configure a CMake preset or
# run pip's scikit-build-core build. Sets ccache as the C, C++ and CUDA compiler launcher (CMake
# reads CMAKE_<LANG>_COMPILER_LAUNCHER from the environment when it configures a new build folder)
# with its cache outside the clone, in ${LEANATTN_CACHE:-$HOME/.cache/leanattn}/ccache (or
# $CCACHE_DIR if set), so that a fresh clone in another folder, CI's, hits what earlier builds on
# the machine compiled:
#   CCACHE_BASEDIR     the clone's root: paths inside it are hashed relative to it
#   CCACHE_NOHASHDIR   the build folder's absolute path is not hashed for -g builds (asan, tsan,
#                      fuzz: RelWithDebInfo); their debug info names the folder that compiled first
#   CCACHE_SLOPPINESS  a fresh clone's files are new: their times do not keep a header from the
#                      direct mode's manifest (contents are still hashed)
# Does nothing where ccache is missing (scripts/install-deps.sh installs it). Only this file
# configures ccache; scripts/test.sh prints its hit rate per stage (ccache_stats below).
# The file is meant to be sourced; `bash scripts/compiler-cache.sh` prints the configuration.
_compiler_cache_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${LEANATTN_CACHE:-$HOME/.cache/leanattn}/ccache}
  export CCACHE_BASEDIR=$_compiler_cache_root
  export CCACHE_NOHASHDIR=true
  export CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi

# ccache_stats: "H hits / C compiles (P%)" since the last `ccache --zero-stats`, or "-" when
# nothing was compiled or ccache is missing.
ccache_stats() {
  command -v ccache >/dev/null || { echo "-"; return; }
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hit += $2 }
    $1 == "cache_miss" { miss += $2 }
    END {
      n = hit + miss
      if (n == 0) print "-"; else printf "%d/%d (%d%%)\n", hit, n, 100 * hit / n
    }'
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  env | grep -E '^(CCACHE_|CMAKE_.*_LAUNCHER)' | sort
  command -v ccache >/dev/null && ccache --show-stats | head -12
fi
