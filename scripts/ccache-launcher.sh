#!/usr/bin/env bash
# The compiler launcher of every leanattn build: the CMake presets (CMakePresets.json, "base") and
# the scripts' pip builds (scripts/compiler-cache.sh) start each C, C++ and CUDA compile as
#   scripts/ccache-launcher.sh COMPILER ARGS...
# which runs it through ccache when ccache is installed, else runs it as it is. The one place where
# ccache is configured: its cache outside the clone, in ${LEANATTN_CACHE:-$HOME/.cache/leanattn}/
# ccache (or $CCACHE_DIR if set), so that a fresh clone in another folder (CI's) hits what the
# machine's earlier builds, a developer's included, compiled:
#   CCACHE_BASEDIR     this clone's root: paths inside it are hashed relative to it
#   CCACHE_NOHASHDIR   the build folder's absolute path is not hashed for -g builds (asan, tsan,
#                      fuzz: RelWithDebInfo); their debug info names the folder that compiled first
#   CCACHE_SLOPPINESS  a fresh clone's files are new: their times do not keep a header out of the
#                      direct mode's manifest (contents are still hashed)
#   scripts/ccache-launcher.sh --ccache ARGS...   runs ccache itself with this configuration
#                                                 (--print-stats, --zero-stats, --show-config)
root=${BASH_SOURCE[0]%/scripts/*}
[ "$root" = "${BASH_SOURCE[0]}" ] && root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${LEANATTN_CACHE:-$HOME/.cache/leanattn}/ccache}
  export CCACHE_BASEDIR=$root
  export CCACHE_NOHASHDIR=true
  export CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
  [ "${1:-}" = --ccache ] && shift
  exec ccache "$@"
fi
[ "${1:-}" = --ccache ] && { echo "ccache-launcher.sh: ccache is not installed" >&2; exit 1; }
exec "$@"
