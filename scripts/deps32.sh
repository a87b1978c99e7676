#!/usr/bin/env bash
# What 32-bit (i386, WOW64) targets need under Wine, on Debian 12; run by
# scripts/deps.sh, safe to re-run, and never fatal to the 64-bit side:
#
#   - the i686 mingw-w64 toolchain (C and C++, win32 and posix thread
#     models, like the x86-64 one)
#   - Debian's i386 multiarch and Wine's 32-bit side (wine32:i386)
#   - capstone for 32-bit Windows, cross-built like the 64-bit one, into
#     build/deps32/capstone-win/ (scripts/capstone32.sh), for the 32-bit
#     agent
#   - at the end, both of Wine's loaders checked in a fresh prefix: a 64-bit
#     and a 32-bit program (scripts/bitness.c) each run and print their
#     bitness
#
# Multiarch needs one version of each Multi-Arch: same library for both
# architectures, and the i386 indexes need not offer the version installed
# for amd64 (here the i386 index of bookworm-security fails to download,
# "Mirror sync in progress?"; a plain `apt-get install wine32:i386` then
# gives up, or removes wine64 and libwine:amd64). scripts/multiarch_pins.py chooses,
# for every library wine32:i386 may need, the version both architectures
# can have (the installed one when the i386 index has it), and the install
# runs with those pins, --no-install-recommends and --no-remove (apt aborts
# rather than remove anything), after a simulation of it succeeded. The
# amd64 packages that change version are listed in build/deps32/wine32.moves.
#
# Once wine32:i386 is installed, `wine` is its 32-bit loader (Debian's
# /usr/bin/wine picks it whenever it is there), which hands 64-bit programs
# to wine64 (measured in a Debian 12 chroot: a 64-bit hello world then
# starts in 136 ms, 59 ms through /usr/lib/wine/wine64 itself). A prefix made before, by wine64 alone, has an empty
# syswow64: from then on every program run there through `wine`, 64-bit
# ones included, fails ("could not load kernel32.dll", exit 53), until the
# 64-bit loader updates the prefix (its .update-timestamp removed, `wine64
# wineboot -u`). So Wine's 32-bit side is installed only when no such
# prefix is in use here, other than the one this script updates:
# ${WINEPREFIX:-~/.wine}; with HS_WINE32_UPDATE_PREFIXES=1 it is installed
# anyway and every prefix found (~/.wine*) is updated (the programs running
# in a prefix are ended first: under its running wineserver the update
# fails; a prefix grows from about 0.7 GB to 1.3 GB).
#
# build/deps32/status holds "ready", or the one line that says why 32-bit
# targets cannot run here (printed too; the 32-bit tests skip with it). The
# script fails only when the 64-bit loader fails its check.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/deps32"
status="$out/status"
mkdir -p "$out"
rm -f "$status"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wine64=/usr/lib/wine/wine64
prefix="${WINEPREFIX:-$HOME/.wine}"

reason=""
added_i386=""
unavailable() {
    reason="$*"
    echo "deps: 32-bit targets unavailable: $reason"
}

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# A prefix Wine made without its 32-bit side: a 64-bit prefix (it has a
# syswow64 folder) with no kernel32.dll there. (Not read from system.reg:
# the wineserver of a prefix in use writes it only now and then.)
no_wow64() {
    [ -d "$1/drive_c/windows/syswow64" ] && [ ! -f "$1/drive_c/windows/syswow64/kernel32.dll" ]
}

# Have the 64-bit loader update a prefix (it fills syswow64 once Wine's
# 32-bit side is there; the 32-bit loader cannot). Not under a running
# wineserver of the prefix (the update then leaves syswow64 empty): the
# programs of the prefix are ended first.
update_prefix() {
    WINEPREFIX="$1" wineserver -k </dev/null >/dev/null 2>&1
    rm -f "$1/.update-timestamp"
    WINEPREFIX="$1" "$wine64" wineboot -u </dev/null >/dev/null 2>&1
    WINEPREFIX="$1" wineserver -w </dev/null >/dev/null 2>&1
    no_wow64 "$1" && { echo "deps: could not update the Wine prefix $1"; return 1; }
    echo "deps: updated the Wine prefix $1 for 32-bit programs"
}

