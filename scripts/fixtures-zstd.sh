#!/usr/bin/env bash
# Fixture "zstd": Zstandard's library as a Windows DLL, for the hook
# engine's tests on real code (tests/unit/test_hook_dlls.c).
#
#   build/fixtures/zstd/libzstd.dll
#
# Built from Debian's libzstd source package (apt-get source libzstd) with
# mingw-w64 gcc -O2: lib/common, lib/compress, lib/decompress and
# lib/dictBuilder, single-threaded, no assembly (ZSTD_DISABLE_ASM: the
# Huffman decoder's .S file is ELF-only). Its many small wrappers end in
# tail jumps to functions of more arguments, which the --time rule for tail
# jumps (hook/tail.c) is checked on. Not run by any test: no workload file.
fixture_name=zstd
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CC" "mingw-w64"
src=$(source_dir libzstd)/lib
out="$fix/zstd"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"
t0=$(now)
log "compiling $src with $FIX_CC -O2"
compile_all "$FIX_CC" "$work/obj" "$src"/common/*.c "$src"/compress/*.c "$src"/decompress/*.c \
    "$src"/dictBuilder/*.c -- -O2 -DZSTD_MULTITHREAD=0 -DZSTD_DISABLE_ASM -I"$src" -I"$src/common"
"$FIX_CC" -shared -o "$work/libzstd.dll" "$work"/obj/*.o || die "linking libzstd.dll failed"
install_atomic "$work/libzstd.dll" "$out/libzstd.dll"
rm -rf "$work"
log "built $out/libzstd.dll in $(since "$t0")"
