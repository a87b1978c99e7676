#!/usr/bin/env bash
# Install and build everything hookscope needs on Debian 12; safe to re-run.
#
#   - mingw-w64 C/C++ cross compilers (win32 and posix thread models), wine
#   - libcapstone-dev (native, for the engine's unit tests) and python3
#   - gcc-multilib and capstone built from the same Debian source for -m32
#     (x86 only, static, into build/deps/capstone-m32/): the engine's
#     32-bit mode is tested natively as a 32-bit Linux program
#   - zlib: mingw's (libz-mingw-w64-dev, linked statically into
#     hookscope.exe for profile.pb.gz) and the host's (zlib1g-dev, for the
#     native unit tests of the same writer)
#   - capstone for Windows: Debian's capstone source package, cross-built
#     with only the x86 architecture into build/deps/capstone-win/
#   - the programs the tests open hookscope's outputs with: chromium
#     (flamegraph.svg, headless), valgrind (callgrind_annotate),
#     python3-jsonschema, golang-go (`go tool pprof`, profile.pb.gz), and
#     the speedscope npm package (its file-format schema) in build/npm/
#   - what 32-bit targets need (scripts/deps32.sh: i386 multiarch, Wine's
#     32-bit side, the i686 toolchain, capstone for i686 in build/deps32/);
#     never fatal: when it cannot be had, one line says why and the 32-bit
#     tests skip with that reason
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
deps="$top/build/deps"
mkdir -p "$deps"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

packages=(
    make gcc dpkg-dev python3
    gcc-mingw-w64-x86-64-win32 g++-mingw-w64-x86-64-win32
    gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix
    binutils-mingw-w64-x86-64 mingw-w64-x86-64-dev
    wine wine64 libcapstone-dev gcc-multilib
    libz-mingw-w64-dev zlib1g-dev
    chromium valgrind python3-jsonschema golang-go
)
# npm, for the speedscope package (Debian's, unless a node is there already)
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
# packages the test fixtures need (one per line, # comments allowed)
if [ -f "$top/scripts/fixture-packages.txt" ]; then
    while read -r p _; do
        case "$p" in ""|\#*) ;; *) packages+=("$p") ;; esac
    done < "$top/scripts/fixture-packages.txt"
fi

# An index that fails to download (apt names it; "Mirror sync in progress?"
# happens to one architecture of one suite) leaves its packages out, not
# the install of the others.
apt_update() {
    $SUDO apt-get update -qq || echo "deps: apt-get update failed for an index (above); going on with the others"
}

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_update
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Source packages need a deb-src entry.
if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deps: adding a deb-src entry for bookworm"
    $SUDO tee /etc/apt/sources.list.d/hookscope-deb-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt_update
fi

# Debian's capstone source package, fetched once into build/deps/src/;
# prints its folder.
capstone_source() {
    local src="$deps/src"
    mkdir -p "$src"
    if ! ls -d "$src"/capstone-*/ >/dev/null 2>&1; then
        echo "deps: fetching Debian's capstone source package" >&2
        (cd "$src" && apt-get source -qq capstone >/dev/null 2>&1) || {
            echo "deps: apt-get source capstone failed" >&2; exit 1; }
    fi
    ls -d "$src"/capstone-*/ | head -n 1
}

# capstone for Windows, static, x86 only.
cs="$deps/capstone-win"
if [ ! -f "$cs/lib/capstone.lib" ] || [ ! -f "$cs/include/capstone/capstone.h" ]; then
    dir=$(capstone_source)
    echo "deps: cross-building capstone in $dir"
    make -C "$dir" clean >/dev/null 2>&1 || true
    make -C "$dir" -j"$(nproc)" CROSS=x86_64-w64-mingw32- CAPSTONE_ARCHS=x86 \
        CAPSTONE_STATIC=yes CAPSTONE_SHARED=no CAPSTONE_BUILD_CORE_ONLY=yes \
        CAPSTONE_X86_REDUCE=no >"$deps/capstone-build.log" 2>&1 || {
            tail -20 "$deps/capstone-build.log" >&2; exit 1; }
    rm -rf "$cs"
    mkdir -p "$cs/lib" "$cs/include/capstone"
    cp "$dir/capstone.lib" "$cs/lib/capstone.lib"
    cp "$dir"/include/capstone/*.h "$cs/include/capstone/"
fi

# capstone for the native 32-bit (-m32) unit build, from the same source,
# built in a copy of it (the tree above holds the Windows objects)
cs32="$deps/capstone-m32"
if [ ! -f "$cs32/lib/libcapstone.a" ] || [ ! -f "$cs32/include/capstone/capstone.h" ]; then
    dir=$(capstone_source)
    echo "deps: building capstone for -m32 from $dir"
    rm -rf "$cs32"
    mkdir -p "$cs32/lib" "$cs32/include/capstone"
    cp -a "$dir" "$cs32/src"
    make -C "$cs32/src" clean >/dev/null 2>&1 || true
    make -C "$cs32/src" -j"$(nproc)" CC="gcc -m32" CAPSTONE_ARCHS=x86 \
        CAPSTONE_STATIC=yes CAPSTONE_SHARED=no CAPSTONE_BUILD_CORE_ONLY=yes \
        CAPSTONE_X86_REDUCE=no >"$deps/capstone-m32-build.log" 2>&1 || {
            tail -20 "$deps/capstone-m32-build.log" >&2; exit 1; }
    cp "$cs32/src/libcapstone.a" "$cs32/lib/libcapstone.a"
    cp "$cs32/src"/include/capstone/*.h "$cs32/include/capstone/"
    rm -rf "$cs32/src"
fi

# speedscope's file-format schema, pinned (tests validate against it)
SPEEDSCOPE_VERSION=1.25.0
ss="$top/build/npm/node_modules/speedscope/package.json"
if ! grep -qs "\"version\": \"$SPEEDSCOPE_VERSION\"" "$ss"; then
    echo "deps: installing speedscope@$SPEEDSCOPE_VERSION into build/npm"
    mkdir -p "$top/build/npm"
    npm install --prefix "$top/build/npm" --no-audit --no-fund --loglevel=error \
        "speedscope@$SPEEDSCOPE_VERSION" </dev/null >/dev/null
fi

# Before the prefix is made: made once Wine's 32-bit side is there, it
# serves both loaders.
"$top/scripts/deps32.sh"

# A wine prefix, created once (the first start takes seconds).
if [ ! -f "${WINEPREFIX:-$HOME/.wine}/system.reg" ]; then
    echo "deps: creating the wine prefix"
    WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" wineboot -i </dev/null >/dev/null 2>&1 || true
fi
# No crash dialog: it starts explorer.exe /desktop, which keeps the crashed
# program's stdout open (scripts/winekeeper.py sets it for every test run too).
WINEDEBUG=-all wine reg add 'HKCU\Software\Wine\WineDbg' /v ShowCrashDialog /t REG_DWORD /d 0 /f \
    </dev/null >/dev/null 2>&1 || true

echo "deps: ready"
