#!/usr/bin/env bash
# Fixture "pdblua": the Lua 5.4 interpreter built the MSVC way - code in the
# exe, names, sizes and lines only in a PDB - twice:
#
#   build/fixtures/pdblua/lua.exe + lua.pdb              plain -> traced
#   build/fixtures/pdblua/lua-instr.exe + lua-instr.pdb  -finstrument-functions
#                         + tests/support/cyg_profile.c: exact call counts to
#                         %HS_CYG_OUT%, named by tests/support/cyg_pdbnames.py
#
# The same sources and defines as the gcc fixture (scripts/fixtures-lua.sh
# says why each define is there; the LTnum renames keep the function names
# equal to the gcc build's), compiled by clang for x86_64-w64-mingw32 with
# -g -gcodeview and linked by lld with --pdb, -s (no COFF symbols), then the
# DWARF sections of mingw's CRT objects removed and 0x20c cleared in the
# COFF characteristics (the recipe of scripts/fixtures-pdb.sh). Flags:
#   -O2 -fno-inline                  optimised, every function a function
#   -fno-optimize-sibling-calls      no tail calls (the instrumented build
#                                    makes none: edges would differ)
# gcc's -fno-ipa-* flags have no clang equivalent (clang warns and ignores
# them) and are left out. The script fails if the two PDBs do not list the
# same procedures (tests/support/pdb_funcset.py).
#
# Not under tests/unit/test_hook_dlls.c's build/fixtures/{lua,sqlite}*: on
# this exe the engine's checks "full" (4 functions get another plan with
# HS_ANALYZE_FULL) and "exec-sample" (5 of 1089 differ) do not pass yet.
#
# Workload: tests/fixtures/lua/workload.lua, copied next to the exes by make;
# cwd build/fixtures/pdblua: `lua.exe workload.lua` -> exit 0, the same 10
# lines as the gcc build.
fixture_name=pdblua
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

CLANG=${FIX_CLANG:-clang}
need "$CLANG" "package clang"
need ld.lld "package lld"
need llvm-objcopy "package llvm"
need llvm-pdbutil "package llvm"
need "$FIX_CC" "package gcc-mingw-w64-x86-64-win32"
need python3
t0=$(now)

src=$(source_dir lua5.4)/src
out="$fix/pdblua"
work="$out/.work"
sup="$top/tests/support"
rm -rf "$work"
mkdir -p "$work"

mapfile -t csrc < <(find "$src" -maxdepth 1 -name '*.c' ! -name luac.c ! -name lua.c \
                        ! -name onelua.c | sort)
if [ "${#csrc[@]}" -lt 20 ] || [ ! -f "$src/lua.c" ]; then
    die "unexpected lua source layout in $src"
fi
csrc+=("$top/tests/fixtures/lua/argv0.c")

gcclib=$(dirname "$("$FIX_CC" -print-libgcc-file-name)")
flags=(
    --target=x86_64-w64-mingw32 -std=gnu99 -O2 -g -gcodeview -fno-inline
    -fno-optimize-sibling-calls
    -DLUA_COMPAT_5_3
    '-Dluai_makeseed(L)=0x2545F491u' '-Dl_randomizePivot()=0x9E3779B9u'
    -DSTRCACHE_N=1 -DSTRCACHE_M=2
    '-DLUA_PATH_DEFAULT=".\\?.lua;.\\?\\init.lua"' '-DLUA_CPATH_DEFAULT=".\\?.dll"'
    -DLTnum=vm_LTnum -DLEnum=vm_LEnum
    -DLTintfloat=vm_LTintfloat -DLEintfloat=vm_LEintfloat
    -DLTfloatint=vm_LTfloatint -DLEfloatint=vm_LEfloatint
)

log "compiling $((${#csrc[@]} + 1)) files twice with $CLANG (jobs: $FIX_JOBS)"
pids=()
compile_all "$CLANG" "$work/plain" "${csrc[@]}" -- "${flags[@]}" & pids+=($!)
compile_all "$CLANG" "$work/instr" "${csrc[@]}" -- "${flags[@]}" -finstrument-functions & pids+=($!)
compile_all "$CLANG" "$work/plain" "$src/lua.c" -- "${flags[@]}" -Dmain=lua_c_main & pids+=($!)
compile_all "$CLANG" "$work/instr" "$src/lua.c" -- "${flags[@]}" -Dmain=lua_c_main \
    -finstrument-functions & pids+=($!)
"$CLANG" --target=x86_64-w64-mingw32 -std=gnu11 -O2 -Wall -Wextra -c "$sup/cyg_profile.c" \
    -o "$work/cyg_profile.o"
for p in "${pids[@]}"; do
    wait "$p" || die "compilation failed"
done

winout="Z:${out//\//\\}"
for v in plain instr; do
    name=lua
    extra=()
    if [ $v = instr ]; then name=lua-instr; extra=("$work/cyg_profile.o"); fi
    "$CLANG" --target=x86_64-w64-mingw32 -fuse-ld=lld -static -s -L"$gcclib" \
        "-Wl,--pdb=$work/$name.pdb" "-Wl,--Xlink=-pdbaltpath:$winout\\$name.pdb" \
        -o "$work/$name.exe" "$work/$v"/*.o "${extra[@]}"
    llvm-objcopy --remove-section='.debug_*' "$work/$name.exe"
    python3 "$sup/pe_rsds.py" "$work/$name.exe" --clear-chars 20c -o "$work/$name.exe"
done

python3 "$sup/pdb_funcset.py" "$work/lua.pdb" "$work/lua-instr.pdb" --runtime-module cyg_profile ||
    die "lua.exe and lua-instr.exe do not have the same procedures - see above"

for f in lua.exe lua.pdb lua-instr.exe lua-instr.pdb; do
    install_atomic "$work/$f" "$out/$f"
done
rm -rf "$work"
log "built $out/lua.exe and lua-instr.exe with their PDBs in $(since "$t0")"
