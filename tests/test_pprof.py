"""profile.pb.gz read by pprof itself (`go tool pprof`, Debian's
golang-go): every function it lists, with its flat and cum values, equals
what the test computes from the same run's report.json, exactly:

- samples (CPU samples): flat = the samples with the function as the
  leaf of report.json's sample_stacks, cum = the samples with it anywhere
  in the stack (once per stack); cpu = the same times the sampling
  interval (1e9 / rate_hz ns); wait: flat from wait_stacks;
- calls: flat = each hooked function's calls;
- wall (--time): flat = each timed function's self_ns.

On a real sampled run (no entry stacks: calls on caller -> callee
pairs), on a run with --time --stacks (calls and self time on the entry
stacks), and on every saved profile of tests/unit/profiles re-rendered by
`hookscope report DIR --format pprof` (which must equal the file the
native unit test keeps there, byte for byte: the same bytes from the
Windows build and the native one). `report DIR` writes the run's
profile.pb.gz again byte for byte, twice (no time of day in it).
"""
import gzip
import json
import os
import shutil
import subprocess

import hs

PROFILES = os.path.join(hs.ROOT, "tests", "unit", "profiles")
DEMO = "build/examples/demo.exe"


def go_pprof():
    if not shutil.which("go"):
        raise hs.Skip("go is not installed (make deps installs Debian's golang-go)")


def top(path, index):
    """`go tool pprof -top` of one sample type, every node: {name: (flat, cum)}
    (nodes of 0 flat and 0 cum, which another type's samples bring, left out)."""
    env = dict(os.environ, GOFLAGS="", GOCACHE=os.path.join(hs.OUT, "gocache"), PPROF_TMPDIR=hs.OUT)
    p = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=1000000", "-unit=ns",
                        f"-sample_index={index}", path], capture_output=True, text=True, timeout=300, env=env)
    hs.eq(p.returncode, 0, f"go tool pprof -sample_index={index} {path}: {p.stderr}")
    lines = p.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.split()[:2] == ["flat", "flat%"]) + 1
    got = {}
    for line in lines[start:]:
        flat, _, _, cum, _, name = line.split(None, 5)
        flat, cum = int(flat.removesuffix("ns")), int(cum.removesuffix("ns"))
        if flat or cum:
            hs.check(name not in got, f"{path}: {name} listed twice")
            got[name] = (flat, cum)
    return got


def frame_name(frame, rva):
    """A frame of report.json as pprof names its function: module!function
    (function@rva where report.json gives the rva: two functions of one
    name in a module), or module+0xoff / 0xaddr in no function."""
    mod, bang, fn = frame.partition("!")
    if not bang:
        return frame
    fn = fn.rpartition("+0x")[0] if "+0x" in fn else fn
    return f"{mod}!{fn}@{rva}" if rva else f"{mod}!{fn}"


def by_stacks(stacks, weight=1):
    """{name: (flat, cum)} of sampled stacks: flat by leaf, cum once per stack."""
    out = {}
    for s in stacks:
        rvas = s.get("frame_rvas") or [None] * len(s["frames"])
        names = [frame_name(f, r) for f, r in zip(s["frames"], rvas)]
        n = s["count"] * weight
        for i, name in enumerate(dict.fromkeys(names)):
            flat, cum = out.get(name, (0, 0))
            out[name] = (flat + (n if name == names[0] else 0), cum + n)
    return {k: v for k, v in out.items() if v != (0, 0)}


def flat_of(report, value):
    """{module!function: value(f)} of report.json's functions with a value
    (function@rva where two functions of a module share the name; two
    modules of one name are two modules)."""
    key = lambda f: (f.get("module_id", f["module"]), f["name"])
    named = {}
    for f in report["functions"]:
        named[key(f)] = named.get(key(f), 0) + 1
    out = {}
    for f in report["functions"]:
        v = value(f)
        if v:
            rva = f"@{f['rva']}" if named[key(f)] > 1 else ""
            name = f"{f['module']}!{f['name']}{rva}"
            out[name] = out.get(name, 0) + v
    return out


def flats(got):
    return {k: v[0] for k, v in got.items() if v[0]}


