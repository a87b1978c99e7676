"""Helpers for hookscope's tests: run programs under Wine, run hookscope,
read its reports. Python 3 standard library only.

Paths given to Windows programs are relative to the repository root (the
cwd of every run), so Wine sees them as paths on its Z: drive.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from winekeeper import ENV, WINE64, WineServer, loader  # noqa: E402,F401  (scripts/winekeeper.py)

BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "test-out")
TARGETS = "build/tests"
FIXTURES = "build/fixtures"


class Skip(Exception):
    """Raised by a test that cannot run here (the reason is printed)."""


def env():
    """The environment of every Wine run: quiet, no Mono or Gecko prompts."""
    return dict(ENV)


def started(cmd, label, input, timeout, cwd, e, lost=None):
    """Run cmd (a Windows program under Wine, or ./hookscope); returns
    CompletedProcess (bytes).

    Wine now and then loses a new process in its own start-up, before the
    program ran (hookscope's CreateProcess then fails with 1359 and starts
    it again: test_rights.test_start_tried_again_when_the_system_start_up_fails;
    from the command line the process ends with a failure status and no
    output at all: an untraced demo.exe once, `hookscope attach --help`
    with status 1 once, in CI-like runs). Such a run is started again, up to
    3 times as hookscope does, and each retry is said on stderr (the
    runner prints it as a note under the test's line); a program that fails
    silently every time is returned as it failed. lost: the one status
    that can be such a loss (None: any failure)."""
    for attempt in range(3):
        p = subprocess.run(cmd, cwd=cwd, input=input, capture_output=True, timeout=timeout, env=e)
        if p.returncode == 0 or p.stdout or p.stderr or (lost is not None and p.returncode != lost):
            break
        print(f"hs.wine: {label} ended with status {p.returncode} and no output (try {attempt + 1} of 3)",
              file=sys.stderr)
    return p


def wine(args, input=None, timeout=120, cwd=ROOT, extra_env=None):
    """Run a Windows program untraced (started(): Wine's start-up losses
    are started again); returns CompletedProcess (bytes)."""
    e = env()
    e.update(extra_env or {})
    return started([loader(args[0], cwd)] + list(args), args[0], input, timeout, cwd, e)


def rate_reported(t, asked):
    """The rate a Trace's report.json should give for --sample-rate
    `asked`: that one, or, where the sampler's rounds could not keep half
    of it (a loaded machine: its thread waits behind the target's), the
    rate it reached, which its reason then names."""
    s = t.json["sampling"]
    if f"asked {asked} Hz, reached" in s.get("rate_reason", ""):
        check(s["rate_hz"] < asked / 2, f"a rate reached below half of {asked} Hz: {s['rate_hz']}")
        return s["rate_hz"]
    return asked


def hookscope(args, input=None, timeout=300, cwd=ROOT, extra_env=None):
    """Run ./hookscope with args (started(): Wine's start-up losses are
    started again); returns CompletedProcess (bytes)."""
    e = env()
    e.update(extra_env or {})
    # (hookscope's own statuses are 0, 2, 125 and the target's: a silent 1
    # is Wine's loss, or a target that failed silently, started again alike)
    return started([os.path.join(ROOT, "hookscope")] + list(args), "hookscope " + " ".join(map(str, args[:2])), input,
                   timeout, cwd, e, lost=1)


def outdir(name):
    """A fresh output directory for one test, as a path relative to ROOT."""
    p = os.path.join(OUT, name)
    shutil.rmtree(p, ignore_errors=True)
    return os.path.relpath(p, ROOT)


class Trace:
    """One `hookscope run` and what it wrote (out: relative to ROOT)."""

    def __init__(self, proc, out):
        self.proc = proc
        self.out = out
        self.json = None
        self.txt = None
        jp = os.path.join(ROOT, out, "report.json")
        if os.path.exists(jp):
            with open(jp, encoding="utf-8") as f:
                self.json = json.load(f)
            with open(os.path.join(ROOT, out, "report.txt"), encoding="utf-8") as f:
                self.txt = f.read()

    def file(self, name):
        """Another file the trace wrote (None if missing)."""
        p = os.path.join(ROOT, self.out, name)
        if not os.path.exists(p):
            return None
        with open(p, encoding="utf-8") as f:
            return f.read()

    @property
    def rc(self):
        return self.proc.returncode

    @property
    def stdout(self):
        return self.proc.stdout

    @property
    def stderr(self):
        return self.proc.stderr

    def functions(self, module=None):
        assert self.json, "no report.json was written; stderr: " + self.stderr.decode(errors="replace")
        return [f for f in self.json["functions"] if module is None or f["module"].lower() == module.lower()]

    def calls(self, module=None, hooked_only=True):
        """{function name: calls} (names that repeat are summed)."""
        d = {}
        for f in self.functions(module):
            if hooked_only and not f["hooked"]:
                continue
            d[f["name"]] = d.get(f["name"], 0) + f["calls"]
        return d

    def base_calls(self, module=None):
        """Like calls(), with gcc's clone suffixes (.constprop.0, .isra.0,
        .part.0, .cold) folded into the function they were cloned from."""
        d = {}
        for n, c in self.calls(module).items():
            b = n.split(".")[0] if not n.startswith(".") else n
            d[b] = d.get(b, 0) + c
        return d

    def module(self, name):
        for m in self.json["modules"]:
            if m["name"].lower() == name.lower():
                return m
        raise AssertionError(f"module {name} not in report: {[m['name'] for m in self.json['modules']]}")


def trace(target, args=(), modules=(), options=(), name=None, input=None, timeout=300, cwd=ROOT, extra_env=None):
    """hookscope run [-m M]... [options] -o OUT -- target args...
    (cwd relative to ROOT or absolute; target as seen from cwd; extra_env
    added to hookscope's environment)"""
    out = outdir(name or os.path.basename(target))
    cwd = os.path.join(ROOT, cwd)
    cmd = ["run", "-q", "-o", os.path.relpath(os.path.join(ROOT, out), cwd)]
    for m in modules:
        cmd += ["-m", m]
    cmd += list(options) + ["--", target] + list(args)
    return Trace(hookscope(cmd, input=input, timeout=timeout, cwd=cwd, extra_env=extra_env), out)


def fixture(name):
    """The run description of a fixture from tests/fixtures/fixtures.json;
    skips the test when the fixture is not built."""
    with open(os.path.join(ROOT, "tests", "fixtures", "fixtures.json")) as f:
        runs = {r["name"]: r for r in json.load(f)["runs"]}
    r = runs[name]
    prog = os.path.join(ROOT, r["cwd"], r["program"])
    if r["program"].lower() != "cmd.exe" and not os.path.exists(prog):
        raise Skip(f"fixture {name} is not built (make fixtures)")
    return r


def cyg_counts(fx, extra_args=None):
    """Run a fixture's -finstrument-functions twin; returns
    ({function: calls}, {(caller, callee): calls}) by name."""
    cwd = os.path.join(ROOT, fx["cwd"])
    # a file of this test's own: tests run two at a time, several of them
    # on the same fixture
    out = os.path.join(OUT, f"{fx['name']}.{os.getpid()}.cyg.txt")
    os.makedirs(OUT, exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    stdin = None
    if fx.get("stdin"):
        with open(os.path.join(cwd, fx["stdin"]), "rb") as f:
            stdin = f.read()
    args = extra_args if extra_args is not None else fx.get("instrumented_args", fx["args"])
    wine([fx["instrumented"]] + list(args), input=stdin, cwd=cwd, extra_env={"HS_CYG_OUT": out}, timeout=300)
    named = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "support", "cyg_names.py"),
                            os.path.join(cwd, fx.get("instrumented_image", fx["instrumented"])), out],
                           capture_output=True, text=True, check=True).stdout
    funcs, edges = {}, {}
    for line in named.splitlines():
        p = line.split()
        if p and p[0] == "F":
            funcs[p[1]] = int(p[2])
        elif p and p[0] == "E":
            edges[(p[1], p[2])] = int(p[3])
    return funcs, edges


