"""Symbol servers: `--symbols 'srv*CACHE*http://...'` downloads a PDB by
its image's RSDS signature with WinHTTP (under Wine) from a server started
here (Python's http.server on 127.0.0.1, serving a symbol store made of the
PDB fixtures and counting the requests per path): a plain .pdb, a .pd_
(a cabinet written here, MSZIP or LZX) and a file.ptr redirect; a missing PDB, a
server error, a file that is not a PDB, another build's PDB, a body cut
short and a server that never answers each give one line, and the run goes on with the names it could get.
The names equal a run's with the PDB at hand; the cache holds the PDBs in
the store layout, and a second run asks the server nothing.

Inputs: the pdb fixtures (make fixtures): nopdb/pdbc.exe (its RSDS path
names no existing file), pdbcxx.exe and pdbmsvc.exe (copied with such a
path here, tests/support/pe_rsds.py)."""
import http.server
import os
import pty
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import pdbref  # noqa: E402

PDB = "build/fixtures/pdb"
PE_RSDS = os.path.join(hs.ROOT, "tests", "support", "pe_rsds.py")
TIMEOUT_S = 2


class Bits:
    """LZX's bit stream: bits taken from the top of 16-bit little-endian words."""

    def __init__(self):
        self.words, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, count):
        for i in range(count - 1, -1, -1):
            self.acc = self.acc << 1 | (value >> i & 1)
            self.n += 1
            if self.n == 16:
                self.words += struct.pack("<H", self.acc)
                self.acc, self.n = 0, 0

    def aligned(self):
        if self.n:
            self.put(0, 16 - self.n)
        return bytes(self.words)


def mszip_frame(raw, first):
    """A frame of an MSZIP folder: "CK" and a raw deflate stream of its own."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"CK" + z.compress(raw) + z.flush()


def lzx_frame(raw, first):
    """A frame of an LZX folder as one uncompressed LZX block: (at the
    start, no E8 translation) the block type 3 and its 24-bit length, the
    bits padded to a 16-bit word, R0-R2, the bytes, a pad byte if odd."""
    b = Bits()
    if first:
        b.put(0, 1)
    b.put(3, 3)
    b.put(len(raw) >> 8, 16)
    b.put(len(raw) & 0xFF, 8)
    return b.aligned() + struct.pack("<III", 1, 1, 1) + raw + (b"\0" if len(raw) & 1 else b"")


def cabinet(name, data, lzx=False):
    """A one-file cabinet (MS-CAB) of data, one folder of 32 KiB frames:
    MSZIP, or LZX with a 32 KiB window."""
    blocks = []
    for i in range(0, max(len(data), 1), 32768):
        raw = data[i:i + 32768]
        packed = (lzx_frame if lzx else mszip_frame)(raw, i == 0)
        blocks.append(struct.pack("<IHH", 0, len(packed), len(raw)) + packed)
    fname = name.encode() + b"\0"
    files_at = 36 + 8                          # CFHEADER, one CFFOLDER
    data_at = files_at + 16 + len(fname)       # one CFFILE
    total = data_at + sum(len(b) for b in blocks)
    header = struct.pack("<4sIIIIIBBHHHHH", b"MSCF", 0, total, 0, files_at, 0, 3, 1, 1, 1, 0, 0, 0)
    folder = struct.pack("<IHH", data_at, len(blocks), 3 | 15 << 8 if lzx else 1)   # typeCompress
    entry = struct.pack("<IIHHHH", len(data), 0, 0, 0x5821, 0, 0x20) + fname
    return header + folder + entry + b"".join(blocks)


def rsds_key(exe):
    p = subprocess.run([sys.executable, PE_RSDS, exe, "--key"], capture_output=True, text=True, check=True)
    return p.stdout.split()[0]


def wine_path(path):
    return "Z:" + os.path.abspath(path).replace("/", "\\")


class Server:
    """http.server on a free port of 127.0.0.1 over a folder: /store/...
    its files, /broken/... 500, /garbage/... 200 with a text that is no
    PDB, /other/... the folder's other.pdb (pdbcxx's), /short/... its
    first 4096 bytes of the announced length; every request counted by path, each answered after `delay`
    seconds, the most answered at once kept."""

    def __init__(self, root, delay=0.0):
        self.requests = {}
        self.running = self.most_at_once = 0
        lock = threading.Lock()
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=root, **k)

            def do_GET(self):
                with lock:
                    server.requests[self.path] = server.requests.get(self.path, 0) + 1
                    server.running += 1
                    server.most_at_once = max(server.most_at_once, server.running)
                try:
                    time.sleep(delay)
                    self.answer()
                finally:
                    with lock:
                        server.running -= 1

            def answer(self):
                if self.path.startswith("/broken/"):
                    self.send_error(500)
                elif self.path.startswith(("/garbage/", "/short/", "/other/")):
                    body, more = b"this is not a PDB\n", 0
                    if not self.path.startswith("/garbage/"):
                        with open(os.path.join(root, "other.pdb"), "rb") as f:
                            body = f.read()
                    if self.path.startswith("/short/"):
                        body, more = body[:4096], len(body) - 4096
                        self.close_connection = True
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body) + more))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    super().do_GET()

            def log_message(self, *a):
                pass

        class Httpd(http.server.ThreadingHTTPServer):
            # a listen backlog for every download at once and more (the
            # default 5 could refuse one on a loaded machine)
            request_queue_size = 64
            daemon_threads = True

        self.httpd = Httpd(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def take(self):
        r, self.requests = self.requests, {}
        return r

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Silent:
    """A server that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(c)
            self.serve(c)

    def serve(self, c):
        pass

    def close(self):
        for c in self.accepted:
            c.close()
        self.sock.close()


