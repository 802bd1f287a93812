#!/usr/bin/env bash
# Installs the Debian packages leanattn needs, only those missing. Called by scripts/main.sh,
# scripts/test.sh and scripts/test-arm64.sh; safe to run again. Groups: build (always), fuzz
# (clang + libFuzzer runtime), python (headers and venv), peers (oneDNN for bench/peers), arm64
# (the cross compiler, Debian's arm64 libraries as multiarch packages, qemu-user: the aarch64
# preset and scripts/test-arm64.sh), vllm (libnuma, which vLLM's _C links). ccache:
# scripts/ccache-launcher.sh.
#   scripts/install-deps.sh [fuzz] [python] [peers] [arm64] [vllm]
set -euo pipefail

packages=(cmake ninja-build g++ make pkg-config git ccache clang-format libgtest-dev libhwy-dev
          libcli11-dev nlohmann-json3-dev libfmt-dev)
for group in "$@"; do
  case "$group" in
    fuzz) packages+=(clang libclang-rt-14-dev) ;;
    python) packages+=(python3-dev python3-venv python3-pip) ;;
    peers) packages+=(libdnnl-dev) ;;
    arm64) packages+=(g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64 libgtest-dev:arm64
                      libfmt-dev:arm64) ;;
    vllm) packages+=(libnuma1) ;;
    *) echo "install-deps.sh: unknown group '$group' (fuzz, python, peers, arm64, vllm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps.sh: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# The arm64 packages need dpkg to know the architecture (multiarch).
if [[ " ${missing[*]} " == *:arm64* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
