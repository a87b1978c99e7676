#!/usr/bin/env python3
"""Check that every include follows hookscope's layers.

    scripts/check_includes.py [--root DIR]

Every `#include "..."` in the product (include/, hook/, agent/, sampler/,
injector/) and in the native tests and benchmarks (tests/unit/,
tests/support/, bench/) names its header from the top of the tree:
`hookscope/session.h` (include/ is the root of `hookscope/`), `hook/pe/pe.h`,
`sampler/etl/etl.h`, `injector/profile/profile.h`; never `../`, never a
bare file name. And a folder includes only what it may see:

    include <- hook <- {agent, sampler} <- injector

with these folders inside them (a folder may always include its own):

    hook/base     nothing            hook/pe       base
    hook/unwind   base, pe           hook/suspend  base
    hook/engine   hookscope, base, pe, unwind, suspend
    agent         hookscope, hook/*
    sampler       hook/*, sampler/etl            sampler/etl   hook/base
    sampler/suspend, sampler/etw     hook/*, sampler, (etw: sampler/etl)
    injector/symbols   hookscope, hook/*
    injector/profile   hookscope, hook/*, sampler, sampler/etl, injector/symbols
    injector/output    hookscope, hook/*, injector/profile
    injector/dtrace    hook/*, injector/output
    injector/trace     hookscope, hook/*, sampler/*, injector/{profile, symbols, output}
    injector/commands  everything above (never included back: trace takes
                       its own config, trace/config.h)
    injector/main.c    hook/*, injector/commands

The build enforces the first line (each layer compiles with an include
path that holds only the folders it may see, Makefile: SEES_*); this
check adds the folders inside the layers and the spelling. Prints one
line per include that breaks a rule, and exits 1 if there is any.
"""
import argparse
import os
import re
import sys

SCANNED = ["include", "hook", "agent", "sampler", "injector", "tests/unit", "tests/support", "bench"]
ROOTS = {"hookscope", "hook", "agent", "sampler", "injector", "tests", "bench"}
HOOK = {"hook/base", "hook/pe", "hook/unwind", "hook/suspend", "hook/engine"}
SAMPLER = {"sampler", "sampler/etl", "sampler/suspend", "sampler/etw"}
INJECTOR = {"injector/symbols", "injector/profile", "injector/output", "injector/dtrace", "injector/trace",
            "injector/commands"}

# what each folder may include besides itself
ALLOWED = {
    "hookscope": set(),
    "hook/base": set(),
    "hook/pe": {"hook/base"},
    "hook/unwind": {"hook/base", "hook/pe"},
    "hook/suspend": {"hook/base"},
    "hook/engine": {"hookscope", "hook/base", "hook/pe", "hook/unwind", "hook/suspend"},
    "agent": {"hookscope"} | HOOK,
    "sampler": HOOK | {"sampler/etl"},
    "sampler/etl": {"hook/base"},
    "sampler/suspend": HOOK | {"sampler"},
    "sampler/etw": HOOK | {"sampler", "sampler/etl"},
    "injector/symbols": {"hookscope"} | HOOK,
    "injector/profile": {"hookscope", "sampler", "sampler/etl", "injector/symbols"} | HOOK,
    "injector/output": {"hookscope", "injector/profile"} | HOOK,
    "injector/dtrace": {"injector/output"} | HOOK,
    "injector/trace": {"hookscope", "injector/profile", "injector/symbols", "injector/output"} | HOOK | SAMPLER,
    "injector/commands": {"hookscope"} | HOOK | SAMPLER | INJECTOR,
    "injector": {"injector/commands"} | HOOK,
    "injector/launcher": set(),
}
UNRESTRICTED = ("tests/", "bench/", "bench")

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(path):
    """The folder a file belongs to, as the rules name it: its directory
    (include/hookscope is "hookscope", as it is included)."""
    d = os.path.dirname(path)
    return d[len("include/"):] if d.startswith("include/") else d


def folder_of_include(inc):
    """The folder of an included header, as the rules name it."""
    return os.path.dirname(inc)


def header_path(root, inc):
    first = inc.split("/", 1)[0]
    return os.path.join(root, "include", inc) if first == "hookscope" else os.path.join(root, inc)


def check(root):
    problems = []
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".c", ".h", ".S", ".cpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
                for no, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = f"{rel}:{no}"
                    if ".." in inc.split("/") or inc.split("/", 1)[0] not in ROOTS or "/" not in inc:
                        problems.append(f"{where}: \"{inc}\" is not named from the top of the tree "
                                        f"(e.g. \"hook/base/util.h\", \"hookscope/session.h\")")
                        continue
                    if not os.path.isfile(header_path(root, inc)):
                        problems.append(f"{where}: \"{inc}\" does not exist")
                        continue
                    src = folder_of(rel)
                    if src.startswith(UNRESTRICTED) or src in UNRESTRICTED:
                        continue
                    dst = folder_of_include(inc)
                    if dst == src:
                        continue
                    allowed = ALLOWED.get(src)
                    if allowed is None:
                        problems.append(f"{where}: folder {src} has no rule in scripts/check_includes.py")
                    elif dst not in allowed:
                        may = ", ".join(sorted(allowed)) or "nothing outside itself"
                        problems.append(f"{where}: {src} may not include {inc} (it may include {may})")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    problems = check(a.root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layers", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