def check_profile(path, report, what):
    """Every sample type's top list equals report.json's figures."""
    s = report.get("sampling") or {}
    checked = []
    if s:
        period = round(1e9 / s["rate_hz"])
        hs.eq(top(path, "samples"), by_stacks(report.get("sample_stacks", [])), f"{what}: CPU samples, flat and cum")
        hs.eq(top(path, "cpu"), by_stacks(report.get("sample_stacks", []), period),
              f"{what}: CPU nanoseconds (samples x {period} ns), flat and cum")
        hs.eq(flats(top(path, "wait")), flats(by_stacks(report.get("wait_stacks", []))), f"{what}: wait samples, flat")
        checked.append("samples")
    if any(f.get("hooked") for f in report["functions"]):
        hs.eq(flats(top(path, "calls")), flat_of(report, lambda f: f.get("calls", 0)), f"{what}: calls, flat")
        checked.append("calls")
    if report["options"].get("time"):
        hs.eq(flats(top(path, "wall")), flat_of(report, lambda f: (f.get("time") or {}).get("self_ns", 0)),
              f"{what}: wall = self time, flat")
        checked.append("wall")
    return checked


def test_pprof_reads_saved_profiles_as_report_json():
    """Each saved profile: `report DIR --format pprof` (the Windows build)
    writes the bytes the native writer keeps beside it, and go tool pprof
    lists exactly report.json's figures."""
    go_pprof()
    names = sorted(d for d in os.listdir(PROFILES) if os.path.exists(os.path.join(PROFILES, d, "profile.pb.gz")))
    hs.check(len(names) >= 5, f"saved profiles with profile.pb.gz: {names}")
    for d in names:
        p = hs.hookscope(["report", os.path.join("tests", "unit", "profiles", d), "--format", "pprof"], timeout=120)
        hs.eq(p.returncode, 0, f"{d}: report --format pprof ({p.stderr!r})")
        with open(os.path.join(PROFILES, d, "profile.pb.gz"), "rb") as f:
            hs.check(p.stdout == f.read(), f"{d}: the Windows build's bytes = the native writer's")
        with open(os.path.join(PROFILES, d, "report.json")) as f:
            report = json.load(f)
        if d == "edgecases":
            continue   # counts of 2^64 - 1: pprof's values are int64 (written as INT64_MAX)
        check_profile(os.path.join(PROFILES, d, "profile.pb.gz"), report, d)


def run_and_rerender(name, args, options):
    hs.need(DEMO)
    t = hs.trace(DEMO, args, options=options, name=name)
    hs.eq(t.rc, 0, f"{name}: run")
    path = os.path.join(hs.ROOT, t.out, "profile.pb.gz")
    with open(path, "rb") as f:
        run_bytes = f.read()
    hs.check(gzip.decompress(run_bytes)[:1] == b"\x0a", f"{name}: a gzip'd protobuf, sample_type first")
    again = []
    for k in range(2):
        out = hs.outdir(f"{name}-again{k}")
        p = hs.hookscope(["report", "-q", t.out, "-o", out], timeout=300)
        hs.eq(p.returncode, 0, f"{name}: report ({p.stderr!r})")
        with open(os.path.join(hs.ROOT, out, "profile.pb.gz"), "rb") as f:
            again.append(f.read())
    hs.check(again[0] == run_bytes and again[1] == run_bytes,
             f"{name}: report DIR writes the run's profile.pb.gz again, byte for byte, twice")
    return t, path, os.path.join(hs.ROOT, out, "profile.pb.gz")


def test_pprof_of_a_sampled_run():
    """fib(40) sampled at 1000 Hz (most samples land in the hooks of so
    small a function, hookscope's own, left out: fib(38) gave 8 CPU
    samples on a loaded machine): the CPU samples and their nanoseconds,
    the wait samples and the exact calls (on caller -> callee pairs) as
    report.json has them, in the run's file and in report's re-render."""
    go_pprof()
    t, path, again = run_and_rerender("pprof-sampled", ["40"], ["--sample-rate", "1000"])
    hs.check(t.json["sampling"]["samples"] >= 10, f"{t.json['sampling']['samples']} CPU samples")
    for p in (path, again):
        hs.eq(check_profile(p, t.json, p), ["samples", "calls"], "sample types checked")
    calls = top(path, "calls")
    fib = calls.get("demo.exe!fib")
    hs.check(fib and fib[0] > 100000000, f"fib's calls in pprof: {fib}")


def test_pprof_of_a_timed_run_with_entry_stacks():
    """--time --stacks: calls and self time on the entry stacks, each
    function's flat equal to its calls and self_ns."""
    go_pprof()
    t, path, again = run_and_rerender("pprof-time", [], ["--time", "--stacks=8", "--no-sample"])
    hs.check(t.json.get("entry_stacks") or os.path.exists(os.path.join(hs.ROOT, t.out, "entry-stacks.folded")),
             "entry stacks captured")
    for p in (path, again):
        hs.eq(check_profile(p, t.json, p), ["calls", "wall"], "sample types checked")
