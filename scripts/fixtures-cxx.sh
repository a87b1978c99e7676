#!/usr/bin/env bash
# Fixture "cxx": a C++ program that uses the mingw C++ runtime as DLLs.
#
#   build/fixtures/cxx/cxxdemo.exe
#   build/fixtures/cxx/libstdc++-6.dll, libgcc_s_seh-1.dll, libwinpthread-1.dll
#
# Source: tests/fixtures/cxx/cxxdemo.cpp (std::sort, std::map, std::string,
# iostream, virtual calls, two std::threads, exceptions thrown and caught).
# Compiled with the POSIX thread model g++ (x86_64-w64-mingw32-g++-posix),
# -O1 -gdwarf-4, linked dynamically (NOT -static), so the exe imports
# libstdc++-6.dll, libgcc_s_seh-1.dll and libwinpthread-1.dll. Those three
# are copied next to the exe from the posix toolchain
# (/usr/lib/gcc/x86_64-w64-mingw32/<ver>-posix/ and /usr/x86_64-w64-mingw32/lib/)
# so Windows/Wine finds them in the exe's directory. The script checks the
# imports with objdump -p and fails if one is missing.
#
# Run: cwd build/fixtures/cxx, `cxxdemo.exe`, no args, exit 0.
fixture_name=cxx
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

need "$FIX_CXX" "package g++-mingw-w64-x86-64-posix"
objdump=${FIX_OBJDUMP:-x86_64-w64-mingw32-objdump}
need "$objdump"

out="$fix/cxx"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"

"$FIX_CXX" -std=gnu++17 -O1 -gdwarf-4 -Wall -Wextra -pthread \
    -o "$work/cxxdemo.exe" "$top/tests/fixtures/cxx/cxxdemo.cpp"

# where the posix toolchain keeps its runtime DLLs
libgcc_dir=$(dirname "$("$FIX_CXX" -print-libgcc-file-name)")
find_dll() {
    local d
    for d in "$libgcc_dir" "$("$FIX_CXX" -print-sysroot 2>/dev/null)/lib" \
             /usr/x86_64-w64-mingw32/lib /usr/x86_64-w64-mingw32/bin; do
        if [ -f "$d/$1" ]; then echo "$d/$1"; return 0; fi
    done
    die "$1 not found (looked in $libgcc_dir and /usr/x86_64-w64-mingw32/{lib,bin})"
}

imports=$("$objdump" -p "$work/cxxdemo.exe" | sed -n 's/^[[:space:]]*DLL Name: //p')
imports_line=$(tr '\n' ' ' <<<"$imports")
for dll in libstdc++-6.dll libgcc_s_seh-1.dll libwinpthread-1.dll; do
    grep -qxF "$dll" <<<"$imports" ||
        die "cxxdemo.exe does not import $dll (imports: ${imports_line% })"
    cp "$(find_dll "$dll")" "$work/$dll"
done

for dll in libstdc++-6.dll libgcc_s_seh-1.dll libwinpthread-1.dll; do
    install_atomic "$work/$dll" "$out/$dll"
done
install_atomic "$work/cxxdemo.exe" "$out/cxxdemo.exe"
rm -rf "$work"
log "built $out/cxxdemo.exe (imports: ${imports_line% })"