class Drip(Silent):
    """A server that answers 200 with 100,000 bytes announced, then sends
    one byte every 0.5 s (each pause shorter than the timeout); with
    `head`, that answer's first bytes instead (headers that never end)."""

    def __init__(self, head=b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"):
        self.sent, self.stop, self.head = 0, threading.Event(), head
        super().__init__()

    def serve(self, c):
        threading.Thread(target=self._drip, args=(c,), daemon=True).start()

    def _drip(self, c):
        try:
            c.recv(65536)
            c.sendall(self.head)
            while not self.stop.wait(0.5):
                c.sendall(b"x")
                self.sent += 1
        except OSError:
            return

    def close(self):
        self.stop.set()
        super().close()


def setup(name):
    """The images (RSDS paths that name no file), the served store, its
    keys: (work dir, {name: (exe, key)})."""
    for f in ("nopdb/pdbc.exe", "pdbc.pdb", "pdbcxx.exe", "pdbcxx.pdb", "pdbmsvc.exe", "pdbmsvc.pdb"):
        hs.need(f"{PDB}/{f}")
    work = os.path.join(hs.ROOT, hs.outdir("symsrv-" + name))
    os.makedirs(os.path.join(work, "bin"))
    fx = os.path.join(hs.ROOT, PDB)
    shutil.copy(os.path.join(fx, "nopdb", "pdbc.exe"), os.path.join(work, "bin", "pdbc.exe"))
    for n in ("pdbcxx", "pdbmsvc"):
        subprocess.run([sys.executable, PE_RSDS, os.path.join(fx, n + ".exe"), "--path",
                        f"C:\\hookscope-absent\\{n}.pdb", "-o", os.path.join(work, "bin", n + ".exe")], check=True)
    images = {n: (os.path.join(work, "bin", n + ".exe"), rsds_key(os.path.join(work, "bin", n + ".exe")))
              for n in ("pdbc", "pdbcxx", "pdbmsvc")}
    store = os.path.join(work, "served", "store")
    for n, (exe, key) in images.items():
        os.makedirs(os.path.join(store, n + ".pdb", key))
    shutil.copy(os.path.join(fx, "pdbc.pdb"), os.path.join(store, "pdbc.pdb", images["pdbc"][1]))
    with open(os.path.join(fx, "pdbcxx.pdb"), "rb") as f:
        packed = cabinet("pdbcxx.pdb", f.read())
    with open(os.path.join(store, "pdbcxx.pdb", images["pdbcxx"][1], "pdbcxx.pd_"), "wb") as f:
        f.write(packed)
    lzx = os.path.join(work, "served", "lzx", "pdbc.pdb", images["pdbc"][1])
    os.makedirs(lzx)
    with open(os.path.join(fx, "pdbc.pdb"), "rb") as f, open(os.path.join(lzx, "pdbc.pd_"), "wb") as g:
        g.write(cabinet("pdbc.pdb", f.read(), lzx=True))
    for where, text in (("msg", "MSG:withheld by its owner\r\n"),
                        ("dangling", "PATH:" + wine_path(os.path.join(work, "nowhere", "pdbc.pdb")))):
        os.makedirs(os.path.join(work, "served", where, "pdbc.pdb", images["pdbc"][1]))
        with open(os.path.join(work, "served", where, "pdbc.pdb", images["pdbc"][1], "file.ptr"), "w") as f:
            f.write(text)
    elsewhere = os.path.join(work, "elsewhere")
    os.makedirs(elsewhere)
    shutil.copy(os.path.join(fx, "pdbmsvc.pdb"), elsewhere)
    shutil.copy(os.path.join(fx, "pdbcxx.pdb"), os.path.join(work, "served", "other.pdb"))
    with open(os.path.join(store, "pdbmsvc.pdb", images["pdbmsvc"][1], "file.ptr"), "w") as f:
        f.write("PATH:" + wine_path(os.path.join(elsewhere, "pdbmsvc.pdb")) + "\r\n")
    return work, images


def run(work, exe, symbols, name, env=None):
    out = os.path.join(work, "out-" + name)
    t0 = time.monotonic()
    p = hs.hookscope(["run", "-q", "-o", out, "--symbols", symbols, "--", exe], cwd=os.path.dirname(exe),
                     extra_env=env, timeout=120)
    elapsed = time.monotonic() - t0
    return hs.Trace(p, os.path.relpath(out, hs.ROOT)), elapsed


def names(t, module):
    return sorted(f["name"] for f in t.functions(module))


def calls_table(txt):
    """report.txt's rows of calls per function (calls, name, module)."""
    lines = txt.splitlines()
    at = next((i for i, l in enumerate(lines) if l.split() == ["calls", "function", "module"]), None)
    hs.check(at is not None, "report.txt has no calls table")
    rows = []
    for l in lines[at + 1:]:
        if not l.strip():
            break
        rows.append(l.split())
    return rows


def test_pdbs_downloaded_once_into_the_cache():
    work, images = setup("once")
    srv = Server(os.path.join(work, "served"))
    try:
        cache = os.path.join(work, "cache")
        symbols = f"srv*{cache}*{srv.url}/store"
        first = {}
        for n, (exe, key) in images.items():
            t, _ = run(work, exe, symbols, n)
            hs.eq(t.rc, 0, f"{n}: exit code ({t.stderr.decode(errors='replace')})")
            hs.eq(t.stderr.decode().strip(), "", f"{n}: nothing to say")
            asked = [f"/store/{n}.pdb/{key}/{f}" for f in (f"{n}.pdb", f"{n}.pd_", "file.ptr")]
            want = {"pdbc": asked[:1], "pdbcxx": asked[:2], "pdbmsvc": asked}[n]
            hs.eq(srv.take(), {a: 1 for a in want}, f"{n}: the server's requests")
            # in the cache, in the store layout, the very PDB
            with open(os.path.join(hs.ROOT, PDB, n + ".pdb"), "rb") as f:
                pdb = f.read()
            kept = os.path.join(cache, n + ".pdb", key, n + ".pdb")
            hs.check(os.path.exists(kept), f"{n}: {kept} not in the cache: {sorted(os.listdir(cache))}")
            with open(kept, "rb") as f:
                hs.check(f.read() == pdb, f"{n}: the cache's {n}.pdb differs from the fixture's")
            hs.eq(sorted(os.listdir(os.path.join(cache, n + ".pdb", key))), [n + ".pdb"],
                  f"{n}: the cache's folder holds only the PDB")
            first[n] = t
        # the names a run gets with the PDB at hand (the fixtures' folder)
        for n, (exe, key) in images.items():
            base, _ = run(work, exe, os.path.join(hs.ROOT, PDB), n + "-local")
            hs.eq(base.rc, 0, f"{n}: exit code with the local PDB")
            got = names(first[n], n + ".exe")
            hs.check(sum(1 for x in got if not x.startswith("sub_")) >= 15, f"{n}: few names: {got[:20]}")
            hs.eq(got, names(base, n + ".exe"), f"{n}: names from the server vs from the PDB at hand")
            rows = calls_table(first[n].txt)
            hs.check(len(rows) >= 10, f"{n}: report.txt's calls table: {rows}")
            hs.eq(rows, calls_table(base.txt), f"{n}: report.txt's calls from the server vs from the PDB at hand")
        for x in ("leaf_square", "apply_op", "run_sort"):
            hs.check(x in names(first["pdbc"], "pdbc.exe"), f"pdbc: no {x}")
        hs.check("shapes::Rect::area() const" in names(first["pdbcxx"], "pdbcxx.exe"), "pdbcxx: no Rect::area")
        # a second run: the cache, not the server
        for n, (exe, key) in images.items():
            t, _ = run(work, exe, symbols, n + "-again")
            hs.eq(t.rc, 0, f"{n} again: exit code")
            hs.eq(names(t, n + ".exe"), names(first[n], n + ".exe"), f"{n} again: names")
        hs.eq(srv.take(), {}, "requests of the second runs")
    finally:
        srv.close()


def test_failures_one_line_each():
    work, images = setup("failures")
    srv, silent = Server(os.path.join(work, "served")), Silent()
    exe, key = images["pdbc"]
    pdbcxx_size = os.path.getsize(os.path.join(hs.ROOT, PDB, "pdbcxx.pdb"))
    try:
        cases = [
            ("missing", f"{srv.url}/empty", "not found (nor pdbc.pd_, nor file.ptr)",
             [f"/empty/pdbc.pdb/{key}/{f}" for f in ("pdbc.pdb", "pdbc.pd_", "file.ptr")]),
            ("error", f"{srv.url}/broken", "server error 500 (pdbc.pdb)", [f"/broken/pdbc.pdb/{key}/pdbc.pdb"]),
            ("garbage", f"{srv.url}/garbage", "bad file (pdbc.pdb: not a PDB (no MSF 7.00 header))",
             [f"/garbage/pdbc.pdb/{key}/pdbc.pdb"]),
            ("other", f"{srv.url}/other", f"bad file (pdbc.pdb is another build, {images['pdbcxx'][1]})",
             [f"/other/pdbc.pdb/{key}/pdbc.pdb"]),
            ("short", f"{srv.url}/short", f"bad file (pdbc.pdb: 4096 of the {pdbcxx_size} bytes announced came)",
             [f"/short/pdbc.pdb/{key}/pdbc.pdb"]),
            ("silent", silent.url, f"timed out (nothing came for {TIMEOUT_S} s)", None),
        ]
        for name, url, why, requests in cases:
            cache = os.path.join(work, "cache-" + name)
            t, elapsed = run(work, exe, f"srv*{cache}*{url}", name, env={"HOOKSCOPE_SYMSRV_TIMEOUT": str(TIMEOUT_S)})
            err = t.stderr.decode(errors="replace")
            hs.eq(t.rc, 0, f"{name}: exit code ({err})")
            line = f"pdbc.pdb {key} from {url}: {why}"
            lines = [l for l in err.splitlines() if l]
            hs.eq(lines[0] if lines else None, "hookscope: " + line, f"{name}: the first line")
            hs.eq(lines[1:], ["hookscope: no symbols for pdbc.exe: pdbc.pdb not found (looked at "
                              "C:\\hookscope-absent\\pdbc.pdb, the image's folder, 2 --symbols places, "
                              "0 _NT_SYMBOL_PATH places)"], f"{name}: the other lines")
            hs.check(line in t.json["warnings"], f"{name}: not in report.json's warnings: {t.json['warnings']}")
            hs.check("warning    " + line in t.txt, f"{name}: not in report.txt")
            # the run goes on: the exports are named, the rest sub_<rva>
            hs.check(any(f["calls"] for f in t.functions("pdbc.exe")), f"{name}: no calls counted")
            hs.check(not os.path.exists(os.path.join(cache, "pdbc.pdb", key, "pdbc.pdb")),
                     f"{name}: something kept in the cache")
            if requests is not None:
                # asked once in the run (the agent's functions and the report's names: one request)
                hs.eq(srv.take(), {r: 1 for r in requests}, f"{name}: the server's requests")
            else:
                hs.eq(len(silent.accepted), 1, "silent: connections (the server is not asked again in the run)")
                hs.check(elapsed < TIMEOUT_S + 8, f"silent: the run took {elapsed:.1f} s")
    finally:
        srv.close()
        silent.close()


def dripped(name, drip, said):
    """A run whose symbol server is `drip`, with a timeout of TIMEOUT_S (2 s):
    its one line says the download was too slow, `said` (a pattern of what
    follows "pdbc.pdb: ") and the deadline (4 s, and 2 s per MB); the server
    was asked once and the run went on in time. Returns the line's match."""
    try:
        work, images = setup(name)
        exe, key = images["pdbc"]
        cache = os.path.join(work, "cache")
        t, elapsed = run(work, exe, f"srv*{cache}*{drip.url}", name, env={"HOOKSCOPE_SYMSRV_TIMEOUT": str(TIMEOUT_S)})
        err = t.stderr.decode(errors="replace")
        hs.eq(t.rc, 0, f"exit code ({err})")
        lines = [l for l in err.splitlines() if l]
        m = re.fullmatch(rf"hookscope: pdbc\.pdb {key} from {re.escape(drip.url)}: too slow \(pdbc\.pdb: {said}; a "
                         rf"download has 4 s, and 2 s more per MB that comes\)", lines[0] if lines else "")
        hs.check(m, f"the line: {lines}")
        hs.eq(len(drip.accepted), 1, "connections (the server is not asked again in the run)")
        hs.check(elapsed < 2 * TIMEOUT_S + 10, f"the run took {elapsed:.1f} s")
        hs.check(any(f["calls"] for f in t.functions("pdbc.exe")), "the run went on: calls counted")
        return m
    finally:
        drip.close()


def test_dripping_server_meets_the_deadline():
    """A server that sends a byte every 0.5 s never pauses for the timeout
    (2 s here): the download ends at its deadline, twice the timeout and
    the timeout again per MB that came (4 s here), in one line; the server
    is not asked again in the run, which goes on."""
    m = dripped("drip", Drip(), r"(\d+) bytes in (\S+) s")
    hs.check(4 <= float(m.group(2)) < 5.5 and 5 <= int(m.group(1)) <= 11, f"the deadline's figures: {m.groups()}")


def test_dripping_headers_meet_the_deadline():
    """A server whose headers come a byte every 0.5 s, never ending, never
    pauses for the timeout (2 s here) either: the download ends at its
    deadline (4 s: no bytes of the file came) in one line; the server is
    not asked again, and the run goes on."""
    m = dripped("drip-headers", Drip(head=b"HTTP/1.1 200 OK\r\nX-Slow: "), r"no answer in (\S+) s")
    hs.check(4 <= float(m.group(1)) < 6, f"given up after {m.group(1)} s")


def pdb_function(n):
    """(rva, name) of the largest procedure of build/fixtures/pdb/N.pdb
    (llvm-pdbutil's list), named as `hookscope functions` names it with
    the PDB at hand."""
    if not pdbref.pdbutil_path():
        raise hs.Skip("llvm-pdbutil is not installed (make deps)")
    procs = [(size, rva) for rva, size, kind, _, _ in pdbref.load(os.path.join(hs.ROOT, PDB, n + ".pdb")).procs
             if kind in ("G", "L")]
    size, rva = max(procs)
    p = hs.hookscope(["functions", f"{PDB}/{n}.exe"])
    hs.eq(p.returncode, 0, f"functions {n}.exe")
    for line in p.stdout.decode().splitlines():
        m = re.match(r"^0x([0-9a-f]+)\s+\d+\s+\S+\s+(?:yes \(\S+\)|yes|no: \S+)\s+pdb\s+(.+)$", line)
        if m and int(m.group(1), 16) == rva:
            return rva, m.group(2)
    raise AssertionError(f"{n}.exe: `functions` does not name the procedure at {rva:#x}")


def images_trace(work, name, specs):
    """tests/support/etlgen.c's "images" trace of specs (NAME=KEY@RVA)."""
    etl = os.path.join(work, name + ".etl")
    subprocess.run([os.path.join(hs.ROOT, hs.need("build/native/tools/etlgen")), "images", etl] + specs, check=True)
    return etl


def report_etl(work, etl, symbols, attempt):
    """`hookscope report --etl` of its process 400: the Trace, and the lines
    of stderr but the summary."""
    out = os.path.join(work, "etl-" + attempt)
    p = hs.hookscope(["report", "--etl", etl, "--pid", "400", "-o", out, "--symbols", symbols])
    err = p.stderr.decode(errors="replace")
    hs.eq(p.returncode, 0, f"{attempt}: exit code ({err})")
    return hs.Trace(p, os.path.relpath(out, hs.ROOT)), [l for l in err.splitlines() if "reports in" not in l]


def test_trace_images_downloaded_at_once():
    """A trace's images known only by their RSDS records: their PDBs asked
    all at once (the server takes 0.5 s per request, and the requests
    overlap), each sample named, the missing one in one line."""
    work, images = setup("trace")
    srv = Server(os.path.join(work, "served"), delay=0.5)
    try:
        want, specs = {}, []
        for n, (exe, key) in images.items():
            rva, name = pdb_function(n)
            want[n + ".exe"] = name
            specs.append(f"{n}.exe={key}@{rva + 2:#x}")
        gone = "0123456789ABCDEF0123456789ABCDEF1"
        specs.append(f"gone.exe={gone}@0x1000")
        etl = images_trace(work, "images", specs)
        cache = os.path.join(work, "cache-trace")
        url = f"{srv.url}/store"
        missing = {f"/store/gone.pdb/{gone}/{f}": 1 for f in ("gone.pdb", "gone.pd_", "file.ptr")}
        for attempt in ("first", "again"):
            t, lines = report_etl(work, etl, f"srv*{cache}*{url}", attempt)
            line = f"gone.pdb {gone} from {url}: not found (nor gone.pd_, nor file.ptr)"
            hs.eq(lines, ["hookscope: " + line], f"{attempt}: stderr {t.stderr!r}")
            hs.check(line in t.json["warnings"], f"{attempt}: warnings {t.json['warnings']}")
            got = {f["module"]: f["name"] for f in t.json["functions"]}
            hs.eq(got, want, f"{attempt}: the samples' functions")
            asked = srv.take()
            if attempt == "first":
                hs.eq(sorted(asked), sorted(list(missing) + [
                    f"/store/pdbc.pdb/{images['pdbc'][1]}/pdbc.pdb",
                    f"/store/pdbcxx.pdb/{images['pdbcxx'][1]}/pdbcxx.pdb",
                    f"/store/pdbcxx.pdb/{images['pdbcxx'][1]}/pdbcxx.pd_",
                    f"/store/pdbmsvc.pdb/{images['pdbmsvc'][1]}/pdbmsvc.pdb",
                    f"/store/pdbmsvc.pdb/{images['pdbmsvc'][1]}/pdbmsvc.pd_",
                    f"/store/pdbmsvc.pdb/{images['pdbmsvc'][1]}/file.ptr"]), "first: requests")
                hs.eq(set(asked.values()), {1}, "first: each asked once")
                hs.check(srv.most_at_once >= 3, f"first: at most {srv.most_at_once} requests at once")
            else:
                # the cache serves the three; a miss is asked again in a new run
                hs.eq(asked, missing, "again: requests")
            for n, (exe, key) in images.items():
                hs.check(os.path.exists(os.path.join(cache, n + ".pdb", key, n + ".pdb")), f"{n}.pdb not in the cache")
    finally:
        srv.close()


def console_text(raw):
    """What Wine's console showed on a pseudo-terminal: its cursor moves
    undone (a blank is written as erase-line and one column forward)."""
    text = raw.decode(errors="replace").replace("\x1b[1C", " ")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


def test_progress_lines_on_a_console_only():
    """On a console each download shows when it starts and when it ends;
    the other tests, on pipes, see none of it."""
    work, images = setup("console")
    srv = Server(os.path.join(work, "served"))
    exe, key = images["pdbc"]
    master, slave = pty.openpty()
    try:
        cache = os.path.join(work, "cache")
        p = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "run", "-q", "-o", os.path.join(work, "out"),
                              "--symbols", f"srv*{cache}*{srv.url}/store", "--", exe],
                             stdin=slave, stdout=slave, stderr=slave, cwd=os.path.dirname(exe), env=hs.env())
        os.close(slave)
        raw = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:          # the terminal's last writer is gone
                break
            if not chunk:
                break
            raw += chunk
        hs.eq(p.wait(timeout=120), 0, "exit code")
        lines = [l.strip() for l in console_text(raw).splitlines() if l.strip().startswith("hookscope: ")]
        hs.eq(len(lines), 2, f"the console's lines: {lines}")
        hs.eq(lines[0], f"hookscope: downloading pdbc.pdb from {srv.url}/store", "the first line")
        hs.check(re.fullmatch(r"hookscope: pdbc\.pdb: 0\.1 MB in \d+\.\d s", lines[1]), f"the last line: {lines[1]}")
        hs.eq(srv.take(), {f"/store/pdbc.pdb/{key}/pdbc.pdb": 1}, "the server's requests")
    finally:
        os.close(master)
        srv.close()


