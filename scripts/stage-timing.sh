#!/usr/bin/env bash
# Where a test stage's seconds go: sourced by scripts/test.sh and the stage scripts it runs.
#   timed build|setup CMD...   runs CMD and adds its seconds to the current stage's build
#                              (compiling, linking, wheels) or setup (installs, venvs) time
# scripts/test.sh names the stage's file in LEANATTN_STAGE_TIMES and reads it after the stage
# (stage_seconds below); what is not build or setup is the stage's run time. Without that variable
# (a script run on its own) `timed` only runs CMD. Returns CMD's exit code.
timed() {
  local kind=$1 t0=$EPOCHREALTIME rc=0
  shift
  "$@" || rc=$?
  if [ -n "${LEANATTN_STAGE_TIMES:-}" ]; then
    awk -v k="$kind" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%s %.1f\n", k, b - a }' \
      >>"$LEANATTN_STAGE_TIMES"
  fi
  return "$rc"
}

# stage_seconds FILE KIND: the seconds recorded in FILE for KIND, rounded.
stage_seconds() {
  awk -v k="$2" '$1 == k { s += $2 } END { printf "%d\n", s + 0.5 }' "$1" 2>/dev/null || echo 0
}