# --- the i686 toolchain (amd64 packages: no multiarch question) -------------
tools=(gcc-mingw-w64-i686-win32 g++-mingw-w64-i686-win32
       gcc-mingw-w64-i686-posix g++-mingw-w64-i686-posix
       binutils-mingw-w64-i686 mingw-w64-i686-dev)
missing=()
for p in "${tools[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    $SUDO apt-get install -y -qq --no-remove --no-install-recommends "${missing[@]}" >"$out/tools.log" 2>&1 ||
        unavailable "apt-get install of the i686 toolchain failed: $(grep -m1 '^E:' "$out/tools.log")"
fi

# --- Wine's 32-bit side -----------------------------------------------------
# Installed by default (HS_WINE32=0 make deps leaves it out). On Debian 12
# today it moves amd64 packages, security updates among them, to the
# versions the i386 index offers (the bookworm-security i386 index fails to
# download: listed in build/deps32/wine32.moves first), `wine` becomes the
# 32-bit loader (so hookscope and its tests run 64-bit programs through
# /usr/lib/wine/wine64: scripts/winekeeper.py, ./hookscope), and every prefix
# made without it must be updated (below). The whole 64-bit suite runs
# green with it (the closing notes of 2026-11-26).
if [ -z "$reason" ] && ! installed wine32:i386 && [ "${HS_WINE32:-1}" = 0 ]; then
    unavailable "Wine's 32-bit side (wine32:i386) is not installed: HS_WINE32=0 left it out (make deps without it installs it; it moves amd64 packages to the versions Debian's i386 index offers, and updates the Wine prefixes made without it)"