def test_bare_server_keeps_in_the_cache_entry():
    """srv*URL keeps what it gets in the folder of the cache*DIR before it
    (here through _NT_SYMBOL_PATH, with `hookscope functions`); without
    one, it is one line and nothing is asked. Also: a .pd_ of LZX form, and
    a timeout that is no number of seconds."""
    work, images = setup("bare")
    srv = Server(os.path.join(work, "served"))
    exe, key = images["pdbc"]
    try:
        cache = os.path.join(work, "cache")
        p = hs.hookscope(["functions", exe], extra_env={"_NT_SYMBOL_PATH": f"cache*{cache};srv*{srv.url}/store"})
        hs.eq((p.returncode, p.stderr.decode()), (0, ""), "cache*DIR;srv*URL: exit code, stderr")
        pdb_names = [l.split()[-1] for l in p.stdout.decode().splitlines() if " pdb " in l]
        hs.check({"leaf_square", "apply_op", "run_sort"} <= set(pdb_names), f"names from the PDB: {pdb_names[:10]}")
        hs.check(os.path.exists(os.path.join(cache, "pdbc.pdb", key, "pdbc.pdb")), "pdbc.pdb not in the cache")
        hs.eq(srv.take(), {f"/store/pdbc.pdb/{key}/pdbc.pdb": 1}, "cache*DIR;srv*URL: requests")
        p = hs.hookscope(["functions", "--symbols", f"srv*{srv.url}/store", exe])
        hs.eq(p.returncode, 0, "srv*URL: exit code")
        hs.eq(p.stderr.decode().splitlines()[0],
              f"hookscope: pdbc.pdb {key} from {srv.url}/store: no folder to keep it in "
              f"(give srv*DIR*{srv.url}/store, or cache*DIR before the entry)", "srv*URL: the line")
        hs.eq(srv.take(), {}, "srv*URL: requests")
        # an LZX cabinet (uncompressed LZX blocks)
        lzx = os.path.join(work, "cache-lzx")
        p = hs.hookscope(["functions", "--symbols", f"srv*{lzx}*{srv.url}/lzx", exe])
        hs.eq((p.returncode, p.stderr.decode()), (0, ""), "LZX: exit code, stderr")
        hs.check("leaf_square" in [l.split()[-1] for l in p.stdout.decode().splitlines() if " pdb " in l],
                 "LZX: names from the PDB")
        with open(os.path.join(hs.ROOT, PDB, "pdbc.pdb"), "rb") as f, \
                open(os.path.join(lzx, "pdbc.pdb", key, "pdbc.pdb"), "rb") as g:
            hs.check(f.read() == g.read(), "LZX: the cache's pdbc.pdb differs from the fixture's")
        hs.eq(srv.take(), {f"/lzx/pdbc.pdb/{key}/pdbc.pdb": 1, f"/lzx/pdbc.pdb/{key}/pdbc.pd_": 1}, "LZX: requests")
        # file.ptr: the server's message, a path to nothing
        for where, why in (("msg", 'not given: the server says "withheld by its owner"'),
                           ("dangling", "not found (file.ptr points at "
                            + wine_path(os.path.join(work, "nowhere", "pdbc.pdb")) + ": ")):
            p = hs.hookscope(["functions", "--symbols", f"srv*{os.path.join(work, 'cache-' + where)}*{srv.url}/{where}",
                              exe])
            first = p.stderr.decode().splitlines()[0]
            hs.eq((p.returncode, first[:len(f"hookscope: pdbc.pdb {key} from {srv.url}/{where}: {why}")]),
                  (0, f"hookscope: pdbc.pdb {key} from {srv.url}/{where}: {why}"), f"file.ptr {where}: {first}")
            hs.eq(srv.take(), {f"/{where}/pdbc.pdb/{key}/{f}": 1 for f in ("pdbc.pdb", "pdbc.pd_", "file.ptr")},
                  f"file.ptr {where}: requests")
        for bad in ("abc", "0", "-1", "2s", "3601"):
            p = hs.hookscope(["functions", exe], extra_env={"HOOKSCOPE_SYMSRV_TIMEOUT": bad})
            hs.eq((p.returncode, p.stderr.decode().splitlines()),
                  (2, [f"hookscope: HOOKSCOPE_SYMSRV_TIMEOUT={bad}: not a number of seconds above 0 and at most 3600"]),
                  f"HOOKSCOPE_SYMSRV_TIMEOUT={bad}")
    finally:
        srv.close()


