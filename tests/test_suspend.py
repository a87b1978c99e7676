"""hook/suspend/threads_win.c, driven by tests/targets/suspendtest.c in tight loops
against tests/targets/threadstorm.c, whose threads are created, run, wait,
load DLLs and end all the time and which counts the progress of every kind
of thread: after each run every kind must have moved on (no thread left
suspended), no result may be wrong, and the thread it keeps suspended
itself must still have a suspend count of exactly 1."""
import os
import re
import signal
import subprocess
import time

import hs
import storm

EXE = "build/tests/suspendtest.exe"
LINE = re.compile(r"(one|all|self) ok (\d+) gone (\d+) timeout (\d+) noworker (\d+) denied (\d+) "
                  r"stack-reads (\d+) rounds (\d+) max-ms (\d+)(.*)")


def parse(out):
    m = LINE.fullmatch(out.strip())
    hs.check(m, f"unexpected output {out!r}")
    keys = ["ok", "gone", "timeout", "noworker", "denied", "stack_reads", "rounds", "max_ms"]
    return dict(zip(keys, map(int, m.groups()[1:9]))), m.group(10).strip()


def run_against_victim(mode, seconds, *more):
    hs.need(EXE)
    p, pid = storm.start()
    with p:
        r = hs.wine([EXE, mode, str(pid), str(seconds), *more], timeout=seconds + 180)
        hs.eq(r.returncode, 0, f"suspendtest {mode} exit status (stderr {r.stderr[-300:]!r})")
        c, _ = parse(r.stdout.decode())
        storm.check_intact(p, mode)
        storm.stop(p)
    return c


def test_suspend_one_thread_at_a_time_of_another_process():
    """The sampler's loop: suspend a thread, read its context and its stack,
    resume it; over every thread, again and again, for 8 s and on until
    300 threads were read (a busy machine gives fewer in 8 s)."""
    c = run_against_victim("one", 8, "300")
    hs.check(c["ok"] >= 300, f"only {c['ok']} threads were suspended and read in 68 s")
    hs.eq(c["stack_reads"], c["ok"], "a stack read for every context read")
    hs.eq(c["denied"], 0, "denied")
    hs.eq(c["noworker"], 0, "no free worker")


def test_suspend_every_thread_of_another_process():
    c = run_against_victim("all", 8)
    hs.check(c["ok"] >= 5, f"only {c['ok']} rounds held every thread")
    hs.eq(c["denied"], 0, "denied")
    # the budget bounds the waits and the passes; the calls of the step the
    # time ran out in (one pass: a snapshot, opening and suspending new
    # threads; resuming them) come on top, a server round trip each: up to
    # seconds when the server is busy with a whole test suite's programs
    hs.check(c["max_ms"] < 5000 + 2500, f"a round took {c['max_ms']} ms (its budget is 5000, + 2500 for the calls)")


def test_suspend_every_thread_of_this_process():
    """This process suspends its own other threads (two of which keep
    creating threads) hundreds of times: while held, a spinning thread's
    counter does not move (counted as 'denied' otherwise); after the last
    resume every thread moves on."""
    hs.need(EXE)
    r = hs.wine([EXE, "self", "8"], timeout=200)
    hs.eq(r.returncode, 0, f"exit status (stderr {r.stderr[-300:]!r})")
    c, extra = parse(r.stdout.decode())
    hs.check(c["ok"] >= 20, f"only {c['ok']} rounds held every thread")
    hs.eq(c["denied"], 0, "a held thread ran, or a round was denied")
    hs.eq(extra, "progress-ok 1", "every thread moved on after the last resume")


def test_release_all_on_ctrl_c():
    """A process holding every thread of another one gets Ctrl+C: its
    handler calls hs_suspend_release_all, and the victim runs on."""
    hs.need(EXE)
    p, pid = storm.start()
    with p:
        h = subprocess.Popen([hs.WINE64, EXE, "hold", str(pid)], cwd=hs.ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=hs.env(),
                             start_new_session=True)
        try:
            line = h.stdout.readline().decode().strip()
            m = re.fullmatch(r"holding (\d+)", line)
            # the long-lived threads: one per kind, main, the stdin reader, held
            hs.check(m and int(m.group(1)) >= storm.KINDS + 3, f"unexpected {line!r}")
            held = int(m.group(1))
            os.killpg(h.pid, signal.SIGINT)
            out, _ = h.communicate(timeout=60)
            hs.eq(out.decode().strip(), f"released {held}", "every held thread released once")
        finally:
            if h.poll() is None:
                os.killpg(h.pid, signal.SIGKILL)
        storm.check_intact(p, "after the release")
        storm.stop(p)


def test_victim_exits_during_the_loop():
    """The victim process ends while threads of it are being suspended:
    every call fails cleanly and the loop ends on its own."""
    hs.need(EXE)
    hs.need(storm.EXE)
    v = subprocess.Popen([hs.WINE64, storm.EXE, "2"], cwd=hs.ROOT, stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=hs.env())
    try:
        m = re.fullmatch(rb"pid (\d+) code-matches 1\r?\n", v.stdout.readline())
        hs.check(m, "victim did not start")
        t0 = time.time()
        r = hs.wine([EXE, "one", m.group(1).decode(), "30"], timeout=120)
        took = time.time() - t0
        hs.eq(r.returncode, 0, "exit status")
        c, _ = parse(r.stdout.decode())
        hs.check(c["ok"] > 0, "some threads were read before the end")
        hs.check(took < 25, f"the loop went on for {took:.0f} s after the victim ended")
        hs.eq(v.wait(timeout=60), 0, "the victim's exit code")
    finally:
        if v.poll() is None:
            v.kill()
