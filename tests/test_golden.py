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
    compare(case, files)
    check_report_recreates(case, t.out)


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