def image_key(exe):
    """A store's folder for an image: its TimeDateStamp (8 hex digits) and
    SizeOfImage (hex), from the PE headers."""
    with open(exe, "rb") as f:
        d = f.read(4096)
    pe = struct.unpack_from("<I", d, 0x3C)[0]
    return "%08X%x" % (struct.unpack_from("<I", d, pe + 8)[0], struct.unpack_from("<I", d, pe + 24 + 56)[0])


def test_trace_image_by_timestamp_and_size():
    """An image a trace names no PDB for (no DbgID_RSDS record) comes from
    the server by name, timestamp and size of image; its PDB then by the
    image's own RSDS record; a sample in it is named from that PDB."""
    work, images = setup("image")
    exe, pdb_key = images["pdbc"]
    key = image_key(exe)
    os.makedirs(os.path.join(work, "served", "store", "pdbc.exe", key))
    shutil.copy(exe, os.path.join(work, "served", "store", "pdbc.exe", key))
    srv = Server(os.path.join(work, "served"))
    try:
        rva, name = pdb_function("pdbc")
        gone = "5000000010000"
        etl = images_trace(work, "image", [f"pdbc.exe={key}@{rva + 2:#x}", f"gone.exe={gone}@0x10"])
        cache = os.path.join(work, "cache")
        url = f"{srv.url}/store"
        missing = {f"/store/gone.exe/{gone}/{f}": 1 for f in ("gone.exe", "gone.ex_", "file.ptr")}
        for attempt in ("first", "again"):
            t, lines = report_etl(work, etl, f"srv*{cache}*{url}", attempt)
            hs.eq(lines, [f"hookscope: gone.exe {gone} from {url}: not found (nor gone.ex_, nor file.ptr)"],
                  f"{attempt}: stderr {t.stderr!r}")
            hs.eq([(f["module"], f["name"]) for f in t.json["functions"]], [("pdbc.exe", name)],
                  f"{attempt}: the samples' functions")
            want = dict(missing)
            if attempt == "first":
                want.update({f"/store/pdbc.exe/{key}/pdbc.exe": 1, f"/store/pdbc.pdb/{pdb_key}/pdbc.pdb": 1})
            hs.eq(srv.take(), want, f"{attempt}: requests")
        with open(exe, "rb") as f, open(os.path.join(cache, "pdbc.exe", key, "pdbc.exe"), "rb") as g:
            hs.check(f.read() == g.read(), "the cache's pdbc.exe differs from the served one")
        hs.check(os.path.exists(os.path.join(cache, "pdbc.pdb", pdb_key, "pdbc.pdb")), "pdbc.pdb not in the cache")
    finally:
        srv.close()


