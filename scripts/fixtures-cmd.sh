#!/usr/bin/env bash
# Fixture "cmd": Wine's own cmd.exe running a batch file.
#
#   build/fixtures/cmd/workload.bat   tests/fixtures/cmd/workload.bat with CRLF
#                                     line ends (what Windows' cmd expects;
#                                     Wine's cmd takes LF as well)
#
# Nothing is compiled: the program is Wine's cmd.exe, a real PE built by
# Debian with mingw (Wine 8 ships its builtins as PE files, with COFF symbols,
# .pdata and DWARF 4). Inside the Wine prefix it is
# C:\windows\system32\cmd.exe (on Linux: $WINEPREFIX/drive_c/windows/system32/
# cmd.exe, a copy of /usr/lib/x86_64-linux-gnu/wine/x86_64-windows/cmd.exe).
#
# Run: cwd build/fixtures/cmd, `cmd.exe /c workload.bat` (program name
# "cmd.exe" resolves through the search path to system32; the batch file is
# given relative to the cwd; a Windows path such as Z:\...\workload.bat also
# works). Output: 15 lines; exit code 7 (from `exit /b 7`).
fixture_name=cmd
# shellcheck source=scripts/fixtures-common.sh
. "$(dirname "$0")/fixtures-common.sh"

out="$fix/cmd"
mkdir -p "$out"
sed 's/\r$//; s/$/\r/' "$top/tests/fixtures/cmd/workload.bat" >"$out/workload.bat.tmp"
install_atomic "$out/workload.bat.tmp" "$out/workload.bat"
log "ready: $out/workload.bat (run with Wine's cmd.exe /c workload.bat)"
