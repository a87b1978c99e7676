"""Whole-file golden outputs: report.txt, report.json, entry-stacks.folded
and `functions` of the demo and of test programs, compared byte for byte
with tests/golden/<case>/ after masking what differs from run to run
(pid, wall and install times, durations, build timestamps, the checkout's
path). Anything else that changes in these files is a change of
hookscope's behaviour and must be looked at: after a deliberate change,
regenerate with `tests/run.py --regen-golden -k test_golden` and review
the diff before committing it. The runs take no samples (--no-sample):
where sampling lands differs from run to run; tests/test_sampler.py and
the unit tests' saved sampled profile cover the sampled outputs.

Every case also checks that `hookscope report DIR` re-creates every file
the run wrote (flamegraph.svg, profile.speedscope.json, callgrind.out
too) byte for byte, unmasked, from the run's report.json alone.

With --time, durations, the time table's order (by total time) and the
histograms vary from run to run: durations are masked, the time table's
rows are sorted by their (masked) text, and of the histograms only the
heading stays (which functions have the most time varies too).
"""
import os
import re

import hs

GOLDEN = os.path.join(hs.ROOT, "tests", "golden")
REGEN = os.environ.get("HS_REGEN_GOLDEN") == "1"

DEMO = "build/examples/demo.exe"
T = hs.TARGETS

# name: (hookscope arguments before "--", program and its arguments)
CASES = {
    "demo": ([], [DEMO]),
    "demo_noedges": (["--no-edges"], [DEMO]),
    "demo_stacks": (["--stacks=6", "--stack-every", "3"], [DEMO]),
    "demo_time": (["--time", "--stacks=4"], [DEMO]),
    "folded": (["--stacks=5"], [f"{T}/folded.exe"]),
    "tailcall_time": (["--time", "--stacks"], [f"{T}/tailcall.exe"]),
    "cxxexc_time": (["--time", "--stacks=8"], [f"{T}/cxxexc.exe"]),
    "lateload": (["-m", "lateload.exe", "-m", "latedll.dll", "--stacks=4"], [f"{T}/lateload.exe"]),
    "filters": (["-f", "parse_*", "-x", "parse_number"], [DEMO]),
}

DUR = r"\d+(?:\.\d+)? (?:ns|us|ms|s)"


def win_root():
    """The checkout's path as Wine shows it (Z:\\...)."""
    return "Z:" + hs.ROOT.replace("/", "\\")


def mask_paths(text):
    root = win_root()
    text = text.replace(root.replace("\\", "\\\\"), "<ROOT>").replace(root, "<ROOT>")
    return text.replace(hs.ROOT, "<ROOT>")


def mask_txt(text):
    text = re.sub(r"(?m)^(pid +)\d+$", r"\1<pid>", text)
    text = re.sub(r"(?m)^(wall time +)[\d.]+ s$", r"\1<s>", text)
    # module table: the install time column
    text = re.sub(r"(?m)^(.* 0x[0-9a-f]+ +)\d+\.\d+ s$", r"\1<s>", text)
    out, section = [], None
    rows = []
    for line in text.split("\n"):
        if line.startswith("time: "):
            section = "time"
        elif line.startswith("durations of the "):
            section = "hist"
        elif line.startswith("entry stacks: ") or line.startswith("call graph: "):
            section = None
        if section == "time" and re.match(r"^ +\d+ +" + DUR, line):
            rows.append(re.sub(" +" + DUR, " <d>", line))
            continue
        if rows and section != "time" or (rows and not re.match(r"^ +\d+ +" + DUR, line)):
            out.extend(sorted(rows))
            rows = []
        if section == "hist" and not line.startswith("durations of the "):
            continue   # which functions have the most time varies too
        out.append(re.sub(" +" + DUR, " <d>", line) if section == "time" else line)
    out.extend(sorted(rows))
    return mask_paths("\n".join(out))


def mask_json(text):
    for key in ("pid", "wall_time_s", "install_s", "timestamp", "tsc_hz", "total_ns", "self_ns",
                "min_ns", "max_ns", "avg_ns", "sum_ns"):
        text = re.sub(r'"%s": [0-9.e+]+' % key, '"%s": 0' % key, text)
    text = re.sub(r'"hist": \[[^\]]*\]', '"hist": []', text)
    return mask_paths(text)


def mask_weights(text):
    """entry-time.folded: the stacks stay, their time weights (and so
    their order, heaviest first) vary."""
    lines = re.sub(r"(?m) \d+$", " <ns>", text).split("\n")
    return mask_paths("\n".join(sorted(l for l in lines if l) + [""]))


MASKS = {"report.txt": mask_txt, "report.json": mask_json, "entry-stacks.folded": mask_paths,
         "entry-time.folded": mask_weights, "functions.txt": mask_paths}