fi
if [ -z "$reason" ] && ! installed wine32:i386; then
    others=()
    for p in "$HOME"/.wine "$HOME"/.wine-*; do
        [ "$p" != "$prefix" ] && no_wow64 "$p" && others+=("$p")
    done
    if [ ${#others[@]} -gt 0 ] && [ "${HS_WINE32_UPDATE_PREFIXES:-}" != 1 ]; then
        unavailable "wine32:i386 is not installed: ${#others[@]} Wine prefixes here (${others[*]:0:3}) were made without it, and once it is installed no program runs in them through \`wine\` until each is updated (HS_WINE32_UPDATE_PREFIXES=1 make deps: install it and update them)"
    fi
fi
if [ -z "$reason" ] && ! installed wine32:i386; then
    if ! dpkg --print-foreign-architectures | grep -qx i386; then
        echo "deps: adding the i386 architecture"
        $SUDO dpkg --add-architecture i386 && added_i386=1 || unavailable "dpkg --add-architecture i386 failed"
    fi
fi
if [ -z "$reason" ] && ! installed wine32:i386; then
    # an index that fails to download is left out (apt says which): the
    # pins below work with the indexes that came
    $SUDO apt-get update -qq >"$out/update.log" 2>&1 ||
        echo "deps: apt-get update: $(grep -m1 '^E:' "$out/update.log" | cut -c1-200)"
    if ! python3 "$top/scripts/multiarch_pins.py" wine32:i386 "$out/wine32.pref" >"$out/wine32.moves"; then
        unavailable "scripts/multiarch_pins.py failed"
    elif grep -q '^none ' "$out/wine32.moves"; then
        unavailable "no version of $(grep -m1 '^none ' "$out/wine32.moves" | cut -d' ' -f2) is offered for both amd64 and i386"
    fi
fi
if [ -z "$reason" ] && ! installed wine32:i386; then
    apt32=(apt-get -o Dir::Etc::Preferences="$out/wine32.pref" install -y --no-remove --allow-downgrades
           --no-install-recommends wine32:i386)
    # simulated first: nothing changes unless apt can do all of it
    if ! "${apt32[@]}" -s >"$out/wine32-simulated.log" 2>&1; then
        unavailable "apt would not install wine32:i386 (simulated): $(grep -m1 '^E:' "$out/wine32-simulated.log")"
    else
        moves=$(grep -c '^move ' "$out/wine32.moves")
        echo "deps: installing wine32:i386 ($moves amd64 packages move to the version the i386 index has: build/deps32/wine32.moves)"
        start=$(date +%s)
        if $SUDO "${apt32[@]}" >"$out/wine32-install.log" 2>&1; then
            echo "deps: wine32:i386 installed in $(( $(date +%s) - start )) s"
        else
            unavailable "apt-get install wine32:i386 failed: $(grep -m1 '^E:' "$out/wine32-install.log")"
        fi
    fi
fi
for p in wine64 libwine:amd64; do
    installed "$p" || { echo "deps: $p is not installed: the 64-bit side is broken" >&2; exit 1; }
done
# the architecture added for nothing goes again (its indexes, one of which
# may fail to download, would make every later `apt-get update` fail)
if [ -n "$added_i386" ] && ! installed wine32:i386 && $SUDO dpkg --remove-architecture i386 2>/dev/null; then
    echo "deps: removed the i386 architecture again"
    $SUDO apt-get update -qq >/dev/null 2>&1
fi
if [ -z "$reason" ] && installed wine32:i386; then
    for p in "$prefix" "$HOME"/.wine "$HOME"/.wine-*; do
        if no_wow64 "$p" && { [ "$p" = "$prefix" ] || [ "${HS_WINE32_UPDATE_PREFIXES:-}" = 1 ]; }; then
            update_prefix "$p"
        fi
    done
fi

# --- capstone for 32-bit Windows, as scripts/deps.sh builds the 64-bit one ---
# (for the 32-bit agent, which `make` builds whether Wine can run 32-bit
# programs here or not: it only needs the toolchain)
if command -v i686-w64-mingw32-gcc >/dev/null && ! "$top/scripts/capstone32.sh"; then
    [ -n "$reason" ] || unavailable "the i686 build of capstone failed (build/deps32/capstone-build.log)"
fi

# --- both loaders, in a fresh prefix ----------------------------------------
# (made by whichever loader runs first; the 64-bit program runs first here,
# through `wine` like every run of the tests)
check="$out/check-prefix"
rm -rf "$check"
x86_64-w64-mingw32-gcc -o "$out/bitness64.exe" "$top/scripts/bitness.c" ||
    { echo "deps: cannot build scripts/bitness.c for x86-64" >&2; exit 1; }
got=$(cd "$out" && WINEPREFIX="$check" timeout 300 wine bitness64.exe </dev/null 2>"$out/check64.err" | tr -d '\r')
if [ "$got" != "64-bit" ]; then
    WINEPREFIX="$check" wineserver -k >/dev/null 2>&1
    echo "deps: the 64-bit loader failed in a fresh prefix: \`wine bitness64.exe\` printed: \"$got\" ($(tail -n 1 "$out/check64.err"))" >&2
    exit 1
fi
if [ -z "$reason" ] && ! installed wine32:i386; then
    unavailable "wine32:i386 is not installed"
fi
if [ -z "$reason" ]; then
    if ! i686-w64-mingw32-gcc -o "$out/bitness32.exe" "$top/scripts/bitness.c"; then
        unavailable "cannot build scripts/bitness.c for i686"
    else
        got=$(cd "$out" && WINEPREFIX="$check" timeout 300 wine bitness32.exe </dev/null 2>"$out/check32.err" | tr -d '\r')
        [ "$got" = "32-bit" ] || unavailable "the 32-bit loader failed in a fresh prefix: \`wine bitness32.exe\` printed: \"$got\" ($(tail -n 1 "$out/check32.err"))"
    fi
fi
WINEPREFIX="$check" wineserver -k >/dev/null 2>&1
rm -rf "$check"
if [ -n "$reason" ]; then
    echo "deps: Wine's 64-bit loader checked in a fresh prefix"
    printf '%s\n' "$reason" >"$status"
else
    echo "deps: Wine's 64-bit and 32-bit loaders checked in a fresh prefix: 32-bit targets ready"
    echo ready >"$status"
fi
exit 0
