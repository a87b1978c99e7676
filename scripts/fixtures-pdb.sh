#!/usr/bin/env bash
# Fixture "pdb": programs whose functions are known only from a PDB, the
# way MSVC users ship theirs, and the same PDB in every place a symbol
# search looks. Built into build/fixtures/pdb/.
#
# The MSVC-like recipe (clang + lld for x86_64-w64-mingw32):
#   clang --target=x86_64-w64-mingw32 -g -gcodeview -fuse-ld=lld
#         -Wl,--pdb=X.pdb -Wl,--Xlink=-pdbaltpath:<RSDS path> -s -static
#         -L<mingw's libgcc folder>
# then llvm-objcopy --remove-section='.debug_*' (mingw's CRT objects bring
# DWARF sections) and clear 0x20c in the COFF characteristics. GNU
# strip/objcopy must not be the last step: they set 0x200
# (IMAGE_FILE_DEBUG_STRIPPED), and Wine's DbgHelp then ignores the PDB;
# llvm-objcopy leaves the bits alone (checked: 0x0022 before and after).
# -s: no COFF symbol table. lld writes a fresh GUID (a hash of the image)
# and age 1 on every link.
#
# Programs (sources in tests/fixtures/pdb/, expected counts in their
# headers):
#   pdbc.exe / pdbc.pdb           C: static, global, leaf (no .pdata),
#                                 varargs, qsort callback, recursion
#   pdbc-instr.exe / .pdb         the same with -finstrument-functions and
#                                 tests/support/cyg_profile.c (ground truth;
#                                 names from its PDB: cyg_pdbnames.py)
#   pdbcxx.exe / .pdb             C++: virtual, templates, lambdas, overloads
#   pdbcxx-instr.exe / .pdb       its ground truth
#   pdbmsvc.exe / .pdb            C++ for x86_64-pc-windows-msvc (lld-link,
#                                 no CRT): MSVC-decorated publics
#   pdbc32.exe / .pdb             pdbc.c for i686 (32-bit), the same recipe
#                                 (--target=i686-w64-mingw32): publics with
#                                 C decoration (_f)
#   fpo32.exe / .pdb              fpo32.c for i686 at -O2: no frame pointers,
#                                 frames described only by the PDB's
#                                 FrameData (LLVM writes it for i686)
#   nofpo/fpo32.exe               the same image, its PDB nowhere (RSDS absent)
#   pdbc-gcc.exe                  pdbc.c by mingw gcc -gdwarf-4 (COFF
#                                 symbols + DWARF 4, no PDB)
#   pdbc-gcc5.exe                 the same with gcc's default DWARF 5
# All use -O1 -fno-inline -fno-optimize-sibling-calls: every function stays
# a function and the instrumented twin makes the same calls.
#
# The PDB in every place a search looks (pdbc.exe, same GUID and age
# unless said; "absent" = the RSDS path C:\hookscope-absent\pdbc.pdb):
#   pdbc.exe, pdbc.pdb            side by side; RSDS = Z:\...\pdb\pdbc.pdb
#   next/pdbc.exe + pdbc.pdb      side by side; RSDS absent
#   rsds/pdbc.exe                 RSDS = Z:\...\pdb\rsds-store\pdbc.pdb
#   rsds-store/pdbc.pdb           (only there)
#   srv/pdbc.exe                  RSDS absent; the PDB only in
#   srv-cache/pdbc.pdb/<GUID><age>/pdbc.pdb   (a symbol server cache)
#   dir/pdbc.exe                  RSDS absent; the PDB only in
#   dir-syms/pdbc.pdb             (for --symbols DIR, _NT_SYMBOL_PATH=DIR)
#   rebuilt/pdbc.exe + pdbc.pdb   the PDB of a rebuilt image (-O2: another
#                                 GUID); RSDS absent
#   age/pdbc.exe + pdbc.pdb       the image's RSDS age set to 2 (PDB: 1)
#   stripped/pdbc.exe + pdbc.pdb  0x20c set, as GNU strip leaves it
#   nopdb/pdbc.exe                no PDB anywhere; RSDS absent
# Paths are patched in place by tests/support/pe_rsds.py (the link names
# the longest one, rsds-store's; shorter ones fit).
#
# Run: cwd build/fixtures/pdb, `pdbc.exe` (5 lines), `pdbcxx.exe` (4 lines),
# `pdbmsvc.exe` ("sum 124"); exit code 0.
fixture_name=pdb
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

