#!/usr/bin/env bash
# Fixture "groundtruth": a small C program with known call counts, twice.
#
#   build/fixtures/groundtruth/groundtruth.exe        plain -> traced by hookscope
#   build/fixtures/groundtruth/groundtruth-instr.exe  -finstrument-functions +
#                                                     tests/support/cyg_profile.c
#
# Source: tests/fixtures/groundtruth/groundtruth.c (~30 functions: recursion,
# mutual recursion, a dispatch table, a qsort comparator, struct by value,
# 6 and 8 arguments, loops of 1..10000 calls; its header lists the expected
# counts). Compiled with mingw-w64 gcc (win32 thread model), -O1 -fno-inline
# plus the same count-preserving flags as the lua fixture (see
# fixtures-lua.sh for why each is there), statically linked, symbols kept,
# -gdwarf-4. Fails if the two exes do not have identical function sets.
#
# Run: cwd build/fixtures/groundtruth, `groundtruth.exe`, no args, exit 0.
fixture_name=groundtruth
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CC" "package $FIX_CC_PACKAGE"
need python3

src="$top/tests/fixtures/groundtruth/groundtruth.c"
out="$fix/groundtruth"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"

flags=(
    -std=gnu11 -O1 -gdwarf-4 -fno-inline -Wall -Wextra
    -fno-ipa-cp -fno-ipa-sra -fno-ipa-pure-const -fno-ipa-modref
    -fno-optimize-sibling-calls
)

"$FIX_CC" -std=gnu11 -O2 -gdwarf-4 -Wall -Wextra -c "$top/tests/support/cyg_profile.c" \
    -o "$work/cyg_profile.o"
"$FIX_CC" "${flags[@]}" -static -o "$work/groundtruth.exe" "$src"
"$FIX_CC" "${flags[@]}" -finstrument-functions -static -o "$work/groundtruth-instr.exe" \
    "$src" "$work/cyg_profile.o"

python3 "$top/tests/support/funcset.py" --runtime "$work/cyg_profile.o" \
    "$work/groundtruth.exe" "$work/groundtruth-instr.exe" ||
    die "groundtruth.exe and groundtruth-instr.exe do not have the same functions"

install_atomic "$work/groundtruth.exe" "$out/groundtruth.exe"
install_atomic "$work/groundtruth-instr.exe" "$out/groundtruth-instr.exe"
rm -rf "$work"
log "built $out/groundtruth.exe and groundtruth-instr.exe"
