# shellcheck shell=bash
# Helpers shared by scripts/fixtures-*.sh; sourced, not run.
#
# The fixtures are real Windows programs that hookscope's tests trace. Each
# scripts/fixtures-NAME.sh builds one of them into build/fixtures/NAME/ and
# can be run on its own; tests/fixtures.mk calls them from `make fixtures`
# only when an output is missing or older than its inputs. Outputs are
# written under a temporary name and renamed at the end, so a failed or
# interrupted build never leaves a half-made fixture that make would take
# for finished.
#
# Environment (all optional):
#   FIX_ARCH    i686: build the fixture for 32-bit x86 with the i686
#               toolchain into build/fixtures32/ (default: x86-64 into
#               build/fixtures/); sets the defaults of the four below
#   FIX_CC      C compiler, win32 thread model  (x86_64-w64-mingw32-gcc-win32)
#   FIX_CXX     C++ compiler, posix thread model (x86_64-w64-mingw32-g++-posix)
#   FIX_NM      nm for PE files                  (x86_64-w64-mingw32-nm)
#   FIX_JOBS    parallel compiler jobs           (nproc)
#   HOST_CC     native compiler, for generators  (gcc)

set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX_ARCH=${FIX_ARCH:-x86_64}
case "$FIX_ARCH" in
    x86_64) fix_suffix= ;;
    i686)   fix_suffix=32 ;;
    *) echo "fixtures: FIX_ARCH must be x86_64 or i686, not '$FIX_ARCH'" >&2; exit 1 ;;
esac
# shellcheck disable=SC2034  # used by the scripts that source this file
fix="$top/build/fixtures$fix_suffix"
srcroot="$top/build/deps/src"       # apt-get source trees, shared with capstone

pick_tool() {   # first of the candidates that exists
    local t
    for t in "$@"; do
        if command -v "$t" >/dev/null 2>&1; then echo "$t"; return 0; fi
    done
    echo "$1"
}

FIX_CC=${FIX_CC:-$(pick_tool "$FIX_ARCH-w64-mingw32-gcc-win32" "$FIX_ARCH-w64-mingw32-gcc")}
FIX_CXX=${FIX_CXX:-$FIX_ARCH-w64-mingw32-g++-posix}
FIX_NM=${FIX_NM:-$FIX_ARCH-w64-mingw32-nm}
FIX_JOBS=${FIX_JOBS:-$(nproc 2>/dev/null || echo 2)}
HOST_CC=${HOST_CC:-gcc}
# the Debian package of FIX_CC, for the hint when it is missing
# shellcheck disable=SC2034  # used by the scripts that source this file
FIX_CC_PACKAGE=gcc-mingw-w64-${FIX_ARCH//_/-}-win32
export NM="$FIX_NM"

fixture_name=${fixture_name:-fixtures}$fix_suffix

log() { echo "fixtures[$fixture_name]: $*" >&2; }
die() { echo "fixtures[$fixture_name]: ERROR: $*" >&2; exit 1; }

need() {        # need TOOL [hint]
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found${2:+ ($2)}; run 'make deps'"
}

# source_dir PKG -> prints the unpacked Debian source tree of PKG, fetching
# it with `apt-get source` into build/deps/src/ first if it is not there.
# Fetching happens in a scratch directory under a lock, so two fixture
# builds running in parallel (make -j) neither collide nor see half a tree.
source_dir() {
    local pkg=$1 dir
    mkdir -p "$srcroot"
    dir=$(find "$srcroot" -mindepth 1 -maxdepth 1 -type d -name "$pkg-[0-9]*" | sort | tail -n 1)
    if [ -z "$dir" ]; then
        need apt-get
        need dpkg-source "package dpkg-dev"
        (
            flock 9
            dir=$(find "$srcroot" -mindepth 1 -maxdepth 1 -type d -name "$pkg-[0-9]*" | sort | tail -n 1)
            if [ -z "$dir" ]; then
                log "fetching Debian's $pkg source package (apt-get source $pkg)"
                local tmp="$srcroot/.fetch-$pkg"
                rm -rf "$tmp"
                mkdir -p "$tmp"
                if ! (cd "$tmp" && apt-get source -qq "$pkg" >"$tmp.log" 2>&1); then
                    cat "$tmp.log" >&2
                    die "apt-get source $pkg failed (is there a deb-src entry? 'make deps' adds one)"
                fi
                mv "$tmp"/* "$srcroot"/
                rm -rf "$tmp" "$tmp.log"
            fi
        ) 9>"$srcroot/.fetch.lock"
        dir=$(find "$srcroot" -mindepth 1 -maxdepth 1 -type d -name "$pkg-[0-9]*" | sort | tail -n 1)
        [ -n "$dir" ] || die "no $pkg source tree in $srcroot after apt-get source"
    fi
    echo "$dir"
}

# compile_all CC OUTDIR SRC... -- FLAGS...   compile each SRC to OUTDIR/NAME.o,
# FIX_JOBS at a time; stops at the first error.
compile_all() {
    local cc=$1 out=$2
    shift 2
    local srcs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do srcs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    mkdir -p "$out"
    # shellcheck disable=SC2016  # the inner script expands its own arguments
    printf '%s\n' "${srcs[@]}" |
        xargs -P "$FIX_JOBS" -I{} bash -c \
            'cc=$1; out=$2; src=$3; shift 3; b=${src##*/}; exec "$cc" "$@" -c "$src" -o "$out/${b%.*}.o"' \
            _ "$cc" "$out" {} "$@" ||
        die "compilation failed (see above)"
}

# cyg_runtime WORK: the counting runtime of the -finstrument-functions
# twins (tests/support/cyg_profile.c), compiled to WORK/cyg_profile.o.
cyg_runtime() {
    "$FIX_CC" -std=gnu11 -O2 -gdwarf-4 -Wall -Wextra -c "$top/tests/support/cyg_profile.c" -o "$1/cyg_profile.o"
}

# link_twins WORK OUT PLAIN INSTR: link WORK/plain/*.o into PLAIN.exe and
# WORK/instr/*.o with the counting runtime into INSTR.exe (static), check
# that the two have the same functions (tests/support/funcset.py), and
# install both into OUT.
link_twins() {
    local work=$1 out=$2 plain=$3 instr=$4
    "$FIX_CC" -static -o "$work/$plain.exe" "$work"/plain/*.o
    "$FIX_CC" -static -o "$work/$instr.exe" "$work"/instr/*.o "$work/cyg_profile.o"
    python3 "$top/tests/support/funcset.py" --runtime "$work/cyg_profile.o" \
        "$work/$plain.exe" "$work/$instr.exe" ||
        die "$plain.exe and $instr.exe do not have the same functions - see above"
    install_atomic "$work/$plain.exe" "$out/$plain.exe"
    install_atomic "$work/$instr.exe" "$out/$instr.exe"
}

# install_atomic TMP FINAL: rename a finished output into place.
install_atomic() {
    mv -f "$1" "$2"
}

# timer: `t0=$(now)` ... `log "took $(since "$t0")"`
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