def test_trace_image_without_symbols_grouped_by_its_functions():
    """An image at hand (a --symbols folder, found by name, timestamp and
    size) with no symbols at all (stripped: no PDB, COFF, DWARF or
    exports): its unwind data bounds its functions, so a trace's samples
    in it are grouped per function, named as `hookscope functions` names
    them (sub_RVA); without the image they stay places (module+0xoff)."""
    work = os.path.join(hs.ROOT, hs.outdir("symsrv-stripped"))
    os.makedirs(os.path.join(work, "flat"))
    exe = os.path.join(work, "flat", "cpusplit.exe")
    strip = shutil.which("x86_64-w64-mingw32-strip")
    if not strip:
        raise hs.Skip("x86_64-w64-mingw32-strip is not installed (make deps)")
    subprocess.run([strip, "-o", exe, os.path.join(hs.ROOT, hs.need("build/tests/cpusplit.exe"))], check=True)
    p = hs.hookscope(["functions", os.path.relpath(exe, hs.ROOT)])
    hs.eq(p.returncode, 0, f"functions: {p.stderr!r}")
    funcs = []
    for line in p.stdout.decode().splitlines():
        m = re.match(r"^0x([0-9a-f]+)\s+(\d+)\s+\S.*\s(sub_[0-9a-f]+)$", line)
        if m:
            funcs.append((int(m.group(1), 16), int(m.group(2)), m.group(3)))
    hs.check(len(funcs) > 10 and all(n == f"sub_{rva:x}" for rva, _, n in funcs), f"stripped: {funcs[:5]}")
    (a, _, name_a), (b, _, name_b) = [f for f in funcs if f[1] >= 0x40][:2]
    etl = images_trace(work, "stripped", [f"cpusplit.exe={image_key(exe)}@{a + 2:#x},{a + 0x30:#x},{b + 4:#x}"])
    out = os.path.join(work, "with")
    p = hs.hookscope(["report", "-q", "--etl", etl, "--pid", "400", "-o", out, "--symbols", os.path.join(work, "flat")])
    hs.eq(p.returncode, 0, f"report: {p.stderr!r}")
    t = hs.Trace(p, os.path.relpath(out, hs.ROOT))
    got = sorted((f["module"], f["name"], f["samples"]["self"]) for f in t.json["functions"])
    hs.eq(got, sorted([("cpusplit.exe", name_a, 2), ("cpusplit.exe", name_b, 1)]), "two functions, by samples")
    hs.eq(sorted(t.file("cpu-stacks.folded").splitlines()),
          sorted([f"cpusplit.exe!{name_a} 2", f"cpusplit.exe!{name_b} 1"]), "cpu-stacks.folded")
    out = os.path.join(work, "without")
    p = hs.hookscope(["report", "-q", "--etl", etl, "--pid", "400", "-o", out])
    hs.eq(p.returncode, 0, f"report without: {p.stderr!r}")
    t = hs.Trace(p, os.path.relpath(out, hs.ROOT))
    hs.eq(sorted(t.file("cpu-stacks.folded").splitlines()),
          sorted(f"cpusplit.exe+{r:#x} 1" for r in (a + 2, a + 0x30, b + 4)), "without the image: places")


