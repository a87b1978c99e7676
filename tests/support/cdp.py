"""A headless Chromium driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on the browser's fd 3, replies and
events on its fd 4, each message JSON ended by a NUL byte). Python 3
standard library only; every wait has a deadline, and close() kills the
browser's whole process group.

    with Browser() as b:
        b.open("file:///.../flamegraph.svg")
        b.evaluate("document.title")
        b.click(100, 200)
        b.errors        # console errors and uncaught exceptions so far
"""
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
# the flags this machine's closed network needs (see the project's notes)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


def available():
    return os.path.exists(CHROMIUM)


class Browser:
    def __init__(self, width=1200, height=900, timeout=60):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="hs-chromium-")
        to_r, self._to_w = os.pipe()       # our commands -> its fd 3
        self._from_r, from_w = os.pipe()   # its fd 4 -> us
        # the child's ends above 4 first, so that moving them to 3 and 4
        # cannot overwrite one with the other
        for name in ("to_r", "from_w"):
            fd = locals()[name]
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            if name == "to_r":
                to_r = high
            else:
                from_w = high

        def child_fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen([CHROMIUM] + FLAGS + [f"--user-data-dir={self.profile}",
                                                           f"--window-size={width},{height}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(3, 4, to_r, from_w),
                                     preexec_fn=child_fds, start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.events = []
        self.errors = []
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    # --- the protocol ----------------------------------------------------------

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("chromium did not answer in time")
            r, _, _ = select.select([self._from_r], [], [], left)
            if not r:
                continue
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise AssertionError(f"chromium closed its pipe (exit {self.proc.poll()})")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _note(self, m):
        self.events.append(m)
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: " + d.get("text", "") + " " +
                               str(d.get("exception", {}).get("description", "")))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console." + p["type"] + ": " +
                               " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            self.errors.append("log: " + p["entry"].get("text", ""))

    def call(self, method, params=None, browser=False, timeout=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not browser:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._to_w, data)
            data = data[n:]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._note(m)

    def wait_event(self, method, timeout=None):
        for m in self.events:
            if m.get("method") == method:
                self.events.remove(m)
                return m
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            self._note(m)
            if m.get("method") == method:
                self.events.remove(m)
                return m

    # --- what tests use -----------------------------------------------------------

    def open(self, url, timeout=None):
        """Load url and wait for its load event; returns the seconds it took."""
        self.events = [m for m in self.events if m.get("method") != "Page.loadEventFired"]
        t0 = time.monotonic()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", timeout)
        return time.monotonic() - t0

    def choose_file(self, path, selector="input[type=file]"):
        """Give the page's file input (the first that selector finds) the
        file at path, as a user choosing it would."""
        doc = self.call("DOM.getDocument")
        q = self.call("DOM.querySelector", {"nodeId": doc["root"]["nodeId"], "selector": selector})
        self.call("DOM.setFileInputFiles", {"files": [path], "nodeId": q["nodeId"]})

    def evaluate(self, expr, timeout=None):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr}: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def mouse(self, kind, x, y):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                "clickCount": 1 if kind != "mouseMoved" else 0})

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
