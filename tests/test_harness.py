"""The test harness itself: a hung test is killed with what it started, and
Wine's service processes hold none of the pipes tests read (that hung CI);
README's two commands set up what they need."""
import os
import subprocess
import time

import hs
import run  # tests/run.py


def test_hung_test_is_killed_with_its_children():
    # a shell that starts a grandchild holding the pipe and then hangs
    marker = f"hookscope-harness-{os.getpid()}-{time.time_ns()}"
    t0 = time.time()
    rc, out, err = run.run_killable(["sh", "-c", f"(exec -a {marker} sleep 300) & echo started; sleep 300"], 1.0)
    took = time.time() - t0
    hs.eq(rc, None, "the hung command was reported as killed")
    hs.eq(out.strip(), "started", "its output so far is kept")
    hs.check(took < 15, f"killing took {took:.1f} s")
    time.sleep(0.2)
    hs.eq(_processes(marker), [], "the grandchild was killed too")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _processes(*needles):
    """The pids whose command line contains one of `needles`."""
    return [p for p in os.listdir("/proc")
            if p.isdigit() and any(n in _cmdline(p) for n in needles)]


def _prefix_of(pid):
    """The WINEPREFIX a Wine process runs in ("" when not known)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return ""
    home = env.get(b"HOME", b"").decode(errors="replace")
    return env.get(b"WINEPREFIX", (home + "/.wine").encode()).decode(errors="replace").rstrip("/")


def test_wine_services_hold_no_pipes():
    """Wine starts services.exe & co. from the first program under a new
    wineserver and they inherit its stdio; the runner starts them first with
    none, so no test's pipe is held open by them."""
    # (only this prefix's: other prefixes on the machine have services of their own)
    ours = hs.env().get("WINEPREFIX", os.path.expanduser("~/.wine")).rstrip("/")
    services = [p for p in _processes("services.exe", "winedevice.exe", "plugplay.exe", "rpcss.exe")
                if _prefix_of(p) == ours]
    if not services:
        raise hs.Skip("no Wine service process is running")
    held = []
    for p in services:
        # stdout and stderr: a pipe end a process writes to keeps its reader
        # from end-of-file (a service may have the keeper's stdin, harmless)
        for fd in ("1", "2"):
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("pipe:"):
                held.append(f"{_cmdline(p).split(chr(0))[0]} fd {fd} {target}")
    hs.eq(held, [], "Wine services holding pipes")


def test_leftover_process_does_not_hold_the_run():
    """A test that ends but leaves a process holding its output: the runner
    does not wait for that process, and kills it."""
    marker = f"hookscope-leftover-{os.getpid()}-{time.time_ns()}"
    t0 = time.time()
    rc, out, err = run.run_killable(["sh", "-c", f"(exec -a {marker} sleep 300) & echo done; exit 3"], 60)
    took = time.time() - t0
    hs.eq(rc, 3, "the command's exit status")
    hs.eq(out.strip(), "done", "its output")
    hs.check(took < 10, f"took {took:.1f} s (waited for the leftover process?)")
    time.sleep(0.2)
    hs.eq(_processes(marker), [], "the leftover process was killed")


def _pipe_holders(inode):
    """Command lines of the processes but this one that have pipe `inode` open."""
    holders = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{p}/fd/{fd}") == f"pipe:[{inode}]":
                    holders.append(_cmdline(p).split(chr(0))[0] or p)
                    break
            except OSError:
                pass
    return holders


def test_crashing_program_leaves_no_pipe_open():
    """A program that crashes starts Wine's debugger (winedbg --auto), whose
    crash dialog started explorer.exe /desktop with the program's stdout and
    stderr: it kept them open for as long as the desktop lived (for good
    while another program of the prefix ran), so a test reading them to the
    end hung until its limit. The runner's prefix has no crash dialog
    (scripts/winekeeper.py): the output ends soon after the program, and no
    process is left holding it. (The keeper itself is the other program.)"""
    import subprocess
    import threading
    exe = hs.need("build/tests/crash.exe")
    q = subprocess.run(["wine", "reg", "query", r"HKCU\Software\Wine\WineDbg", "/v", "ShowCrashDialog"],
                       capture_output=True, env=hs.env(), timeout=60)
    hs.check(b"0x0" in q.stdout, f"ShowCrashDialog is not 0 in the prefix: {q.stdout!r}")
    for cmd in ([hs.WINE64, exe], [os.path.join(hs.ROOT, "hookscope"), "run", "-q", "-o",
                                hs.outdir("harness_crash"), "--", exe]):
        p = subprocess.Popen(cmd, cwd=hs.ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=hs.env())
        inodes = [os.fstat(f.fileno()).st_ino for f in (p.stdout, p.stderr)]
        out = {}
        readers = [threading.Thread(target=lambda f=f, k=k: out.__setitem__(k, f.read()), daemon=True)
                   for k, f in (("out", p.stdout), ("err", p.stderr))]
        t0 = time.time()
        for t in readers:
            t.start()
        for t in readers:
            t.join(timeout=max(0.0, 60 - (time.time() - t0)))
        holders = [h for i in inodes for h in _pipe_holders(i)]
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
        hs.check(not any(t.is_alive() for t in readers),
                 f"{cmd[0]}: the output did not end within 60 s; held by {holders}")
        hs.eq(holders, [], f"{cmd[0]}: processes still holding the output")
        hs.check(b"about to crash" in out["out"], f"{cmd[0]}: stdout {out['out']!r}")
        if cmd[0] != hs.WINE64:
            # (how Wine's debugger ends the untraced program varies; hookscope
            # exits with the code the target ended with)
            hs.eq(p.returncode & 0xFF, 0xC0000005 & 0xFF, f"{cmd[0]}: exit status")


def test_demo_and_test_bring_their_dependencies():
    """`make demo` and `make test` are the whole setup on a fresh machine
    (README): where the dependencies' stamp is missing, the first thing
    each does is scripts/deps.sh (a dry run, `make -n`, with the stamp
    named somewhere that does not exist)."""
    stamp = os.path.join(hs.OUT, "no-deps-stamp", ".ready")
    hs.check(not os.path.exists(stamp), f"{stamp} exists")
    # a make of its own: run by `make test`, the environment says it is a
    # sub-make (MAKELEVEL, MAKEFLAGS), which prints "Entering directory" first
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")}
    for target in ("demo", "test"):
        p = subprocess.run(["make", "-n", "--no-print-directory", target, "DEPS_STAMP=" + stamp], cwd=hs.ROOT,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env)
        hs.eq(p.returncode, 0, f"make -n {target}: {p.stderr[-500:]}")
        lines = p.stdout.splitlines()
        hs.eq(lines[:1], ["./scripts/deps.sh"], f"the first command of `make {target}` on a fresh machine")


def test_silent_failed_start_is_tried_again_and_said():
    """hs.wine starts a run that ended with a failure status and no output
    at all (Wine's start-up lost it) again, up to 3 times, each retry said
    on stderr; a run with output, or with status 0, is taken at once."""
    import contextlib
    import io
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        p = hs.wine(["cmd", "/c", "exit", "3"], timeout=60)
    hs.eq(p.returncode, 3, "the silent failure, as it failed")
    lines = said.getvalue().splitlines()
    hs.eq(lines, [f"hs.wine: cmd ended with status 3 and no output (try {i} of 3)" for i in (1, 2, 3)],
          "each try said")
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        p = hs.wine(["cmd", "/c", "echo x& exit 3"], timeout=60)
    hs.eq((p.returncode, p.stdout.strip(), said.getvalue()), (3, b"x", ""), "a failure with output: once")
