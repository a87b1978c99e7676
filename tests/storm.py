"""threadstorm.exe (tests/targets/threadstorm.c) as a victim: start it,
ask its status, check that every kind of its threads moves on (none left
suspended) and that nothing it computed was wrong."""
import re
import time

import hs

EXE = "build/tests/threadstorm.exe"
KINDS = 9   # kinds of long-lived threads whose progress it counts


def start():
    """A running threadstorm, every long-lived thread started: (process, pid)."""
    hs.need(EXE)
    p = hs.Process([EXE])
    m = re.fullmatch(r"pid (\d+) code-matches 1", p.readline(timeout=60))
    hs.check(m, "threadstorm did not start")
    return p, int(m.group(1))


def status(p):
    """(progress of each kind, held's suspend count, wrong results,
    code-matches, where the wrong results were seen)."""
    p.send(b"status\n")
    line = p.readline(timeout=60)
    m = re.fullmatch(r"status ((?:\d+ ){%d})held (\d+) bad (\d+) code-matches (-?\d+)(.*)" % KINDS, line)
    hs.check(m, f"unexpected status line {line!r}")
    return ([int(x) for x in m.group(1).split()], int(m.group(2)), int(m.group(3)), int(m.group(4)),
            m.group(5).strip())


def check_intact(p, what):
    """Every kind of thread moves on (within 15 s: a loaded machine may be
    slow to run some), nothing wrong, the code as on disk, the held
    thread held once."""
    a = status(p)[0]
    deadline = time.time() + 15
    while True:
        time.sleep(0.5)
        b, held, bad, matches, why = status(p)
        stalled = [k for k in range(KINDS) if b[k] <= a[k]]
        if not stalled or time.time() > deadline:
            break
    hs.eq(stalled, [], f"{what}: kinds of threads that made no progress in 15 s (left suspended?)")
    hs.eq(held, 1, f"{what}: suspend count of the thread threadstorm holds itself")
    hs.eq(bad, 0, f"{what}: wrong results in threadstorm ({why})")
    hs.eq(matches, 1, f"{what}: threadstorm's code bytes as on disk")


def stop(p):
    """End it: its last line says nothing went wrong; exit code 0."""
    p.send(b"stop\n")
    last = p.readline(timeout=120)
    hs.check(re.fullmatch(r"threads \d+ calls \d+ bad 0 code-matches 1", last), f"threadstorm's last line {last!r}")
    hs.eq(p.wait(timeout=60), 0, "threadstorm's exit code")