def _cyg_names_list(exe, flag):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "support", "cyg_names.py"), exe, flag],
                         capture_output=True, text=True, check=True).stdout
    return {line.split(None, 1)[1] for line in out.splitlines() if line[:2] in ("I ", "L ")}


def instrumented_functions(fx):
    """The names of every function of a fixture's -finstrument-functions
    twin that calls the counting runtime: called by the run or not (a
    function cyg_counts() does not list was called 0 times)."""
    return _cyg_names_list(os.path.join(ROOT, fx["cwd"], fx.get("instrumented_image", fx["instrumented"])),
                           "--instrumented")


def loops_to_entry(fx):
    """The names of the functions of a fixture's plain build whose body
    jumps back to their entry: a hook there counts each such jump too
    (README: `loops-to-entry`), the twin only the calls."""
    return _cyg_names_list(os.path.join(ROOT, fx["cwd"], fx.get("plain_image", fx["program"])), "--loops-to-entry")


def need(path):
    """Skip the test if a built file is missing (e.g. fixtures not built)."""
    if not os.path.exists(os.path.join(ROOT, path)):
        raise Skip(f"{path} is not built")
    return path


def eq(actual, expected, what=""):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}" if what else
                             f"expected {expected!r}, got {actual!r}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# --- added for the real-program, attach and late-load tests ----------------

