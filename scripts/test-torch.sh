#!/usr/bin/env bash
# The torch-based tests (tests/python/torch: torch tensors, the torch custom op and
# torch.compile, transformers models, torch.distributed on Gloo), in their own venv: PyTorch
# from the registry is ~5 GB with its CUDA libraries, so the venv lives outside the clone
# (scripts/torch-venv.sh makes it once per requirements). scripts/test-python.sh installs the
# package's wheel into it (the one build of scripts/python-wheel.sh, shared with the python
# stage), then runs pytest on tests/python/torch. With LEANATTN_REQUIRE_TORCH=1 (set here) the
# tests fail, rather than skip, where torch is missing.
#   scripts/test-torch.sh [pytest arguments...]   (arguments replace the default test selection)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stage-timing.sh
timed setup scripts/install-deps.sh python

venv=$(timed setup scripts/torch-venv.sh)
"$venv/bin/python" -c 'import torch, transformers; print("== torch", torch.__version__,
      "transformers", transformers.__version__)'

[ $# -eq 0 ] && set -- tests/python/torch
export LEANATTN_REQUIRE_TORCH=1
# torch.compile's code caches in a folder of this run: Inductor's default, /tmp/torchinductor_$USER,
# outlives runs, and its keys do not cover a custom op's schema, so a graph compiled against an
# earlier schema of torch.ops.leanattn was replayed (seen: a positional call of the old schema).
inductor=$(mktemp -d)
trap 'rm -rf "$inductor"' EXIT
export TORCHINDUCTOR_CACHE_DIR=$inductor
LEANATTN_VENV="$venv" scripts/test-python.sh "$@"
