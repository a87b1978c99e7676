#!/usr/bin/env bash
# Fixture "sqlite": the sqlite3 command-line shell as one static Windows exe.
#
#   build/fixtures/sqlite/sqlite3.exe
#
# Source: Debian's sqlite3 source package (apt-get source sqlite3, Debian's
# patches applied), fetched into build/deps/src/ if missing. The Debian
# source is the full source tree, not the amalgamation: there is no
# sqlite3.c. So the amalgamation is generated first with sqlite's own tools,
# natively: an out-of-tree `configure --disable-tcl` with the host gcc and
# `make sqlite3.c shell.c`, which builds lemon, mkkeywordhash etc. and runs
# tool/mksqlite3c.tcl and tool/mkshellc.tcl with tclsh (Debian package tcl).
# The generated sqlite3.c/shell.c are kept in build/fixtures/sqlite/amalgamation/
# and reused. Then both files are cross-compiled with mingw-w64 gcc (win32
# thread model), -O2 -gdwarf-4, default sqlite options, no readline, and
# linked with -static. Symbols are kept. (-O2 on the 8.6 MB sqlite3.c takes
# ~30 s on one core; shell.c compiles in parallel.)
#
# Twice more, for the counts: sqlite3-cp.exe and sqlite3-instr.exe, built
# with the count-preserving flags of the lua fixture (fixtures-lua.sh says
# why each is there) and -fno-ipa-icf (identical functions folded into one
# body with two names, e.g. fileStat and fileLinkStat, in the plain build
# only: the twin's are not identical), the second with -finstrument-functions and
# tests/support/cyg_profile.c: its counts are the truth the first one's
# hooked counts are held against (tests/test_real_programs.py). The two
# must have the same functions (funcset.py).
#
# Run: cwd build/fixtures/sqlite, `sqlite3.exe :memory: < workload.sql`
# (stdin redirected from the file; works under Wine, the shell sees a non-
# console stdin and runs in batch mode). `sqlite3.exe :memory: ".read
# workload.sql"` gives the same bytes. Exit code 0.
fixture_name=sqlite
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CC" "package $FIX_CC_PACKAGE"
need "$HOST_CC" "package gcc"
need make
need python3
t0=$(now)

out="$fix/sqlite"
amal="$out/amalgamation"
mkdir -p "$out"

if [ ! -s "$amal/sqlite3.c" ] || [ ! -s "$amal/shell.c" ] || [ ! -s "$amal/sqlite3.h" ]; then
    src=$(source_dir sqlite3)
    need tclsh "package tcl"
    gen="$out/.gen"
    rm -rf "$gen"
    mkdir -p "$gen"
    log "generating the amalgamation from $src"
    (
        cd "$gen"
        CC="$HOST_CC" CFLAGS=-O1 "$src/configure" --disable-tcl --disable-readline \
            --disable-editline >configure.log 2>&1 ||
            { tail -n 30 configure.log >&2; exit 1; }
        make -j"$FIX_JOBS" sqlite3.c shell.c sqlite3.h >make.log 2>&1 ||
            { tail -n 30 make.log >&2; exit 1; }
    ) || die "generating sqlite3.c failed (logs in $gen)"
    rm -rf "$amal.tmp"
    mkdir -p "$amal.tmp"
    cp "$gen/sqlite3.c" "$gen/sqlite3.h" "$gen/sqlite3ext.h" "$gen/shell.c" "$amal.tmp/"
    rm -rf "$amal"
    mv "$amal.tmp" "$amal"
    rm -rf "$gen"
    log "amalgamation ready ($(wc -l <"$amal/sqlite3.c") lines) after $(since "$t0")"
fi

work="$out/.work"
rm -rf "$work"
mkdir -p "$work"
log "compiling sqlite3.c and shell.c with $FIX_CC -O2"
compile_all "$FIX_CC" "$work" "$amal/sqlite3.c" "$amal/shell.c" -- \
    -O2 -gdwarf-4 -I"$amal" -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_MATH_FUNCTIONS
"$FIX_CC" -static -o "$work/sqlite3.exe" "$work/shell.o" "$work/sqlite3.o"
install_atomic "$work/sqlite3.exe" "$out/sqlite3.exe"

cp_flags=(
    -O2 -gdwarf-4 -fno-inline -fno-ipa-cp -fno-ipa-sra -fno-ipa-pure-const -fno-ipa-modref -fno-ipa-icf
    -fno-optimize-sibling-calls -I"$amal" -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_MATH_FUNCTIONS
)
log "compiling the count-preserving pair sqlite3-cp.exe and sqlite3-instr.exe"
pids=()
compile_all "$FIX_CC" "$work/plain" "$amal/sqlite3.c" "$amal/shell.c" -- "${cp_flags[@]}" & pids+=($!)
compile_all "$FIX_CC" "$work/instr" "$amal/sqlite3.c" "$amal/shell.c" -- "${cp_flags[@]}" \
    -finstrument-functions & pids+=($!)
cyg_runtime "$work"
for p in "${pids[@]}"; do
    wait "$p" || die "compilation failed"
done
link_twins "$work" "$out" sqlite3-cp sqlite3-instr
rm -rf "$work"
log "built $out/sqlite3.exe, sqlite3-cp.exe and sqlite3-instr.exe in $(since "$t0")"
