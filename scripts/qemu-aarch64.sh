#!/usr/bin/env bash
# Runs an aarch64 program under qemu-user: the aarch64 preset's CMAKE_CROSSCOMPILING_EMULATOR
# (cmake/toolchains/aarch64-linux-gnu.cmake), so CTest and GoogleTest's discovery start every test
# binary through it. The emulated CPU is $LEANATTN_QEMU_CPU (default "max": NEON, SVE and SVE2 at
# 512 bits), e.g. "max,sve-default-vector-length=32" for 256-bit SVE, "a64fx" for SVE without
# SVE2, "neoverse-n1" for NEON only (scripts/test-arm64.sh runs each).
#   scripts/qemu-aarch64.sh PROGRAM ARGS...
exec qemu-aarch64 -cpu "${LEANATTN_QEMU_CPU:-max}" "$@"
