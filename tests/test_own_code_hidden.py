"""hookscope's own code never appears in its output, and --time changes no
caller and no stack.

A function reached by a tail jump from a timed function returns into the
timing wrapper (hs_wrapper); its caller is the one that called the timed
function (as __builtin_return_address would say untraced), found through
the wrapper frames, however many timed functions tail-jumped in a row
(tailcall.exe: the CRT's __gcc_register_frame and __do_global_ctors end in
`jmp atexit`; cxxexc.exe: the C++ runtime's exception clean-up).
"""
import re

import hs

PROGRAMS = [("build/tests/tailcall.exe", ["tailcall.exe"]),
            ("build/tests/cxxexc.exe", ["cxxexc.exe", "libstdc++-6.dll"])]
OWN = re.compile(r"hs_wrapper|hs_probe|hs_on_|hookscope-agent", re.I)


def edges(t):
    return sorted((e["caller"], e["caller_module"], e["callee"], e["callee_module"], e["calls"])
                  for e in t.json["edges"])


def stacks(t):
    return sorted((s["function"], s["count"], s["truncated"], tuple(s["frames"])) for s in t.json["stacks"])


def test_no_output_names_hookscope():
    """With and without --time and --stacks: report.txt, report.json and
    entry-stacks.folded name no hookscope code and no address outside the
    target's modules (a stub or a trampoline); every caller is a function
    of a module; the edges with --time are those without, and the stacks
    with --time --stacks those with --stacks alone."""
    for exe, mods in PROGRAMS:
        hs.need(exe)
        name = exe.split("/")[-1]
        runs = {}
        for opts in ([], ["--time"], ["--stacks"], ["--time", "--stacks"]):
            t = hs.trace(exe, modules=mods, options=opts, name=f"own_{name}_{'_'.join(o[2:] for o in opts)}")
            hs.eq(t.rc, 0, f"{name} {opts} exit code ({t.stderr.decode(errors='replace').strip()})")
            for f in ("report.txt", "report.json", "entry-stacks.folded"):
                text = t.file(f)
                if text is None:
                    hs.check(f == "entry-stacks.folded" and "--stacks" not in opts, f"{name} {opts}: no {f}")
                    continue
                m = OWN.search(text)
                hs.check(not m, f"{name} {opts}: {f} names hookscope's code: "
                                f"...{text[max(0, m.start() - 120):m.end() + 40] if m else ''}...")
            for e in t.json["edges"]:
                hs.check(e["caller_module"] and not e["caller"].startswith("0x"),
                         f"{name} {opts}: a caller in no module: {e}")
            for s in t.json.get("stacks", []):
                hs.check(not any(re.match(r"^0x[0-9a-f]+$", fr) for fr in s["frames"]),
                         f"{name} {opts}: a frame in no module: {s['frames']}")
            runs[tuple(opts)] = t
        hs.eq(edges(runs[("--time",)]), edges(runs[()]), f"{name}: edges with --time")
        hs.eq(edges(runs[("--time", "--stacks")]), edges(runs[()]), f"{name}: edges with --time --stacks")
        hs.eq(stacks(runs[("--time", "--stacks")]), stacks(runs[("--stacks",)]), f"{name}: stacks with --time")
        hs.check(len(runs[("--stacks",)].json["stacks"]) > 10, f"{name}: stacks were captured")
