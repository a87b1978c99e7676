#!/usr/bin/env bash
# Fixture "zstd": Zstandard's library as a Windows DLL, for the hook
# engine's tests on real code (tests/unit/test_hook_dlls.c), and with a
# program that runs it and a ground truth of its calls.
#
#   build/fixtures/zstd/libzstd.dll        -O2, as shipped
#   build/fixtures/zstd/libzstd-cp.dll     count-preserving flags ...
#   build/fixtures/zstd/libzstd-instr.dll  ... and its -finstrument-functions
#                                          twin with tests/support/cyg_profile.c
#                                          (its counts written when the DLL
#                                          is unloaded at exit)
#   build/fixtures/zstd/zstdwork.exe       tests/targets/zstdwork.c: loads
#                                          the DLL named by its first argument
#
# Built from Debian's libzstd source package (apt-get source libzstd) with
# mingw-w64 gcc -O2: lib/common, lib/compress, lib/decompress and
# lib/dictBuilder, single-threaded, no assembly (ZSTD_DISABLE_ASM: the
# Huffman decoder's .S file is ELF-only). Its many small wrappers end in
# tail jumps to functions of more arguments, which the --time rule for tail
# jumps (hook/tail.c) is checked on. The pair is built with the lua
# fixture's count-preserving flags (fixtures-lua.sh says why each is there)
# and -fno-ipa-icf, and ZSTD_NO_INLINE (zstd forces its hot helpers
# inline, always_inline, which -finstrument-functions keeps out of line
# too: the twin would have functions the plain build has not), and must
# have the same functions (funcset.py).
#
# The DLLs link libgcc statically (-static-libgcc: i686's would need
# libgcc_s_dw2-1.dll next to them).
#
# Run: cwd build/fixtures/zstd, `zstdwork.exe libzstd-cp.dll 2` (the twin:
# libzstd-instr.dll), exit 0.
fixture_name=zstd
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CC" "package $FIX_CC_PACKAGE"
need python3
src=$(source_dir libzstd)/lib
out="$fix/zstd"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"
t0=$(now)
srcs=("$src"/common/*.c "$src"/compress/*.c "$src"/decompress/*.c "$src"/dictBuilder/*.c)
zflags=(-DZSTD_MULTITHREAD=0 -DZSTD_DISABLE_ASM -I"$src" -I"$src/common")
cp_flags=(
    -O2 -gdwarf-4 -fno-inline -fno-ipa-cp -fno-ipa-sra -fno-ipa-pure-const -fno-ipa-modref -fno-ipa-icf
    -fno-optimize-sibling-calls -DZSTD_NO_INLINE
)
log "compiling $src with $FIX_CC -O2, and the count-preserving pair"
pids=()
compile_all "$FIX_CC" "$work/obj" "${srcs[@]}" -- -O2 "${zflags[@]}" & pids+=($!)
compile_all "$FIX_CC" "$work/plain" "${srcs[@]}" -- "${cp_flags[@]}" "${zflags[@]}" & pids+=($!)
compile_all "$FIX_CC" "$work/instr" "${srcs[@]}" -- "${cp_flags[@]}" "${zflags[@]}" -finstrument-functions \
    & pids+=($!)
cyg_runtime "$work"
for p in "${pids[@]}"; do
    wait "$p" || die "compilation failed"
done
"$FIX_CC" -shared -static-libgcc -o "$work/libzstd.dll" "$work"/obj/*.o || die "linking libzstd.dll failed"
"$FIX_CC" -shared -static-libgcc -o "$work/libzstd-cp.dll" "$work"/plain/*.o || die "linking libzstd-cp.dll failed"
"$FIX_CC" -shared -static-libgcc -o "$work/libzstd-instr.dll" "$work"/instr/*.o "$work/cyg_profile.o" ||
    die "linking libzstd-instr.dll failed"
python3 "$top/tests/support/funcset.py" --runtime "$work/cyg_profile.o" \
    "$work/libzstd-cp.dll" "$work/libzstd-instr.dll" ||
    die "libzstd-cp.dll and libzstd-instr.dll do not have the same functions - see above"
"$FIX_CC" -std=gnu11 -O1 -gdwarf-4 -Wall -o "$work/zstdwork.exe" "$top/tests/targets/zstdwork.c" ||
    die "building zstdwork.exe failed"
for f in libzstd.dll libzstd-cp.dll libzstd-instr.dll zstdwork.exe; do
    install_atomic "$work/$f" "$out/$f"
done
rm -rf "$work"
log "built $out/libzstd.dll, libzstd-cp.dll, libzstd-instr.dll and zstdwork.exe in $(since "$t0")"