CLANG=${FIX_CLANG:-clang}
CLANGXX=${FIX_CLANGXX:-clang++}
need "$CLANG" "package clang"
need "$CLANGXX" "package clang"
need ld.lld "package lld"
need lld-link "package lld"
need llvm-objcopy "package llvm"
need llvm-pdbutil "package llvm"
need "$FIX_CC" "package gcc-mingw-w64-x86-64-win32"
need i686-w64-mingw32-gcc "package gcc-mingw-w64-i686-win32"
need python3

src="$top/tests/fixtures/pdb"
sup="$top/tests/support"
out="$fix/pdb"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"
t0=$(now)

gcclib=$(dirname "$("$FIX_CC" -print-libgcc-file-name)")
target=(--target=x86_64-w64-mingw32)
cxxinc=(-isystem "$gcclib/include/c++" -isystem "$gcclib/include/c++/x86_64-w64-mingw32")
common=(-O1 -fno-inline -fno-optimize-sibling-calls -Wall -Wextra -g -gcodeview)
cflags=(-std=gnu11 "${common[@]}")
cxxflags=(-std=gnu++17 "${common[@]}" -fno-exceptions -fno-rtti "${cxxinc[@]}")

winpath() {     # /a/b -> Z:\a\b (Wine's drive for /)
    local p=$1
    printf 'Z:%s' "${p//\//\\}"
}
absent='C:\hookscope-absent'

# msvc_like OUT.exe: no DWARF sections, no stripped bits
msvc_like() {
    llvm-objcopy --remove-section='.debug_*' "$1"
    python3 "$sup/pe_rsds.py" "$1" --clear-chars 20c -o "$1"
    if llvm-objdump -h "$1" | grep -q '\.debug_'; then die "$1 still has DWARF sections"; fi
}

# link_pdb LANG OUT.exe PDB RSDS-PATH FLAGS... SOURCES...
link_pdb() {
    local lang=$1 exe=$2 pdb=$3 rsds=$4
    shift 4
    local cc=$CLANG
    [ "$lang" = c++ ] && cc=$CLANGXX
    "$cc" "${target[@]}" -fuse-ld=lld -static -s -L"$gcclib" \
        "-Wl,--pdb=$pdb" "-Wl,--Xlink=-pdbaltpath:$rsds" -o "$exe" "$@"
    msvc_like "$exe"
}

log "building with $CLANG + lld (MSVC-like: PDB only) and $FIX_CC (DWARF)"
"$CLANG" "${target[@]}" -std=gnu11 -O2 -Wall -Wextra -c "$sup/cyg_profile.c" -o "$work/cyg_profile.o"

longest="$(winpath "$out")\\rsds-store"
for prog in pdbc pdbcxx; do
    if [ $prog = pdbc ]; then lang=c; s="$src/pdbc.c"; f=("${cflags[@]}")
    else lang=c++; s="$src/pdbcxx.cpp"; f=("${cxxflags[@]}"); fi
    link_pdb $lang "$work/$prog.exe" "$work/$prog.pdb" "$longest\\$prog.pdb" "${f[@]}" "$s"
    link_pdb $lang "$work/$prog-instr.exe" "$work/$prog-instr.pdb" "$longest\\$prog-instr.pdb" \
        "${f[@]}" -finstrument-functions "$s" "$work/cyg_profile.o"
    python3 "$sup/pdb_funcset.py" "$work/$prog.pdb" "$work/$prog-instr.pdb" \
        --runtime-module cyg_profile ||
        die "$prog.exe and $prog-instr.exe do not have the same procedures"
done

# the PDB of a rebuilt pdbc.exe: same source and paths, other code
link_pdb c "$work/rebuilt.exe" "$work/rebuilt.pdb" "$longest\\pdbc.pdb" "${cflags[@]}" -O2 "$src/pdbc.c"

# MSVC target, no C runtime: lld-link with mingw's kernel32 import library
"$CLANG" --target=x86_64-pc-windows-msvc -O1 -fno-inline -g -gcodeview -fno-exceptions -fno-rtti \
    -Wall -Wextra -c "$src/pdbmsvc.cpp" -o "$work/pdbmsvc.obj"
lld-link /nologo /entry:start /subsystem:console /debug /pdb:"$work/pdbmsvc.pdb" \
    /pdbaltpath:"$(winpath "$out")\\pdbmsvc.pdb" /out:"$work/pdbmsvc.exe" "$work/pdbmsvc.obj" \
    "$("$FIX_CC" -print-file-name=libkernel32.a)"

