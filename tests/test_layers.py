"""The layers of the tree (scripts/check_includes.py): the tree follows
them, a planted include that breaks them is caught by the check, and one
that reaches up the graph does not even compile (each layer's include path
holds only the folders it may see, Makefile SEES_*)."""
import os
import shutil
import subprocess
import sys
import tempfile

import hs

CHECK = os.path.join(hs.ROOT, "scripts", "check_includes.py")
FOLDERS = ["include", "hook", "agent", "sampler", "injector", "tests/unit", "tests/support", "bench"]


def run_check(root):
    return subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True, timeout=120)


def test_tree_follows_the_layers():
    p = run_check(hs.ROOT)
    hs.eq(p.stdout, "", "includes that break the layers")
    hs.eq(p.returncode, 0, "exit code of the check")


def planted(edits):
    """A copy of the scanned folders with `edits` ({path: line to add at
    the top}); returns the check's result on it."""
    with tempfile.TemporaryDirectory() as tmp:
        for d in FOLDERS:
            src = os.path.join(hs.ROOT, d)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(tmp, d), ignore=shutil.ignore_patterns("*.o", "*.d"))
        for path, line in edits.items():
            full = os.path.join(tmp, path)
            with open(full, encoding="utf-8") as f:
                text = f.read()
            with open(full, "w", encoding="utf-8") as f:
                f.write(line + "\n" + text)
        return run_check(tmp)


def test_planted_bad_includes_are_caught():
    cases = [
        ("sampler/codemap.c", '#include "injector/profile/profile.h"',
         "sampler/codemap.c:1: sampler may not include injector/profile/profile.h"),
        ("injector/trace/trace.c", '#include "injector/commands/options.h"',
         "injector/trace/trace.c:1: injector/trace may not include injector/commands/options.h"),
        ("hook/base/map.c", '#include "hook/pe/pe.h"',
         "hook/base/map.c:1: hook/base may not include hook/pe/pe.h"),
        ("agent/probes.c", '#include "sampler/sampler.h"',
         "agent/probes.c:1: agent may not include sampler/sampler.h"),
        ("injector/output/txt.c", '#include "injector/trace/trace.h"',
         "injector/output/txt.c:1: injector/output may not include injector/trace/trace.h"),
        ("sampler/etl/reader.c", '#include "../../hook/base/util.h"',
         "sampler/etl/reader.c:1: \"../../hook/base/util.h\" is not named from the top of the tree"),
        ("hook/engine/emit.c", '#include "emit.h"',
         "hook/engine/emit.c:1: \"emit.h\" is not named from the top of the tree"),
    ]
    for path, line, expect in cases:
        p = planted({path: line})
        hs.eq(p.returncode, 1, f"exit code of the check with {line} in {path}")
        out = p.stdout.splitlines()
        hs.eq(len(out), 1, f"lines of the check with {line} in {path}: {out}")
        hs.check(out[0].startswith(expect), f"with {line} in {path}: {out[0]!r}, expected {expect!r}")


def test_the_build_refuses_an_include_up_the_graph():
    farm = os.path.join(hs.BUILD, "inc", "sampler")
    hs.check(os.path.exists(os.path.join(farm, ".done")), "build/inc/sampler is not made (make test-build)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "up.c")
        with open(src, "w") as f:
            f.write('#include "injector/profile/profile.h"\nint x;\n')
        p = subprocess.run(["gcc", "-fsyntax-only", "-I" + farm, src], capture_output=True, text=True)
        hs.check(p.returncode != 0, "a sampler file including the injector compiled")
        hs.check("injector/profile/profile.h: No such file" in p.stderr, p.stderr)
        with open(src, "w") as f:
            f.write('#include "hook/base/util.h"\n#include "sampler/sampler.h"\nint x;\n')
        p = subprocess.run(["gcc", "-fsyntax-only", "-I" + farm, src], capture_output=True, text=True)
        hs.eq(p.returncode, 0, "a sampler file including what it may: " + p.stderr)