def compare(case, files):
    """files: {name: text}; compare each with tests/golden/case/name."""
    d = os.path.join(GOLDEN, case)
    if REGEN:
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f not in files:
                os.remove(os.path.join(d, f))
        for name, text in files.items():
            with open(os.path.join(d, name), "w", encoding="utf-8", newline="") as f:
                f.write(MASKS[name](text))
        return
    want = sorted(os.listdir(d)) if os.path.isdir(d) else []
    hs.eq(sorted(files), want, f"{case}: files written")
    for name, text in files.items():
        with open(os.path.join(d, name), encoding="utf-8", newline="") as f:
            expected = f.read()
        got = MASKS[name](text)
        if got != expected:
            gl, el = got.split("\n"), expected.split("\n")
            for i, (g, e) in enumerate(zip(gl + [""] * len(el), el + [""] * len(gl))):
                if g != e:
                    raise AssertionError(f"{case}/{name} line {i + 1}:\n  got:      {g!r}\n"
                                         f"  expected: {e!r}\n(regenerate with tests/run.py --regen-golden "
                                         "after a deliberate change)")
            raise AssertionError(f"{case}/{name} differs")


def check_report_recreates(case, out):
    """`hookscope report OUT -o OUT2` writes the same files, byte for byte."""
    again = hs.outdir("golden-" + case + "-again")
    p = hs.hookscope(["report", "-q", out, "-o", again], timeout=300)
    hs.eq(p.returncode, 0, f"{case}: report exit code ({p.stderr.decode(errors='replace')})")
    src, dst = os.path.join(hs.ROOT, out), os.path.join(hs.ROOT, again)
    hs.eq(sorted(os.listdir(dst)), sorted(os.listdir(src)), f"{case}: the files report writes")
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), "rb") as a, open(os.path.join(dst, name), "rb") as b:
            hs.check(a.read() == b.read(), f"{case}/{name}: report wrote it differently")


def run_case(case):
    opts, prog = CASES[case]
    hs.need(prog[0])
    # samples differ from run to run: the golden runs take none
    t = hs.trace(prog[0], args=prog[1:], options=["--no-sample"] + opts, name="golden-" + case)
    hs.eq(t.rc, 0, f"{case}: exit code ({t.proc.stderr.decode(errors='replace')})")
    files = {}
    for name in ("report.txt", "report.json", "entry-stacks.folded", "entry-time.folded"):
        text = t.file(name)
        if text is not None:
            files[name] = text
    if "entry-time.folded" in files:
        files["entry-time.folded"] = time_lines_left_out(t, files["entry-stacks.folded"], files["entry-time.folded"])
    compare(case, files)
    check_report_recreates(case, t.out)


def time_lines_left_out(t, stacks, timed):
    """entry-time.folded leaves out a stack whose share of its function's
    self time rounds to 0 ns (a tiny function whose self time, less the
    probes' calibrated cost, is 0 in one run and not in the next): check
    that exactly those are left out, by the writer's rule (self_ns x the
    stack's captures / the function's captures, rounded), and put them
    back with weight 0 so that the comparison with the golden sees every
    stack."""
    self_ns = {}
    for f in t.json["functions"]:
        if f.get("time"):
            self_ns[f"{f['module']}!{f.get('label') or f['name']}"] = f["time"]["self_ns"]
    rows = [line.rsplit(" ", 1) for line in stacks.splitlines() if line]
    leaf = lambda stack: stack.rsplit(";", 1)[-1]
    captures = {}
    for stack, n in rows:
        captures[leaf(stack)] = captures.get(leaf(stack), 0) + int(n)
    written = {line.rsplit(" ", 1)[0] for line in timed.splitlines() if line}
    zero = [stack for stack, n in rows
            if (self_ns.get(leaf(stack), 0) * int(n) + captures[leaf(stack)] // 2) // captures[leaf(stack)] == 0]
    hs.eq(sorted({stack for stack, _ in rows} - written), sorted(zero),
          "entry-time.folded leaves out exactly the stacks whose share of the self time is 0 ns")
    return "".join(sorted(line + "\n" for line in timed.splitlines() + [z + " 0" for z in zero] if line))


def test_golden_demo():
    run_case("demo")


def test_golden_demo_noedges():
    run_case("demo_noedges")


def test_golden_demo_stacks():
    run_case("demo_stacks")


def test_golden_demo_time():
    run_case("demo_time")


def test_golden_folded():
    run_case("folded")


def test_golden_tailcall_time():
    run_case("tailcall_time")


def test_golden_cxxexc_time():
    run_case("cxxexc_time")


def test_golden_lateload():
    run_case("lateload")


def test_golden_filters():
    run_case("filters")


def test_golden_functions():
    hs.need(DEMO)
    p = hs.hookscope(["functions", DEMO])
    hs.eq(p.returncode, 0, "functions exit code")
    compare("functions", {"functions.txt": p.stdout.decode()})