def test_bad_symbol_paths_one_line_each():
    """A --symbols entry that cannot be used is a usage error in one line
    (exit 2, nothing read): a server that is not http:// or https://, a
    srv* or cache* that names nothing, a server outside srv*, a file where
    a folder is expected (a folder entry, a store); a good path passes;
    a folder entry that is not there is one line and the search goes on
    (a store's folder is made when written: no line).
    In _NT_SYMBOL_PATH such an entry is one line, and the command goes on."""
    pdb = os.path.join(hs.ROOT, PDB, "pdbc-instr.pdb")
    cases = [
        ("srv*BADSCHEME://x", "'srv*BADSCHEME://x': a symbol server's address begins with http:// or https://"),
        ("srv*", "'srv*' names no folder and no server"),
        ("cache*", "'cache*' names no folder and no server"),
        (f"{os.path.dirname(pdb)};SRV**", "'SRV**' names no folder and no server"),
        ("https://example.org/symbols",
         "'https://example.org/symbols' is a symbol server: give it as srv*DIR*https://example.org/symbols "
         "(DIR: where to keep its files)"),
        (pdb, f"'{pdb}': {pdb} is a file, not a folder (give the folder that holds it)"),
        (f"srv*{pdb}*https://example.org/s", f"'srv*{pdb}*https://example.org/s': {pdb} is a file, not a folder "
                                             "(give the folder that holds it)"),
    ]
    for path, why in cases:
        p = hs.hookscope(["functions", "--symbols", path, "build/examples/demo.exe"])
        hs.eq((p.returncode, p.stdout), (2, b""), f"{path}: exit code, nothing listed")
        hs.eq(p.stderr.decode().splitlines()[0], "hookscope: --symbols: " + why, f"{path}: the line")
    p = hs.hookscope(["functions", "--symbols", f"cache*{os.path.dirname(pdb)};srv*C:\\nosuch*https://example.org/s",
                      "build/examples/demo.exe"])
    hs.eq((p.returncode, p.stderr.decode()), (0, ""), "a good path: exit code, stderr")
    p = hs.hookscope(["functions", "--symbols", "C:\\nosuch;" + os.path.dirname(pdb), "build/examples/demo.exe"])
    hs.eq((p.returncode, p.stderr.decode().splitlines()),
          (0, ["hookscope: --symbols: 'C:\\nosuch': no such folder (the other places are searched)"]),
          "a folder that is not there: exit code, the line")
    hs.check(b"main" in p.stdout, "a folder that is not there: the functions listed")
    # _NT_SYMBOL_PATH is the environment's, not the command's: one line, and the command goes on
    p = hs.hookscope(["functions", "build/examples/demo.exe"], extra_env={"_NT_SYMBOL_PATH": f"{os.path.dirname(pdb)};srv*BAD://x"})
    hs.eq((p.returncode, p.stderr.decode().splitlines()),
          (0, ["hookscope: _NT_SYMBOL_PATH: 'srv*BAD://x': a symbol server's address begins with http:// or "
               "https:// (that entry is not used)"]), "_NT_SYMBOL_PATH: exit code, the line")
    hs.check(b"main" in p.stdout, "the functions listed")
