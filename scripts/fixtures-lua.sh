#!/usr/bin/env bash
# Fixture "lua": the Lua 5.4 interpreter as ONE static Windows exe, twice.
#
#   build/fixtures/lua/lua.exe        plain          -> traced by hookscope
#   build/fixtures/lua/lua-instr.exe  ground truth   -> -finstrument-functions,
#                                     linked with tests/support/cyg_profile.c,
#                                     writes exact per-function/per-edge call
#                                     counts to %HS_CYG_OUT% (cyg-counts.txt)
#
# Source: Debian's lua5.4 source package (apt-get source lua5.4, with
# Debian's patches applied), fetched into build/deps/src/ if missing. All
# src/*.c except luac.c are compiled with mingw-w64 gcc (win32 thread model)
# and linked with -static into lua.exe: interpreter and the whole standard
# library inside, no lua54.dll. Symbols are kept (not stripped, -gdwarf-4).
#
# Flags, and why each one is there. Both builds use exactly the same flags,
# the instrumented one adds -finstrument-functions:
#   -O2 -fno-inline          optimised, but every function stays a function
#   -fno-ipa-cp -fno-ipa-sra without these the plain build gets ~50 clones
#                            (foo.constprop.0, foo.isra.0) that the
#                            instrumented build does not have: the function
#                            SETS would differ (checked below, see funcset.py)
#   -fno-ipa-pure-const -fno-ipa-modref
#                            an instrumented function always has a side effect
#                            (the profiling call), so gcc can never drop or
#                            merge calls to it; in the plain build it could
#                            (pure/const calls CSE'd or deleted, calls whose
#                            only effect is on dead memory deleted by DSE with
#                            modref). Without these flags the plain code has
#                            measurably different calls in lapi, lcode, lgc,
#                            lparser and ltable; the call COUNTS could differ.
#   -fno-optimize-sibling-calls
#                            the instrumented build never makes tail calls (the
#                            exit hook runs after the call); a tail call in the
#                            plain build would make the callee appear called
#                            from its caller's caller: the EDGES would differ.
#   -DLTnum=vm_LTnum ...     GNU as drops the symbols of static functions whose
#                            names start with 'L' (it takes them for local
#                            labels). lvm.c has six; renamed so they have names.
#   luai_makeseed, l_randomizePivot fixed
#                            Lua seeds its string hash with time and addresses
#                            (ASLR) and randomises sort pivots with clock();
#                            both change call counts (hash collisions, sort
#                            partitions) from run to run. Fixed constants make
#                            the counts repeatable.
#   -DSTRCACHE_N=1 -DSTRCACHE_M=2
#                            luaS_new caches C strings in a table indexed by
#                            the string's ADDRESS (mod 53): hits and misses,
#                            and so the calls to luaS_newlstr/luaS_hash, then
#                            depend on where .rdata is, which differs between
#                            the two builds. One bucket makes it address-free.
#   LUA_PATH_DEFAULT, LUA_CPATH_DEFAULT without '!'
#                            on Windows, Lua puts the exe's directory into
#                            package.path/cpath; the length of those strings
#                            (and, past 1 KB, an extra buffer box) would make
#                            counts depend on where the exe lives. Now just
#                            .\?.lua;.\?\init.lua and .\?.dll.
#   lua.c: -Dmain=lua_c_main, and tests/fixtures/lua/argv0.c as main()
#                            calls it with argv[0] = "lua", for the same
#                            reason: lua.c keeps argv[0] in arg[-1], and Wine
#                            passes the exe's full path, which differs between
#                            lua.exe and lua-instr.exe and between checkouts.
#                            (argv0.c is compiled like the Lua sources.)
# Not needed (checked: no change in the generated code once the above are
# set): -fno-ipa-icf, -fno-partial-inlining.
#
# Verified: the counts of lua-instr.exe running workload.lua are identical
# across runs, with the exe under other names and in other directories,
# launched by relative or absolute path, with a big environment, with extra
# heap allocated before main, and with the code laid out differently
# (-falign-functions=64). Environment variables LUA_INIT, LUA_PATH and
# LUA_CPATH (and their _5_4 forms) would change them: do not set them.
#
# The script fails loudly if the two exes do not have identical function
# sets or if any function lacks a symbol (tests/support/funcset.py).
#
# Workloads (tests/fixtures/lua/, copied next to the exes by make):
#   cwd build/fixtures/lua:  lua.exe workload.lua     -> exit 0, 10 lines
#                            lua.exe exit3.lua        -> exit 3, 1 line
fixture_name=lua
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CC" "package $FIX_CC_PACKAGE"
need python3
t0=$(now)

src=$(source_dir lua5.4)/src
out="$fix/lua"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"

# all of src/*.c except luac.c (the compiler's main); lua.c gets one more flag
mapfile -t csrc < <(find "$src" -maxdepth 1 -name '*.c' ! -name luac.c ! -name lua.c \
                        ! -name onelua.c | sort)
if [ "${#csrc[@]}" -lt 20 ] || [ ! -f "$src/lua.c" ]; then
    die "unexpected lua source layout in $src"
fi

flags=(
    -std=gnu99 -O2 -gdwarf-4 -fno-inline
    -fno-ipa-cp -fno-ipa-sra -fno-ipa-pure-const -fno-ipa-modref
    -fno-optimize-sibling-calls
    -DLUA_COMPAT_5_3
    '-Dluai_makeseed(L)=0x2545F491u' '-Dl_randomizePivot()=0x9E3779B9u'
    -DSTRCACHE_N=1 -DSTRCACHE_M=2
    '-DLUA_PATH_DEFAULT=".\\?.lua;.\\?\\init.lua"' '-DLUA_CPATH_DEFAULT=".\\?.dll"'
    -DLTnum=vm_LTnum -DLEnum=vm_LEnum
    -DLTintfloat=vm_LTintfloat -DLEintfloat=vm_LEintfloat
    -DLTfloatint=vm_LTfloatint -DLEfloatint=vm_LEfloatint
)

csrc+=("$top/tests/fixtures/lua/argv0.c")

log "compiling $((${#csrc[@]} + 1)) files twice with $FIX_CC (jobs: $FIX_JOBS)"
pids=()
compile_all "$FIX_CC" "$work/plain" "${csrc[@]}" -- "${flags[@]}" & pids+=($!)
compile_all "$FIX_CC" "$work/instr" "${csrc[@]}" -- "${flags[@]}" -finstrument-functions & pids+=($!)
compile_all "$FIX_CC" "$work/plain" "$src/lua.c" -- "${flags[@]}" -Dmain=lua_c_main & pids+=($!)
compile_all "$FIX_CC" "$work/instr" "$src/lua.c" -- "${flags[@]}" -Dmain=lua_c_main \
    -finstrument-functions & pids+=($!)
cyg_runtime "$work"
for p in "${pids[@]}"; do
    wait "$p" || die "compilation failed"
done

link_twins "$work" "$out" lua lua-instr
rm -rf "$work"
log "built $out/lua.exe and lua-instr.exe in $(since "$t0")"
