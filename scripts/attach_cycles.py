#!/usr/bin/env python3
"""Attach to and detach from one running program many times in a row, and
check after every cycle that the program is intact.

The program is build/tests/threadstorm.exe (tests/targets/threadstorm.c):
its threads are created, run, wait, load DLLs and end all the time, and
it counts the progress of every kind of thread and checks every result.
After each `hookscope attach PID --duration D` the script checks:
hookscope exited 0 with stop "detach" and no warning; the agent DLL is
no longer mapped (/proc/PID/maps of the Wine process); the exe's code bytes
in memory equal the file's (/proc/PID/mem); and, from the program itself,
that every kind of thread made progress since the previous cycle (none was
left suspended), no result was wrong, and the thread the program holds
suspended still has a suspend count of 1.

A cycle that does not end within --timeout seconds is a hang: the script
writes the backtraces of the program's threads (winedbg) next to its log,
and stops.

usage: scripts/attach_cycles.py [--cycles N] [--duration S] [--timeout S]
                                [--option OPT]... [--log FILE]
With --option=--time a cycle may end with the agent left loaded for calls
still running in it (one warning saying so); the next cycle reuses it.
(run `make test-build` first; WINEPREFIX is honoured.) The last line is
"cycles N failures N hangs N (agent left resident N); per cycle mean X s
median X s p95 X s max X s".
The exit status is 1 when any cycle failed.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import hs  # noqa: E402  (tests/hs.py)

EXE = "build/tests/threadstorm.exe"
KINDS = ["spin0", "spin1", "waiter", "batcher", "nester", "exiter", "suspender", "pooler", "loader"]
STATUS = re.compile(r"status ((?:\d+ ){%d})held (\d+) bad (\d+) code-matches (-?\d+)(.*)" % len(KINDS))


def status(p):
    """The program's progress counters, held thread's suspend count, bad, code-matches."""
    p.send(b"status\n")
    line = p.readline(timeout=60)
    m = STATUS.fullmatch(line)
    if not m:
        raise AssertionError(f"unexpected status line {line!r}")
    counts = [int(x) for x in m.group(1).split()]
    return counts, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5).strip()


def backtraces(pid, path):
    """Write winedbg's backtraces of every thread of Windows process pid."""
    cmds = f"attach 0x{pid:x}\nbt all\ndetach\nquit\n"
    try:
        r = subprocess.run(["winedbg"], input=cmds.encode(), capture_output=True, timeout=120,
                           env=hs.env(), cwd=ROOT)
        text = r.stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        text = f"winedbg failed: {e}"
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--duration", type=float, default=0.2, help="seconds each attach lasts (default 0.2)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds after which a cycle is a hang")
    ap.add_argument("--option", action="append", default=[], help="an extra hookscope option (repeatable)")
    ap.add_argument("--log", default=os.path.join(ROOT, "build", "attach-cycles.log"))
    a = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, EXE)):
        print(f"{EXE} is not built: run 'make test-build'", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(a.log), exist_ok=True)
    log = open(a.log, "w")

    def say(msg):
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    server = hs.WineServer()
    times, failures, hangs, resident_cycles = [], 0, 0, 0
    out = hs.outdir("attach-cycles")
    try:
        with hs.Process([EXE]) as p:
            line = p.readline(timeout=60)
            m = re.fullmatch(r"pid (\d+) code-matches 1", line)
            if not m:
                raise SystemExit(f"unexpected first line {line!r}")
            pid, linux_pid = int(m.group(1)), p.proc.pid
            say(f"target {EXE} pid {pid} (Linux {linux_pid}); {a.cycles} cycles of "
                f"attach --duration {a.duration} {' '.join(a.option)}")
            before, *_ = status(p)
            for i in range(1, a.cycles + 1):
                cmd = ["attach", str(pid), "-q", "-o", out, "--duration", str(a.duration)] + a.option
                t0 = time.time()
                try:
                    r = hs.hookscope(cmd, timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    hangs += 1
                    failures += 1
                    bt = a.log + f".hang{i}.txt"
                    backtraces(pid, bt)
                    say(f"cycle {i}: HANG: no end within {a.timeout:.0f} s; backtraces in {bt}")
                    break
                took = time.time() - t0
                times.append(took)
                problems = []
                err = r.stderr.decode(errors="replace").strip()
                if r.returncode != 0:
                    problems.append(f"exit {r.returncode}: {err}")
                t = hs.Trace(r, out)
                resident = False
                if t.json is None:
                    problems.append("no report")
                else:
                    if t.json["target"]["stop"] != "detach":
                        problems.append(f"stop {t.json['target']['stop']}")
                    # with --time a call still running at the detach keeps the
                    # agent loaded (every patch out) for the next attach
                    warnings = t.json["warnings"]
                    resident = len(warnings) == 1 and warnings[0].startswith("timed calls were still running")
                    if warnings and not resident:
                        problems.append(f"warnings {warnings}")
                if not p.alive():
                    problems.append("the program died")
                    say(f"cycle {i}: FAIL {'; '.join(problems)}")
                    failures += 1
                    break
                if hs.agent_mappings(linux_pid) and not resident:
                    problems.append("the agent is still mapped")
                resident_cycles += resident
                base = 0x140000000
                if t.json:
                    base = int(t.module("threadstorm.exe")["base"], 16)
                differ = hs.code_differences(linux_pid, EXE, base)
                if differ:
                    problems.append(f"{differ} code bytes differ from the file")
                now, held, bad, matches, why = status(p)
                stalled = [k for k, b, n in zip(KINDS, before, now) if n <= b]
                deadline = time.time() + 15
                while stalled and time.time() < deadline:
                    # a kind can be slow on a loaded machine: look again a moment later
                    time.sleep(0.5)
                    later, held, bad, matches, why = status(p)
                    stalled = [k for k, n, l in zip(KINDS, now, later) if l <= n]
                if stalled:
                    problems.append("no progress in 15 s: " + ", ".join(stalled))
                if held != 1:
                    problems.append(f"the held thread's suspend count is {held}")
                if bad:
                    problems.append(f"{bad} wrong results ({why})")
                if matches != 1:
                    problems.append(f"code-matches {matches}")
                before = now
                if problems:
                    failures += 1
                    say(f"cycle {i}: FAIL ({took:.2f} s) " + "; ".join(problems))
                else:
                    say(f"cycle {i}: ok ({took:.2f} s)")
            if p.alive():
                p.send(b"stop\n")
                say("program: " + p.readline(timeout=120))
    finally:
        server.stop()
    if times:
        q = sorted(times)
        p95 = q[min(len(q) - 1, int(round(0.95 * (len(q) - 1))))]
        summary = (f"cycles {len(times)} failures {failures} hangs {hangs} (agent left resident {resident_cycles}); "
                   f"per cycle mean "
                   f"{statistics.mean(times):.2f} s median {statistics.median(times):.2f} s "
                   f"p95 {p95:.2f} s max {max(times):.2f} s")
    else:
        summary = f"cycles 0 failures {failures} hangs {hangs}"
    say(summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
