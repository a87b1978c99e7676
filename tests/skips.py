"""The skips tests/run.py accepts, each with the fact of this machine that
justifies it, and the checks known to fail, each with the reason.

A test or a unit case that cannot run here says so (hs.Skip in a Python
test, "skip - NAME: REASON" from a unit test). The runner counts every
skip and prints its reason; a skip is *explained* when an entry of SKIPS
matches its name and reason and the entry's fact holds on this machine
(checked when the skip happens: "the CPU lacks AVX-512" is accepted only
on a CPU that lacks it). Any other skip is unexplained and fails the run:
`make test` brings every dependency, so a missing consumer or fixture is a
failure, not a quiet hole in the run.

KNOWN lists checks that fail for a reason that is documented and belongs
to another piece of work: the check stays in the run, its failure is
reported as a skip with the reason, and the day it passes the runner
fails the run so that the entry is taken out.
"""
import os
import re

DEPS32_STATUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "build", "deps32", "status")


def cpu_flags():
    """The flags of the first CPU in /proc/cpuinfo (empty if unknown)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def lacks(*flags):
    return lambda m: not set(flags) <= cpu_flags()


def deps32_says():
    """The reason is what scripts/deps32.sh found on this machine (make deps
    wrote it to build/deps32/status: wine32:i386 not installed, and why)."""
    def holds(m):
        try:
            with open(DEPS32_STATUS) as f:
                status = f.read().strip()
        except OSError:
            return False
        return status != "ready" and status == m.group(1)
    return holds


def below(limit):
    """The figure the skip's reason measured (its first group) is below limit."""
    return lambda m: float(m.group(1)) < limit


class Entry:
    """test, reason: regular expressions of the name and of the reason;
    holds(match of the reason): whether the fact is true here."""

    def __init__(self, test, reason, why, holds=lambda m: True):
        self.test = re.compile(test)
        self.reason = re.compile(reason)
        self.why = why
        self.holds = holds

    def justifies(self, name, reason):
        m = self.test.search(name) and self.reason.search(reason or "")
        return bool(m) and bool(self.holds(m))


SKIPS = [
    Entry(r"^unit/test_hook_exec: exec/rip-evex-", r"^the CPU lacks AVX-512$",
          "running EVEX code needs AVX-512F and AVX-512BW (their relocation is checked by plan/ anyway)",
          lacks("avx512f", "avx512bw")),
    Entry(r"^unit/test_hook_exec: exec/rip-vex", r"^the CPU lacks AVX$",
          "running VEX code needs AVX (its relocation is checked by plan/ anyway)", lacks("avx")),
    Entry(r"^test_sampler\.test_(sample_rate_end_to_end|waiting_threads_are_wait_samples)$",
          r"^the machine ran the busy thread only (\d+)% of its life in 3 runs",
          "under Wine a suspension waits until the thread is scheduled: with less than half a core for the "
          "busy thread (the program's own measure) the suspend sampler cannot keep its pace", below(50)),
    Entry(r"^test_wow64(_[a-z]+)?\.", r"^32-bit targets unavailable here: (.+)$",
          "Wine cannot run 32-bit programs on this machine: scripts/deps32.sh (make deps) did not install "
          "its 32-bit side, for the reason it gives", deps32_says()),
]

KNOWN = [
]


def explain_skip(name, reason):
    """The justification of a skip on this machine, or None."""
    for e in SKIPS:
        if e.justifies(name, reason):
            return e.why
    return None


def known_failure(name):
    """The documented reason a check fails, or None."""
    for e in KNOWN:
        if e.test.search(name):
            return e.why
    return None


def describe():
    """The lists, for `tests/run.py --skips`."""
    lines = ["accepted skips (when the fact holds here):"]
    for e in SKIPS:
        lines.append(f"  {e.test.pattern} [{e.reason.pattern}]: {e.why}")
    lines.append("known failures:")
    for e in KNOWN:
        lines.append(f"  {e.test.pattern}: {e.why}")
    return "\n".join(lines)

