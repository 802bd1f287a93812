#!/usr/bin/env bash
# Prepares .carry/ (git-ignored): the build dependencies the GPU device machine lacks, copied from
# this Debian machine's packages so that scripts/device-check.sh can build there with no network
# and no dev packages. Laid out as a relocatable prefix:
#   .carry/usr/include/{gtest,gmock,CLI,nlohmann,fmt,hwy}
#   .carry/usr/lib/<multiarch>/{libgtest,libgtest_main,libgmock,libgmock_main}.a
#   .carry/usr/lib/<multiarch>/lib{hwy,hwy_contrib,hwy_test,fmt}.so*   (static .a if present)
#   .carry/usr/lib/<multiarch>/cmake/{GTest,hwy,fmt}, .carry/usr/share/cmake/{CLI11,nlohmann_json}
#   .carry/usr/src/googletest   (sources: device-check.sh rebuilds GoogleTest from them if the
#                                prebuilt archives do not link there)
#   .carry/MANIFEST             (what was copied, from which package version)
# Installs the packages first if they are missing (scripts/install-deps.sh). Then, unless
# --no-check, proves the carry is complete: configures and builds the whole project here against
# the carried prefix only and checks, from the compiler's dependency files and the link lines,
# that no header or library of these packages came from /usr.
#   scripts/prepare-device-carry.sh [--no-check]
#   scripts/prepare-device-carry.sh --cmake-args <carry-dir>   (prints the CMake arguments that
#                                   point find_package at a carry, one per line; device-check.sh)
set -euo pipefail
arch=$(gcc -print-multiarch 2>/dev/null || true)
[ -n "$arch" ] || arch=x86_64-linux-gnu

cmake_args() {  # cmake_args <carry-dir>
  local usr=$1/usr
  echo "-DCMAKE_PREFIX_PATH=$usr"
  echo "-DGTest_DIR=$usr/lib/$arch/cmake/GTest"
  echo "-DHWY_DIR=$usr/lib/$arch/cmake/hwy"
  echo "-Dfmt_DIR=$usr/lib/$arch/cmake/fmt"
  echo "-DCLI11_DIR=$usr/share/cmake/CLI11"
  echo "-Dnlohmann_json_DIR=$usr/share/cmake/nlohmann_json"
}

if [ "${1:-}" = "--cmake-args" ]; then
  cmake_args "${2:?usage: prepare-device-carry.sh --cmake-args <carry-dir>}"
  exit 0
fi

cd "$(dirname "$0")/.."
root=$PWD
carry=$root/.carry
check=1
[ "${1:-}" = "--no-check" ] && check=0

scripts/install-deps.sh

rm -rf "$carry"
mkdir -p "$carry/usr/include" "$carry/usr/lib/$arch/cmake" "$carry/usr/share/cmake" "$carry/usr/src"

copy() {  # copy <source> <destination-dir>, preserving symlinks
  [ -e "$1" ] || { echo "prepare-device-carry.sh: missing $1" >&2; exit 1; }
  cp -a "$1" "$2/"
}

for h in gtest gmock CLI nlohmann fmt hwy; do copy "/usr/include/$h" "$carry/usr/include"; done
for lib in gtest gtest_main gmock gmock_main; do copy "/usr/lib/$arch/lib$lib.a" "$carry/usr/lib/$arch"; done
# Highway and fmt: static archives where the distribution has them, else the shared libraries
# (the executables built there find them through the build tree's RPATH).
for lib in hwy hwy_contrib hwy_test fmt; do
  if [ -e "/usr/lib/$arch/lib$lib.a" ]; then
    copy "/usr/lib/$arch/lib$lib.a" "$carry/usr/lib/$arch"
  fi
  for so in /usr/lib/"$arch"/lib"$lib".so*; do copy "$so" "$carry/usr/lib/$arch"; done
done
for cfg in GTest hwy fmt; do copy "/usr/lib/$arch/cmake/$cfg" "$carry/usr/lib/$arch/cmake"; done
for cfg in CLI11 nlohmann_json; do copy "/usr/share/cmake/$cfg" "$carry/usr/share/cmake"; done
copy /usr/src/googletest "$carry/usr/src"

{
  echo "# .carry: made by scripts/prepare-device-carry.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(gcc --version | head -1)"
  for p in libgtest-dev libgmock-dev googletest libhwy-dev libcli11-dev nlohmann-json3-dev libfmt-dev; do
    dpkg-query -W -f='${Package} ${Version}\n' "$p" 2>/dev/null || true
  done
  echo "# files"
  (cd "$carry" && find . -type f -o -type l | sort)
} >"$carry/MANIFEST"
echo "prepare-device-carry.sh: $(du -sh "$carry" | cut -f1) in $carry"

[ "$check" -eq 1 ] || exit 0

# Dry run: the whole project (CPU and CUDA parts) against the carried prefix only.
build=$root/build/carry-check
rm -rf "$build"
mkdir -p "$root/build"  # a fresh clone has none; the logs sit beside the build directory
echo "prepare-device-carry.sh: building the project against .carry only ($build)"
mapfile -t carry_args < <(cmake_args "$carry")
# One kernel configuration keeps this quick; the device script builds them all.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLEANATTN_CUDA=AUTO \
  -DLEANATTN_CUDA_HEAD_DIMS=128 -DLEANATTN_CUDA_DTYPES=bf16 -DCMAKE_CUDA_ARCHITECTURES=90 \
  "${carry_args[@]}" >"$build.configure.log"
cmake --build "$build" -j "${JOBS:-2}" >"$build.build.log" || { tail -30 "$build.build.log" >&2; exit 1; }

# Every header of the carried packages must come from .carry, never from /usr/include.
leaks=$(cd "$build" && ninja -t deps | grep -E "^ +/usr/include/(gtest|gmock|CLI|nlohmann|fmt|hwy)/" |
        sort -u | head -5 || true)
if [ -n "$leaks" ]; then
  echo "prepare-device-carry.sh: headers read from /usr instead of .carry:" >&2
  echo "$leaks" >&2
  exit 1
fi
if grep -E "(^|[ :;=])/usr/lib/$arch/lib(gtest|gmock|hwy|fmt)" "$build/build.ninja" >/dev/null; then
  echo "prepare-device-carry.sh: libraries linked from /usr instead of .carry" >&2
  exit 1
fi
# The shared libraries resolve to the carried copies at run time (build-tree RPATH).
for so in libhwy libfmt; do
  for exe in "$build/tests/cpu_tests" "$build/apps/leanattn/leanattn"; do
    where=$(ldd "$exe" | awk -v so="$so" '$1 ~ "^"so"\\." {print $3}')
    if [ -n "$where" ] && [[ "$where" != "$carry"/* ]]; then
      echo "prepare-device-carry.sh: $exe loads $so from $where, not from .carry" >&2
      exit 1
    fi
  done
done
carried=$(cd "$build" && ninja -t deps | grep -c "\.carry/usr/include" || true)
ctest --test-dir "$build" -R "^(KernelEmulation|PlanImage|HeadDims/WarpMath|KernelLookup|SimdTargets)" \
  --output-on-failure >"$build.test.log" || { tail -30 "$build.test.log" >&2; exit 1; }
grep -q "tests passed" "$build.test.log" || { echo "no test ran" >&2; exit 1; }
echo "prepare-device-carry.sh: complete. The build here used only .carry ($carried carried header" \
     "reads, no /usr headers or libraries of the carried packages); sample tests pass."
