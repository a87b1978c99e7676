"""The 32-bit agent as `make` builds it (build/bin/hookscope-agent32.dll,
from the agent's sources for i686; agent/agent.h): an i386 DLL that
exports what the injector calls in the 64-bit agent, by the same
undecorated names (hookscope.exe finds them by name in the DLL's export
table: a stdcall export decorated as hs_agent_init@4 would not be found),
and that imports at load time only DLLs Windows takes from System32."""
import os
import re
import subprocess

import hs
from test_dll_search import KNOWN

AGENT64 = "build/bin/hookscope-agent.dll"
AGENT32 = "build/bin/hookscope-agent32.dll"


def objdump_p(prefix, path):
    return subprocess.run([f"{prefix}-w64-mingw32-objdump", "-p", os.path.join(hs.ROOT, hs.need(path))],
                          capture_output=True, text=True, check=True).stdout


def exports(dump):
    """The names of the export table's name pointer table."""
    table = dump.split("[Ordinal/Name Pointer] Table", 1)
    return set(re.findall(r"^\s*\[\s*\d+\] (\S+)$", table[1], re.M)) if len(table) == 2 else set()


def test_agent32_is_i386_with_the_agents_exports():
    d32 = objdump_p("i686", AGENT32)
    hs.check(re.search(r"file format pei-i386", d32), "hookscope-agent32.dll is a PE32 i386 image")
    want = exports(objdump_p("x86_64", AGENT64))
    hs.check("hs_agent_init" in want, f"the 64-bit agent exports hs_agent_init ({sorted(want)})")
    hs.eq(exports(d32), want, "the 32-bit agent's exports")


def test_agent32_imports_known_dlls_only():
    found = {m.lower() for m in re.findall(r"DLL Name: (\S+)", objdump_p("i686", AGENT32))}
    hs.check(found and found <= KNOWN, f"{AGENT32} imports DLLs that are not KnownDLLs: {sorted(found - KNOWN)}")