def functions_listing(path, timeout=120):
    """`hookscope functions PATH` parsed: ({rva: (size, hookable, name)},
    (total, hookable) from the summary line). PATH as Windows sees it
    (relative to ROOT, or a Windows path such as a report's module path)."""
    import re
    p = hookscope(["functions", path], timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"hookscope functions {path}: exit {p.returncode}: "
                             + p.stderr.decode(errors="replace").strip())
    rows = {}
    summary = None
    for line in p.stdout.decode(errors="replace").splitlines():
        m = re.match(r"^0x([0-9a-f]+)\s+(\d+)\s+\S+\s+(yes \(\S+\)|yes|no: \S+)\s+\S+\s+(.+)$", line)
        if m:
            rows[int(m.group(1), 16)] = (int(m.group(2)), m.group(3).startswith("yes"), m.group(4))
            continue
        m = re.match(r"^(\d+) functions, (\d+) hookable", line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
    if summary is None:
        raise AssertionError(f"hookscope functions {path}: no summary line")
    return rows, summary


class Process:
    """A Windows program started untraced under Wine with pipes, for
    attaching to: lines of its stdout can be read with a timeout, a line
    can be sent to its stdin, and it is killed by close() (use `with`)."""

    def __init__(self, args, cwd=ROOT, new_session=False):
        """new_session: the program gets a process group of its own, so a
        Ctrl+C sent to another group does not reach it."""
        import queue
        import threading
        self.proc = subprocess.Popen([loader(args[0], cwd)] + list(args), cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                                     start_new_session=new_session)
        self.lines = queue.Queue()
        self.err = []

        def pump(f, sink, at_end):
            for line in iter(f.readline, b""):
                sink(line)
            at_end()

        self._t = [threading.Thread(target=pump, daemon=True,
                                    args=(self.proc.stdout, self.lines.put, lambda: self.lines.put(None))),
                   threading.Thread(target=pump, daemon=True,
                                    args=(self.proc.stderr, self.err.append, lambda: None))]
        for t in self._t:
            t.start()

    def readline(self, timeout=30):
        """The next stdout line (text, without the line end); fails after
        `timeout` seconds or at end of output."""
        import queue
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output line within {timeout} s (the program hangs?); {self.linux_state()}")
        if line is None:
            raise AssertionError(f"the program ended (exit {self.proc.poll()}) instead of printing a line; "
                                 f"stderr {b''.join(self.err)!r}")
        return line.decode(errors="replace").rstrip("\r\n")

    def rest(self, timeout=60):
        """Every stdout line up to the end of output (text); fails if the
        output does not end within `timeout` seconds."""
        import queue
        deadline, lines = time.time() + timeout, []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.time()))
            except queue.Empty:
                raise AssertionError(f"output did not end within {timeout} s (the program hangs?); "
                                     f"so far {lines[-3:]!r}")
            if line is None:
                return lines
            lines.append(line.decode(errors="replace").rstrip("\r\n"))

    def linux_state(self):
        """How Linux sees the program's threads, e.g. "threads: 10 S, 2 T"
        (T: stopped; Wine's ReadProcessMemory attaches with ptrace, and a
        SIGSTOP its watchdog gave up on stops the whole process)."""
        import collections
        import glob
        states = collections.Counter()
        for stat in glob.glob(f"/proc/{self.proc.pid}/task/*/stat"):
            try:
                states[open(stat).read().rsplit(")", 1)[1].split()[0]] += 1
            except (OSError, IndexError):
                pass
        return "threads: " + (", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "none")

    def send(self, data=b"\n"):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def alive(self):
        return self.proc.poll() is None

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the program did not exit within {timeout} s")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        # A pipe still being read is left to its (daemon) reader: closing it
        # would wait for the reader's lock, that is for end-of-file, which a
        # process that inherited the pipe can hold off for ever.
        for f, t in ((self.proc.stdout, self._t[0]), (self.proc.stderr, self._t[1])):
            t.join(timeout=2)
            if not t.is_alive():
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def attach(pid, options=(), name="attach", timeout=60):
    """hookscope attach PID -q -o OUT [options]; a Trace. A hookscope that
    does not finish within `timeout` seconds is killed and fails the test."""
    out = outdir(name)
    cmd = ["attach", str(pid), "-q", "-o", out] + list(options)
    try:
        proc = hookscope(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"hookscope {' '.join(cmd)} did not finish within {timeout} s")
    return Trace(proc, out)


def pe_file(pe_path):
    """A PE file's bytes (path relative to ROOT), its ImageBase and its
    sections as (virtual size, rva, raw size, file offset, characteristics)."""
    with open(os.path.join(ROOT, pe_path), "rb") as f:
        data = f.read()
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    nsec, optsize = struct.unpack_from("<H", data, pe + 6)[0], struct.unpack_from("<H", data, pe + 20)[0]
    opt = pe + 24
    base = (struct.unpack_from("<I", data, opt + 28)[0] if data[opt:opt + 2] == b"\x0b\x01"   # PE32
            else struct.unpack_from("<Q", data, opt + 24)[0])
    sections = [struct.unpack_from("<IIII", data, opt + optsize + 40 * i + 8) +
                struct.unpack_from("<I", data, opt + optsize + 40 * i + 36) for i in range(nsec)]
    return data, base, sections


def image_base(pe_path):
    """The ImageBase of a PE file (PE32 or PE32+)."""
    return pe_file(pe_path)[1]


def coff_symbols(pe_path):
    """A PE file's COFF symbols as its toolchain's objdump -t reads them:
    {rva: [(name, type, storage class)]} (those of a section)."""
    data, _, sections = pe_file(pe_path)
    magic = struct.unpack_from("<H", data, struct.unpack_from("<I", data, 0x3C)[0] + 24)[0]
    objdump = "i686-w64-mingw32-objdump" if magic == 0x10B else "x86_64-w64-mingw32-objdump"   # PE32
    p = subprocess.run([objdump, "-t", os.path.join(ROOT, pe_path)], capture_output=True, text=True)
    if p.returncode:
        raise AssertionError(f"{objdump} -t {pe_path}: exit {p.returncode}: {p.stderr.strip()}")
    at = {}
    for sec, ty, scl, value, name in re.findall(
            r"^\[\s*\d+\]\(sec\s+(\d+)\)\(fl 0x\w+\)\(ty\s+(\w+)\)\(scl\s+(\d+)\) \(nx \d\) 0x([0-9a-f]+) (.+)$",
            p.stdout, re.M):
        if 0 < int(sec) <= len(sections):
            at.setdefault(sections[int(sec) - 1][1] + int(value, 16), []).append((name, int(ty, 16), int(scl)))
    return at


def code_at(pe_path, rva, n):
    """n bytes of a PE file at rva (from its section headers)."""
    data, _, sections = pe_file(pe_path)
    for vsize, va, rawsize, rawptr, _ in sections:
        if va <= rva < va + max(vsize, rawsize):
            return data[rawptr + rva - va:rawptr + rva - va + n]
    return b""


def code_differences(linux_pid, pe_path, base):
    """Bytes of the executable sections of the PE file at pe_path (relative
    to ROOT) that differ from the memory of the running Wine process
    linux_pid, where the image is mapped at `base`: read from outside,
    through /proc/PID/mem. 0 means the code in memory is the file's."""
    data, _, sections = pe_file(pe_path)
    differ = 0
    with open(f"/proc/{linux_pid}/mem", "rb") as mem:
        for vsize, va, rawsize, rawptr, chars in sections:
            if not chars & 0x20000000:      # IMAGE_SCN_MEM_EXECUTE
                continue
            n = min(vsize, rawsize)
            mem.seek(base + va)
            got = mem.read(n)
            want = data[rawptr:rawptr + n]
            differ += sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
    return differ


def agent_mappings(linux_pid):
    """Lines of /proc/PID/maps of a Wine process that map the agent DLL
    (empty: the agent is not loaded)."""
    with open(f"/proc/{linux_pid}/maps") as f:
        return [l.strip() for l in f if "hookscope-agent" in l.lower()]


# --- 32-bit (i386, WOW64) programs ------------------------------------------

TARGETS32 = "build/tests32"
DEPS32_STATUS = os.path.join(BUILD, "deps32", "status")


def need_wow64():
    """Skip the test when Wine cannot run 32-bit programs here, with the
    reason scripts/deps32.sh (make deps) wrote to build/deps32/status;
    fail when that never ran, or when the test prefix was made without
    Wine's 32-bit side (every program run there through `wine` fails)."""
    try:
        with open(DEPS32_STATUS) as f:
            status = f.read().strip()
    except OSError:
        raise AssertionError(f"{os.path.relpath(DEPS32_STATUS, ROOT)} is missing: make deps "
                             "(scripts/deps32.sh) writes it")
    if status != "ready":
        raise Skip(f"32-bit targets unavailable here: {status}")
    prefix = os.environ.get("WINEPREFIX") or os.path.expanduser("~/.wine")
    if not os.path.exists(os.path.join(prefix, "drive_c", "windows", "syswow64", "kernel32.dll")):
        raise AssertionError(f"the Wine prefix {prefix} was made without Wine's 32-bit side: "
                             "make deps updates it (scripts/deps32.sh)")
