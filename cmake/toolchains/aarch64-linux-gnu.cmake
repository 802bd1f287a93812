# Cross build for 64-bit Arm Linux on an x86-64 Debian host (the "aarch64" preset): Debian's cross
# compiler (g++-aarch64-linux-gnu) and the arm64 libraries of Debian's multiarch packages
# (dpkg --add-architecture arm64; libhwy-dev:arm64, libgtest-dev:arm64, libfmt-dev:arm64), found
# under /usr/lib/aarch64-linux-gnu. Programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR:
# CTest and GoogleTest's discovery start every test binary through it); scripts/test-arm64.sh
# picks qemu's CPU (NEON, SVE, SVE2, vector lengths) per run. scripts/install-deps.sh arm64
# installs all of it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and CMake packages of the target only; programs (ninja, qemu) of the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The CPU qemu emulates by default: every Arm feature qemu 7.2 has (SVE2 included, at its default
# vector length of 512 bits); LEANATTN_QEMU_CPU overrides it per run.
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../../scripts/qemu-aarch64.sh)