# i686 (32-bit, issue 24): pdbc.c MSVC-like, its publics with C decoration
# (_f, _f@12): pdbc32.exe / pdbc32.pdb
gcclib32=$(dirname "$(i686-w64-mingw32-gcc -print-libgcc-file-name)")
"$CLANG" --target=i686-w64-mingw32 -fuse-ld=lld -static -s -L"$gcclib32" "-Wl,--pdb=$work/pdbc32.pdb" \
    "-Wl,--Xlink=-pdbaltpath:$longest\\pdbc32.pdb" -o "$work/pdbc32.exe" "${cflags[@]}" "$src/pdbc.c"
msvc_like "$work/pdbc32.exe"
"$CLANG" --target=i686-w64-mingw32 -fuse-ld=lld -static -s -L"$gcclib32" "-Wl,--pdb=$work/fpo32.pdb" \
    "-Wl,--Xlink=-pdbaltpath:$longest\\fpo32.pdb" -o "$work/fpo32.exe" -std=gnu11 -O2 -fno-inline -Wall -Wextra \
    -g -gcodeview "$src/fpo32.c"
msvc_like "$work/fpo32.exe"

# gcc: COFF symbols + DWARF 4 (what hookscope's gcc targets carry), and DWARF 5
"$FIX_CC" -std=gnu11 -O1 -fno-inline -fno-optimize-sibling-calls -Wall -Wextra -gdwarf-4 \
    -o "$work/pdbc-gcc.exe" "$src/pdbc.c"
"$FIX_CC" -std=gnu11 -O1 -fno-inline -fno-optimize-sibling-calls -Wall -Wextra -g \
    -o "$work/pdbc-gcc5.exe" "$src/pdbc.c"

# the search places
rm -rf "$out"/{next,rsds,rsds-store,srv,srv-cache,dir,dir-syms,rebuilt,age,stripped,nopdb,nofpo}
mkdir -p "$out"/{next,rsds,rsds-store,srv,dir,dir-syms,rebuilt,age,stripped,nopdb,nofpo}
rsds() { python3 "$sup/pe_rsds.py" "$work/pdbc.exe" -o "$1" "${@:2}"; }
rsds "$out/next/pdbc.exe" --path "$absent\\pdbc.pdb"
cp "$work/pdbc.pdb" "$out/next/pdbc.pdb"
cp "$work/pdbc.exe" "$out/rsds/pdbc.exe"
cp "$work/pdbc.pdb" "$out/rsds-store/pdbc.pdb"
rsds "$out/srv/pdbc.exe" --path "$absent\\pdbc.pdb"
key=$(python3 "$sup/pe_rsds.py" "$work/pdbc.exe" --key)
mkdir -p "$out/srv-cache/pdbc.pdb/$key"
cp "$work/pdbc.pdb" "$out/srv-cache/pdbc.pdb/$key/pdbc.pdb"
rsds "$out/dir/pdbc.exe" --path "$absent\\pdbc.pdb"
cp "$work/pdbc.pdb" "$out/dir-syms/pdbc.pdb"
rsds "$out/rebuilt/pdbc.exe" --path "$absent\\pdbc.pdb"
cp "$work/rebuilt.pdb" "$out/rebuilt/pdbc.pdb"
rsds "$out/age/pdbc.exe" --path "$absent\\pdbc.pdb" --age 2
cp "$work/pdbc.pdb" "$out/age/pdbc.pdb"
rsds "$out/stripped/pdbc.exe" --path "$absent\\pdbc.pdb" --set-chars 20c
cp "$work/pdbc.pdb" "$out/stripped/pdbc.pdb"
rsds "$out/nopdb/pdbc.exe" --path "$absent\\pdbc.pdb"
python3 "$sup/pe_rsds.py" "$work/fpo32.exe" -o "$out/nofpo/fpo32.exe" --path "$absent\\fpo32.pdb"

# the programs themselves, side by side with their PDBs
for prog in pdbc pdbcxx pdbc32 fpo32; do
    python3 "$sup/pe_rsds.py" "$work/$prog.exe" --path "$(winpath "$out")\\$prog.pdb" -o "$work/$prog.exe"
    [ $prog = pdbc32 ] || [ $prog = fpo32 ] ||
        python3 "$sup/pe_rsds.py" "$work/$prog-instr.exe" --path "$(winpath "$out")\\$prog-instr.pdb" \
            -o "$work/$prog-instr.exe"
done
for f in pdbc pdbc-instr pdbcxx pdbcxx-instr pdbmsvc pdbc32 fpo32; do
    install_atomic "$work/$f.pdb" "$out/$f.pdb"
done
for f in pdbc pdbc-instr pdbcxx pdbcxx-instr pdbmsvc pdbc32 fpo32 pdbc-gcc pdbc-gcc5; do
    install_atomic "$work/$f.exe" "$out/$f.exe"
done
rm -rf "$work"
log "built $out in $(since "$t0")"
