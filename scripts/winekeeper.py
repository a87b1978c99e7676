"""A wineserver held for a whole test or benchmark run (scripts/winekeeper.py).

Used by tests/run.py and bench/run.py. Python 3 standard library only.
"""
import os
import shutil
import subprocess

# The environment of every Wine run: quiet, no Mono or Gecko install prompts.
ENV = dict(os.environ, WINEDEBUG="-all")
ENV.setdefault("WINEDLLOVERRIDES", "mscoree,mshtml=")

# Wine's 64-bit loader, run directly: once Wine's 32-bit side is installed,
# `wine` is its 32-bit loader, which runs a 64-bit program as another Linux
# process started through start.exe (so the pid a test started is not the
# program's, and a start takes about twice as long).
WINE64 = "/usr/lib/wine/wine64" if os.access("/usr/lib/wine/wine64", os.X_OK) else "wine"


def loader(program, cwd="."):
    """The Wine loader for a program (a path, from cwd): `wine` for an
    i386 one, else the 64-bit loader (Wine's own programs, named without a
    path, are the 64-bit ones)."""
    try:
        with open(os.path.join(cwd, program), "rb") as f:
            head = f.read(4096)
        pe = int.from_bytes(head[0x3C:0x40], "little")
        if head[:2] == b"MZ" and head[pe:pe + 6] == b"PE\0\0\x4c\x01":
            return "wine"
    except (OSError, ValueError):
        pass
    return WINE64


class WineServer:
    """Keeps one wineserver alive for a whole run of tests or benchmarks
    (each wine start is then cheap, ~0.05 s), with Wine's own service
    processes (services.exe, winedevice.exe, rpcss.exe, ...) started with
    no stdio.

    Wine starts those services from the first program that runs under a new
    wineserver, and they inherit that program's stdout and stderr. Were that
    a test's pipe, it would never reach end-of-file while the server lives:
    a test reading it to the end would hang (this hung CI for over an hour).
    So a keeper program (cmd.exe reading its stdin, no stdout or stderr)
    runs from the first test to the last (stop() ends it): it starts the
    services if no server ran, and the server cannot exit between tests and
    come back under a test's pipes.

    A program that crashes starts Wine's debugger (AeDebug: winedbg
    --auto), which by default shows a crash dialog; the dialog starts
    explorer.exe /desktop, and that inherits the crashed program's stdout
    and stderr and keeps them open for as long as the desktop lives (for
    good while another program of the prefix runs). So the prefix gets
    HKCU\Software\Wine\WineDbg ShowCrashDialog = 0: winedbg still prints
    its report on stderr and ends, and no dialog or desktop is started."""

    def __init__(self):
        self.keeper, self.started = None, False
        if not shutil.which("wineserver"):
            return
        self.started = subprocess.run(["wineserver", "-p"], env=ENV, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL).returncode == 0
        self.keeper = subprocess.Popen(["wine", "cmd"], env=ENV, stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # one program run to its end: by then the server is up and has
        # started its services, from the keeper or from this one, both with
        # no stdio. The program sets the prefix's crash handling (below).
        try:
            subprocess.run(["wine", "reg", "add", r"HKCU\Software\Wine\WineDbg", "/v", "ShowCrashDialog",
                            "/t", "REG_DWORD", "/d", "0", "/f"], env=ENV, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        """End the keeper; end the server if this started it (with every
        Wine process a test may have left behind)."""
        if self.keeper:
            try:
                self.keeper.stdin.close()
                self.keeper.wait(timeout=30)
            except Exception:
                self.keeper.kill()
        if self.started:
            subprocess.run(["wineserver", "-k"], env=ENV, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
