#!/usr/bin/env bash
# Build capstone for 32-bit Windows (i686, static, x86 only) into
# build/deps32/capstone-win/, as scripts/deps.sh builds the 64-bit one,
# for the 32-bit agent (hookscope-agent32.dll); from the source
# scripts/deps.sh fetched, else Debian's source package. Needs the i686
# mingw-w64 toolchain (scripts/deps32.sh installs it). Safe to re-run:
# does nothing when the library is there. Prints one line and fails when
# it cannot be built.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/deps32"
cs="$out/capstone-win"
[ -f "$cs/lib/capstone.lib" ] && [ -f "$cs/include/capstone/capstone.h" ] && exit 0
command -v i686-w64-mingw32-gcc >/dev/null ||
    { echo "deps: no i686 mingw-w64 toolchain to build capstone for 32-bit Windows with" >&2; exit 1; }
src="$out/src"
mkdir -p "$src"
if ! ls -d "$src"/capstone-*/ >/dev/null 2>&1; then
    if ls -d "$top"/build/deps/src/capstone-*/ >/dev/null 2>&1; then
        cp -a "$(ls -d "$top"/build/deps/src/capstone-*/ | head -n 1)" "$src/"
    else
        (cd "$src" && apt-get source -qq capstone >/dev/null 2>&1) ||
            { echo "deps: apt-get source capstone failed" >&2; exit 1; }
    fi
fi
dir=$(ls -d "$src"/capstone-*/ | head -n 1)
echo "deps: cross-building capstone for i686 in $dir"
make -C "$dir" clean >/dev/null 2>&1 || true
make -C "$dir" -j"$(nproc)" CROSS=i686-w64-mingw32- CAPSTONE_ARCHS=x86 \
    CAPSTONE_STATIC=yes CAPSTONE_SHARED=no CAPSTONE_BUILD_CORE_ONLY=yes \
    CAPSTONE_X86_REDUCE=no >"$out/capstone-build.log" 2>&1 ||
    { echo "deps: the i686 build of capstone failed (build/deps32/capstone-build.log)" >&2; exit 1; }
rm -rf "$cs"
mkdir -p "$cs/lib" "$cs/include/capstone"
cp "$dir/capstone.lib" "$cs/lib/capstone.lib"
cp "$dir"/include/capstone/*.h "$cs/include/capstone/"
