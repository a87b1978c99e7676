"""The session's layout is one for a 64-bit and a 32-bit agent
(hookscope.exe, always 64-bit, reads both; issue 24): every record of
hookscope/session.h, compiled with debug information by the x86-64 and the
i686 mingw compilers (tests/support/session_layout_probe.c), has the same
size and every field, nested ones too, the same offset. The record sizes
are also held by _Static_assert in session.h, in every build of both."""
import os
import re
import subprocess

import hs

PROBE = "tests/support/session_layout_probe.c"
RECORDS = {"hs_session_header", "hs_module_rec", "hs_func_rec", "hs_fn_entry", "hs_frame32_entry", "hs_thread_slot", "hs_region_hdr",
           "hs_tl_event", "hs_fblock", "hs_edge_rec", "hs_stack_rec", "hs_time_rec", "hs_shadow_rec",
           "hs_agent_public", "hs_capacity"}
DIE = re.compile(r"\s*<(\d+)><[0-9a-f]+>: Abbrev Number: \d+(?: \((\w+)\))?")
ATTR = re.compile(r"\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)")


def compiled(prefix):
    obj = os.path.join(hs.OUT, f"session_layout_{prefix}.o")
    os.makedirs(hs.OUT, exist_ok=True)
    cc = subprocess.run([f"{prefix}-w64-mingw32-gcc", "-std=gnu11", "-g", "-c", "-Iinclude", PROBE, "-o", obj],
                        cwd=hs.ROOT, capture_output=True, text=True)
    hs.eq(cc.returncode, 0, f"{prefix} compile of the probe: {cc.stderr[-1500:]}")
    dump = subprocess.run([f"{prefix}-w64-mingw32-objdump", "--dwarf=info", obj], capture_output=True, text=True,
                          check=True).stdout
    return layout(dump)


def name(attrs):
    return attrs.get("DW_AT_name", "").split(":")[-1].strip()


def layout(dump):
    """Every struct and union in the order of the debug information, with
    its size and its members' (name, offset); anonymous ones too (a nested
    record's fields are laid out as much as its parent's)."""
    dies = []
    for line in dump.splitlines():
        m = DIE.match(line)
        if m:
            dies.append((int(m.group(1)), m.group(2) or "", {}))
            continue
        m = ATTR.match(line)
        if m and dies:
            dies[-1][2][m.group(1)] = m.group(2).strip()
    records, stack = [], []
    for depth, tag, attrs in dies:
        del stack[depth:]
        stack.append(tag)
        if tag in ("DW_TAG_structure_type", "DW_TAG_union_type"):
            records.append([name(attrs), attrs.get("DW_AT_byte_size"), []])
            stack[-1] = records[-1]
        elif tag == "DW_TAG_member" and len(stack) >= 2 and isinstance(stack[-2], list):
            stack[-2][2].append((name(attrs), attrs.get("DW_AT_data_member_location")))
    return records


def test_one_layout_for_both_agents():
    wide, narrow = compiled("x86_64"), compiled("i686")
    named = {r[0] for r in wide if r[0] in RECORDS}
    hs.eq(named, RECORDS, "records found in the x86-64 debug information")
    fields = sum(len(r[2]) for r in wide)
    hs.check(fields > 200, f"only {fields} fields found: the debug information was not read")
    hs.eq(len(narrow), len(wide), "records in the i686 and x86-64 builds")
    for w, n in zip(wide, narrow):
        hs.eq(n[0], w[0], "records in the same order")
        hs.eq(n[1], w[1], f"{w[0] or 'a nested record'}'s size (i686, x86-64)")
        diff = [(a, b) for a, b in zip(w[2], n[2]) if a != b]
        hs.eq(diff, [], f"{w[0] or 'a nested record'}'s fields (x86-64, i686) that differ")
        hs.eq(len(n[2]), len(w[2]), f"{w[0]}'s field count")
