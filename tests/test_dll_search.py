"""DLLs come from System32 only: hookscope.exe imports at load time only
KnownDLLs (which Windows takes from System32 whatever the folder), and
delay-loads DbgHelp and winmm after main() has limited the search to
System32; so DLLs of those names planted beside a copy of hookscope.exe
(a download folder) are never loaded, while the functions that need the
real ones still work. (Wine takes its own DbgHelp and winmm whatever the
folder; the test tells it to prefer a DLL of the name found on the
search path, as Windows does: then an older hookscope.exe loads the
planted ones.)
"""
import os
import re
import shutil
import subprocess

import hs

KNOWN = {"kernel32.dll", "advapi32.dll", "msvcrt.dll", "ntdll.dll", "user32.dll", "gdi32.dll", "shell32.dll",
         "ole32.dll", "oleaut32.dll", "psapi.dll", "ws2_32.dll", "combase.dll", "rpcrt4.dll", "sechost.dll"}


def imports(path):
    out = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", os.path.join(hs.ROOT, path)], capture_output=True,
                         text=True, check=True).stdout
    return {m.lower() for m in re.findall(r"DLL Name: (\S+)", out)}


def test_static_imports_are_known_dlls():
    for exe in ("build/bin/hookscope.exe", "build/bin/hookscope-agent.dll", "build/bin/hookscope-dtrace.exe"):
        found = imports(hs.need(exe))
        hs.check(found and found <= KNOWN, f"{exe} imports DLLs that are not KnownDLLs: {sorted(found - KNOWN)}")


def test_planted_dlls_are_not_loaded():
    d = os.path.join(hs.OUT, "planted")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in ("build/bin/hookscope.exe", "build/bin/hookscope-agent.dll", "build/tests/planted/dbghelp.dll",
              "build/tests/planted/winmm.dll"):
        shutil.copy(os.path.join(hs.ROOT, hs.need(f)), d)
    log = os.path.join(d, "planted.log")
    exe = os.path.relpath(os.path.join(d, "hookscope.exe"), hs.ROOT)
    # (Wine takes its own DbgHelp and winmm first unless told to prefer a
    # DLL of the name found on the search path, as Windows does)
    env = {"HS_PLANTED_LOG": "Z:" + log.replace("/", "\\"), "WINEDLLOVERRIDES": "mscoree,mshtml=;dbghelp,winmm=n,b"}
    # the suspend sampler sets the timer resolution (winmm)
    out = hs.outdir("planted-run")
    p = hs.wine([exe, "run", "-q", "--sampler", "suspend", "-o", out, "--", hs.need("build/examples/demo.exe")],
                extra_env=env, timeout=300)
    hs.eq(p.returncode, 0, f"the run ({p.stderr.decode(errors='replace')[-500:]})")
    hs.check(os.path.exists(os.path.join(hs.ROOT, out, "report.txt")), "the run reported")
    # MSVC names are undecorated by DbgHelp's UnDecorateSymbolName
    msvc = "build/fixtures/pdb/pdbmsvc.exe"
    if os.path.exists(os.path.join(hs.ROOT, msvc)):
        p = hs.wine([exe, "functions", msvc], extra_env=env, timeout=300)
        hs.eq(p.returncode, 0, f"functions ({p.stderr.decode(errors='replace')[-500:]})")
        hs.check(re.search(r"::|\(", p.stdout.decode(errors="replace")), "MSVC names undecorated (DbgHelp works)")
    planted = open(log).read() if os.path.exists(log) else ""
    hs.eq(planted, "", "no planted DLL was loaded")
