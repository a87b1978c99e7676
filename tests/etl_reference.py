#!/usr/bin/env python3
"""An independent decoder of .etl files, in Python, for the tests of
hookscope's C reader (sampler/etl/). It implements the same documented
rules from the same sources (the WMI_BUFFER_HEADER and trace header
layouts, [MS-XCA], TraceEvent's payload layouts, Microsoft's CSwitch and
ReadyThread classes, TraceLog's stack joining) in separate code, and
prints the same summary as `etlstat FILE --summary`, so a test can compare
the two line by line. It also tells, for one process, each thread's time
running, ready and waiting from the context switches, by the rules of
sampler/etl_samples.h, as `hookscope report --etl` must give them
(off_cpu()).

  tests/etl_reference.py FILE                 the summary
  tests/etl_reference.py FILE --threads NAME  the threads of process NAME:
                                              CPU, wait and ready samples,
                                              wait and ready seconds
  tests/etl_reference.py FILE --jit NAME     the JIT-compiled methods of
                                              process NAME with CPU samples
                                              whose leaf is in them: module,
                                              name, samples
  tests/etl_reference.py FILE --misread-event-headers
        the same, as a decoder gets it that takes the size of an EVENT_HEADER
        record (kinds 0x12, 0x13) from offset 4, as for system and perfinfo
        headers: there it finds the record's Flags, so 0 ends the buffer and
        1 skips 8 bytes into the record; what follows is read as events
        (records of unknown kinds skipped by their first 16 bits) until one
        does not parse, which ends the buffer. The figures issue 12 gives
        come out this way (tests/test_etl.py).

Standard library only. Slow (seconds for the 33 MB fixture), and meant for
correct files: a corrupt file raises an exception.
"""
import bisect
import collections
import heapq
import struct
import sys

KERNEL_GUIDS = {
    # (Data1, Data2, Data3, Data4) -> kernel group
    (0x3d6fa8d0, 0xfe05, 0x11d0, bytes.fromhex("9dda00c04fd7ba7c")): 0x03,   # process
    (0x3d6fa8d1, 0xfe05, 0x11d0, bytes.fromhex("9dda00c04fd7ba7c")): 0x05,   # thread
    (0x2cb15d1d, 0x5fc1, 0x11d2, bytes.fromhex("abe100a0c911f518")): 0x14,   # image
    (0xce1dbfb4, 0x137e, 0x4da6, bytes.fromhex("87b03f59aa102cbc")): 0x0F,   # perfinfo
    (0xdef2fe46, 0x7bd6, 0x4b80, bytes.fromhex("bd94f57fe20d0ce3")): 0x18,   # stackwalk
    (0xb3e675d7, 0x2554, 0x4f18, bytes.fromhex("830b2762732560de")): 0xF0,   # KernelTraceControl ImageID
}
NONE = 0xFFFFFFFF
NEVER = (1 << 64) - 1
WINDOW = 4096


def guid_group(b):
    d1, d2, d3 = struct.unpack_from("<IHH", b, 0)
    return KERNEL_GUIDS.get((d1, d2, d3, bytes(b[8:16])), 0xFF)


# --- [MS-XCA] -------------------------------------------------------------

def xpress(inp):
    """Plain LZ77: 32-bit flag words read from the top bit, 0 = literal,
    1 = 16-bit match (distance-1 << 3 | length-3), length 7 continuing in a
    shared half byte, a byte, 16 and 32 bits."""
    out = bytearray()
    i = nflags = flags = half = 0
    n = len(inp)
    while True:
        if nflags == 0:
            if i == n:
                break
            flags = struct.unpack_from("<I", inp, i)[0]
            i += 4
            nflags = 32
        nflags -= 1
        if not (flags >> nflags) & 1:
            if i == n:
                break
            out.append(inp[i])
            i += 1
            continue
        if i == n:
            break
        word = struct.unpack_from("<H", inp, i)[0]
        i += 2
        dist, length = (word >> 3) + 1, word & 7
        if length == 7:
            if half == 0:
                length, half = inp[i] & 15, i
                i += 1
            else:
                length, half = inp[half] >> 4, 0
            if length == 15:
                length = inp[i]
                i += 1
                if length == 255:
                    length = struct.unpack_from("<H", inp, i)[0]
                    i += 2
                    if length == 0:
                        length = struct.unpack_from("<I", inp, i)[0]
                        i += 4
                    length -= 22
                length += 15
            length += 7
        length += 3
        start = len(out) - dist
        if start < 0:
            raise ValueError("xpress: match before the start")
        for k in range(length):
            out.append(out[start + k])
    return bytes(out)


def lznt1(inp, want):
    out = bytearray()
    i = 0
    while len(inp) - i >= 2:
        hdr = struct.unpack_from("<H", inp, i)[0]
        if hdr == 0:
            break
        size = (hdr & 0xFFF) + 1
        i += 2
        end = i + size
        start = len(out)
        if not hdr & 0x8000:
            out += inp[i:end]
            i = end
        else:
            while i < end:
                flags = inp[i]
                i += 1
                for _ in range(8):
                    if i >= end:
                        break
                    if not flags & 1:
                        out.append(inp[i])
                        i += 1
                    else:
                        tok = struct.unpack_from("<H", inp, i)[0]
                        i += 2
                        pos = len(out) - start
                        lbits = 12
                        p = pos - 1
                        while p >= 16:
                            lbits -= 1
                            p >>= 1
                        length = (tok & ((1 << lbits) - 1)) + 3
                        disp = (tok >> lbits) + 1
                        for _ in range(length):
                            out.append(out[-disp])
                    flags >>= 1
        if len(out) >= want:
            break
        if len(inp) - i >= 2 and struct.unpack_from("<H", inp, i)[0] != 0 and len(out) - start < 4096:
            out += bytes(4096 - (len(out) - start))
    return bytes(out[:want])


# --- buffers and events -----------------------------------------------------

class Event:
    __slots__ = ("kind", "group", "type", "version", "ptr", "pid", "tid", "ts", "data", "cpu", "ext_stack", "guid",
                 "event_id")


def parse_event(buf, p, end):
    """-> (Event or None for padding/unsized records, total size) or (None, 0) at the end."""
    if end - p < 4 or struct.unpack_from("<I", buf, p)[0] == 0xFFFFFFFF:
        return None, 0
    kind, marker = buf[p + 2], buf[p + 3]
    e = Event()
    e.ext_stack = None
    e.pid = e.tid = NONE
    e.guid, e.event_id = None, 0
    if not marker & 0x40:
        return None, struct.unpack_from("<H", buf, p)[0]
    if kind in (1, 2, 3, 4):
        hs = 32 if kind <= 2 else 24
        e.version, size, e.type, e.group, e.tid, e.pid, e.ts = struct.unpack_from("<H2xHBBIIQ", buf, p)
        e.ptr = 4 if kind in (1, 3) else 8
        body = (p + hs, p + size)
    elif kind in (0x10, 0x11):
        w0, size, e.type, e.group, e.ts = struct.unpack_from("<H2xHBBQ", buf, p)
        hs = 16 + (8 if w0 & 0x8000 else 0) + ((w0 >> 8) & 7) * 8
        e.version = w0 & ~0x8700
        e.ptr = 4 if kind == 0x10 else 8
        body = (p + hs, p + size)
    elif kind in (0x0A, 0x14, 0x0B, 0x15):
        size, e.type, _lvl, e.version, e.tid, e.pid, e.ts = struct.unpack_from("<H2xBBHIIQ", buf, p)
        hs = 72 if kind in (0x0B, 0x15) else 48
        e.group = guid_group(buf[p + 24:p + 40])
        e.guid = bytes(buf[p + 24:p + 40])
        e.ptr = 4 if kind in (0x0A, 0x0B) else 8
        body = (p + hs, p + size)
    elif kind in (0x12, 0x13):
        size, flags, _prop, e.tid, e.pid, e.ts = struct.unpack_from("<H2xHHIIQ", buf, p)
        e.version, e.type = buf[p + 42], buf[p + 45]
        e.group = guid_group(buf[p + 24:p + 40])
        e.guid = bytes(buf[p + 24:p + 40])
        e.event_id = struct.unpack_from("<H", buf, p + 40)[0]
        e.ptr = 4 if kind == 0x12 else 8
        at = p + 80
        if flags & 1:
            while True:
                _s, et, more, dsize = struct.unpack_from("<HHHH", buf, at)
                if et in (5, 6) and dsize >= 8:
                    fp = 8 if et == 6 else 4
                    nfr = (dsize - 8) // fp
                    e.ext_stack = list(struct.unpack_from("<%d%s" % (nfr, "Q" if fp == 8 else "I"), buf, at + 16))
                at += (8 + dsize + 7) & ~7
                if not more & 1:
                    break
        body = (at, p + size)
    else:
        return None, struct.unpack_from("<H", buf, p)[0]
    e.kind = kind
    if body[1] > end or body[0] > body[1]:
        raise ValueError("event runs past the buffer's data")
    e.data = buf[body[0]:body[1]]
    return e, size


def read_file(path, misread=False):
    data = open(path, "rb").read()
    info = {}
    bufs = []
    off = 0
    while off < len(data):
        size, saved = struct.unpack_from("<II", data, off)
        seq = struct.unpack_from("<Q", data, off + 0x18)[0]
        state = struct.unpack_from("<I", data, off + 0x2C)[0]
        offset, flags = struct.unpack_from("<IH", data, off + 0x30)
        cpu = struct.unpack_from("<H", data, off + 0x28)[0] if flags & 0x20 else data[off + 0x28]
        bufs.append(dict(off=off, size=size, end=saved or offset, seq=seq, cpu=cpu, flags=flags,
                         state=state))
        off += size
    # the logfile header: the first event of the first buffer
    h0 = bufs[0]
    hdr, hsize = parse_event(data, h0["off"] + 72, h0["off"] + h0["end"])
    d = hdr.data
    P = struct.unpack_from("<I", d, 44)[0]
    (info["buffer_size"], info["version"], info["provider_version"], info["ncpus"], info["end_time"],
     _res, _max, info["log_file_mode"], info["buffers_written"], _sb, info["pointer_size"],
     info["events_lost"], info["cpu_mhz"]) = struct.unpack_from("<IIIIQIIIIIIII", d, 0)
    (_boot, perf_freq, info["start_time"], clock, info["buffers_lost"]) = struct.unpack_from(
        "<QQQII", d, 232 + 2 * P)
    info["clock"] = clock if clock in (1, 2, 3) else 0
    info["clock_hz"] = {1: perf_freq, 2: 10000000, 3: info["cpu_mhz"] * 1000000}.get(clock, 0)
    names = d[264 + 2 * P:].decode("utf-16-le", errors="replace").split("\0")
    info["logger_name"], info["log_file_name"] = names[0], names[1] if len(names) > 1 else ""
    info["compressed"] = 1 if info["log_file_mode"] & 0x04000000 else 0
    info["compression"] = (h0["state"] & 0xFFFF) if info["compressed"] else 0
    info["buffers"] = len(bufs)
    info["buffers_compressed"] = sum(1 for b in bufs if b["flags"] & 0x40)
    info["buffers_events_lost"] = sum(1 for b in bufs if b["flags"] & 0x02)
    info["buffers_buffer_lost"] = sum(1 for b in bufs if b["flags"] & 0x04)
    seqs = sorted(set(b["seq"] for b in bufs))
    info["sequence_gaps"] = seqs[-1] - seqs[0] + 1 - len(seqs)
    info["cpus_seen"] = len(set(b["cpu"] for b in bufs))
    h0["skip"] = (hsize + 7) & ~7

    def stream(cpu_bufs, cpu):
        last_ts = 0
        for b in cpu_bufs:
            if b["flags"] & 0x40:
                raw = data[b["off"] + 72:b["off"] + b["size"]]
                body = xpress(raw) if info["compression"] == 3 else lznt1(raw, b["end"] - 72)
                buf = data[b["off"]:b["off"] + 72] + body
            else:
                buf = data[b["off"]:b["off"] + b["end"]]
            p = 72 + b.get("skip", 0)
            while p < b["end"]:
                if misread and buf[p + 2] in (0x12, 0x13):
                    size = struct.unpack_from("<H", buf, p + 4)[0]
                    if size == 0:
                        break
                    p += (size + 7) & ~7
                    continue
                try:
                    e, size = parse_event(buf, p, b["end"])
                except (ValueError, struct.error):
                    if misread:
                        break
                    raise
                if size == 0 or (misread and p + size > b["end"]):
                    break
                if e is None:
                    e = Event()
                    e.kind, e.group, e.ts, e.data, e.ext_stack = 0, 0xFF, last_ts, b"", None
                    e.guid, e.event_id = None, 0
                    e.pid = e.tid = NONE
                last_ts = e.ts
                e.cpu = cpu
                yield e
                p += (size + 7) & ~7

    percpu = collections.defaultdict(list)
    for b in bufs:
        percpu[b["cpu"]].append(b)
    streams = [stream(sorted(percpu[c], key=lambda b: (b["seq"], b["off"])), c) for c in sorted(percpu)]
    return info, heapq.merge(*streams, key=lambda e: (e.ts, e.cpu))


# --- the model --------------------------------------------------------------

def u16z(b, off):
    end = off
    while end + 1 < len(b) and (b[end] or b[end + 1]):
        end += 2
    return bytes(b[off:end]).decode("utf-16-le", errors="replace")


def u8z(b, off):
    end = b.find(b"\0", off)
    raw = bytes(b[off:end if end >= 0 else len(b)])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


class Model:
    def __init__(self, info):
        self.info = info
        self.kb = 0x80000000 if info["pointer_size"] == 4 else 0xFFFF000000000000
        self.procs = []          # dicts
        self.threads = []
        self.images = []
        self.samples = []        # dicts
        self.sched = []          # context switches and ReadyThread events (dicts), in stream order
        self.owners = []         # what a stack can belong to: samples and sched events, in stream order
        self.interval = 0        # the timer's sampling interval (100 ns), 0: none in the trace
        self.interval_started = False
        self.pid_now, self.tid_now, self.img_now = {}, {}, {}
        # stack joining
        self.waits = collections.defaultdict(list)    # tid -> [sample index]
        self.last_emit = collections.defaultdict(int)
        self.kkeys = collections.defaultdict(list)
        self.ukeys = collections.defaultdict(list)
        self.defs = {}

    # processes, threads, images
    def process(self, e):
        d, P = e.data, e.ptr
        if e.version == 0:
            pid, sid = struct.unpack_from("<" + ("Q" if P == 8 else "I"), d, 0)[0] & 0xFFFFFFFF, 2 * P
        else:
            pid = struct.unpack_from("<I", d, P)[0]
            sid = 2 * P + 20 if e.version >= 4 else 2 * P + 16 if e.version >= 3 else P + 16
        if struct.unpack_from("<I", d, sid)[0] == 0:
            name_at = sid + 4
        else:
            name_at = sid + 2 * P + 8 + 4 * d[sid + 2 * P + 1]
        name = u8z(d, name_at)
        i = self.pid_now.get(pid)
        p = self.procs[i] if i is not None else None
        if e.type == 1:
            if p is not None and p["end"] == NEVER and not p["flags"] & 4:
                p["end"] = e.ts
            i = self.new_proc(pid)
            self.procs[i]["start"] = e.ts
        elif e.type == 3:
            if p is None or p["flags"] & 4:
                i = self.new_proc(pid)
        else:
            if p is None or p["flags"] & 4:
                i = self.new_proc(pid)
            if e.type == 2:
                self.procs[i]["flags"] |= 4
                self.procs[i]["end"] = e.ts
        if not self.procs[i]["name"]:
            self.procs[i]["name"] = name

    def new_proc(self, pid):
        self.procs.append(dict(pid=pid, start=0, end=NEVER, flags=0, name=""))
        self.pid_now[pid] = len(self.procs) - 1
        return len(self.procs) - 1

    def thread(self, e):
        a, b = struct.unpack_from("<II", e.data, 0)
        pid, tid = (b, a) if e.version == 0 else (a, b)
        i = self.tid_now.get(tid)
        th = self.threads[i] if i is not None else None
        if th is None or th["flags"] & 4 or e.type == 1 or th["pid"] != pid:
            if th is not None and e.type == 1 and not th["flags"] & 4:
                th["end"] = e.ts
            self.threads.append(dict(tid=tid, pid=pid, start=0, end=NEVER, flags=0))
            i = self.tid_now[tid] = len(self.threads) - 1
        th = self.threads[i]
        if e.type == 1:
            th["start"] = e.ts
        elif e.type == 2:
            th["end"] = e.ts
            th["flags"] |= 4

    def image(self, e):
        d, P = e.data, e.ptr
        f = "Q" if P == 8 else "I"
        base = struct.unpack_from("<" + f, d, 0)[0]
        if e.version == 0:
            size, pid, name = struct.unpack_from("<I", d, P)[0], (0 if e.pid == NONE else e.pid), u16z(d, P + 4)
        elif e.version == 1:
            size, pid, name = struct.unpack_from("<" + f, d, P)[0], struct.unpack_from("<I", d, 2 * P)[0], \
                u16z(d, 2 * P + 4)
        else:
            size, pid, name = struct.unpack_from("<" + f, d, P)[0], struct.unpack_from("<I", d, 2 * P)[0], \
                u16z(d, 3 * P + 32)
        i = self.img_now.get((pid, base))
        if i is None or e.type == 10:
            if i is not None:
                self.images[i]["unload"] = e.ts
            self.images.append(dict(pid=pid, base=base, size=size, load=0, unload=NEVER,
                                    name=name.replace("/", "\\").split("\\")[-1]))
            i = self.img_now[(pid, base)] = len(self.images) - 1
        if e.type == 10:
            self.images[i]["load"] = e.ts
        elif e.type == 2:
            self.images[i]["unload"] = e.ts
            del self.img_now[(pid, base)]

    # samples and stacks (TraceLog's rules, see sampler/etl/stackjoin.c)
    def sample(self, e):
        P = e.ptr
        ip, tid = struct.unpack_from("<" + ("Q" if P == 8 else "I") + "I", e.data, 0)
        flags = 0
        if len(e.data) >= P + 8:
            b = e.data[P + 6]
            flags = (8 if b & 1 else 0) | (16 if b & 2 else 0)
        ti = self.tid_now.get(tid)
        s = dict(ts=e.ts, ip=ip, tid=tid, cpu=e.cpu, pid=self.threads[ti]["pid"] if ti is not None else NONE,
                 flags=flags | (1 if ip >= self.kb else 0), kern=[], user=[], user_known=False, kkey=0,
                 ukey=0, waiting=False, done=False, kind=0)
        s["own_tid"], s["own_pid"] = tid, s["pid"]
        self.samples.append(s)
        self.owners.append(s)
        if e.ext_stack:
            self.stack(e, e.ts, tid, e.ext_stack, e.pid)

    def pid_of(self, tid):
        ti = self.tid_now.get(tid)
        return self.threads[ti]["pid"] if ti is not None else NONE

    def cswitch(self, e):
        # CSwitch class: NewThreadId, OldThreadId, NewThreadPriority, OldThreadPriority, PreviousCState,
        # SpareByte, OldThreadWaitReason, OldThreadWaitMode, OldThreadState, OldThreadWaitIdealProcessor,
        # NewThreadWaitTime, Reserved
        if len(e.data) < 24:
            raise ValueError("short CSwitch")
        (new, old, nprio, oprio, cstate, _spare, reason, mode, state, ideal, wtime,
         _res) = struct.unpack_from("<IIbbBbBBBbII", e.data, 0)
        d = dict(ts=e.ts, kind=1, cpu=e.cpu, tid=new, pid=self.pid_of(new), other_tid=old,
                 other_pid=self.pid_of(old), nprio=nprio, oprio=oprio, state=state, reason=reason, mode=mode,
                 cstate=cstate, ideal=ideal, wtime=wtime, areason=0, aincr=0, rflags=0)
        # the stack walked for a context switch is the thread's switched in
        self.add_sched(e, d, new, d["pid"])

    def ready(self, e):
        # ReadyThread class: TThreadId, AdjustReason, AdjustIncrement, Flag, Reserved
        if len(e.data) < 8:
            raise ValueError("short ReadyThread")
        tid, areason, aincr, rflags = struct.unpack_from("<IbbB", e.data, 0)
        by = e.tid                       # the readying thread, if the header has one
        by_pid = NONE if by == NONE else (e.pid if e.pid != NONE else self.pid_of(by))
        d = dict(ts=e.ts, kind=2, cpu=e.cpu, tid=tid, pid=self.pid_of(tid), other_tid=by, other_pid=by_pid,
                 nprio=0, oprio=0, state=0, reason=0, mode=0, cstate=0, ideal=0, wtime=0, areason=areason,
                 aincr=aincr, rflags=rflags)
        self.add_sched(e, d, by, by_pid)

    def add_sched(self, e, d, own_tid, own_pid):
        d.update(flags=0, kern=[], user=[], user_known=False, kkey=0, ukey=0, waiting=False, done=False,
                 own_tid=own_tid, own_pid=own_pid)
        self.sched.append(d)
        self.owners.append(d)
        if e.ext_stack and own_tid != NONE:
            self.stack(e, e.ts, own_tid, e.ext_stack, e.pid)

    def set_interval(self, e):
        source, new, old = struct.unpack_from("<III", e.data, 0)
        if source != 0:
            return
        if e.type not in (72, 73):
            return
        # the interval in force at the first sample (sampler/etl/collector.c)
        if not self.samples:
            self.interval_started, self.interval = True, new
        elif not self.interval_started:
            self.interval_started, self.interval = True, (old if e.type == 72 else new)

    @staticmethod
    def untouched(o):
        return not (o["done"] or o["user_known"] or o["waiting"] or o["kkey"] or o["ukey"] or o["kern"])

    def find(self, ts, tid, cpu, pid=NONE):
        """The event a stack of thread tid at ts belongs to: of the last WINDOW owners with that
        timestamp and thread (or no thread yet: it takes this one), the best by thread known,
        same CPU, no stack part yet, a sample; then the latest on the same CPU, else the earliest."""
        lo = max(0, len(self.owners) - WINDOW)
        best, best_key = None, None
        for pos in range(len(self.owners) - 1, lo - 1, -1):
            o = self.owners[pos]
            if o["ts"] > ts:
                continue
            if o["ts"] < ts:
                break
            if o["own_tid"] not in (tid, NONE):
                continue
            same = o["cpu"] == cpu
            key = (o["own_tid"] == tid, same, self.untouched(o), o["kind"] == 0, pos if same else -pos)
            if best_key is None or key > best_key:
                best, best_key = o, key
        if best is not None and best["own_tid"] == NONE:
            best["own_tid"], best["own_pid"] = tid, pid
            best["other_tid"], best["other_pid"] = tid, pid
        return best

    def try_emit(self, s):
        if s["done"]:
            return True
        if not s["user_known"] or (not s["kern"] and s["kkey"]):
            return False
        s["done"] = True
        if s["kern"] or s["user"]:
            s["flags"] |= 2
        return True

    def log_kernel(self, s, frames):
        if s["done"]:
            return True
        s["kern"] = frames
        if s["own_pid"] in (0, 4):
            s["user_known"], s["user"] = True, []
        return self.try_emit(s)

    def log_user(self, s, frames):
        if s["done"]:
            return
        s["user_known"], s["user"] = True, frames
        self.try_emit(s)

    def log_user_key(self, s, key):
        if s["ukey"] or s["done"]:
            return
        if (key, 0) in self.defs:
            self.log_user(s, self.defs[(key, 0)])
            return
        s["ukey"] = key
        self.ukeys[key].append(s)

    def wait_thread(self, tid, s):
        if not s["waiting"]:
            s["waiting"] = True
            self.waits[tid].append(s)

    def exit_kernel(self, tid, target, frames=None, key=None):
        found = False
        for w in self.waits.pop(tid, []):
            w["waiting"] = False
            if frames is not None:
                self.log_user(w, frames)
            else:
                self.log_user_key(w, key)
            found |= w is target
        return found

    def stack(self, e, ets, tid, frames, pid=NONE):
        if not frames:
            return
        s = self.find(ets, tid, e.cpu, pid)
        if frames[-1] >= self.kb:
            if s is not None and not s["done"] and not self.log_kernel(s, frames):
                self.wait_thread(tid, s)
            return
        last = self.last_emit[tid]
        logged = False
        if frames[0] < self.kb:
            logged = self.exit_kernel(tid, s, frames=frames)
            self.last_emit[tid] = e.ts
        if logged or s is None or s["done"] or ets < last:
            return
        self.log_user(s, frames)

    def stack_ref(self, e, ets, tid, key, kernel, pid=NONE):
        s = self.find(ets, tid, e.cpu, pid)
        if s is None:
            return
        if kernel:
            if s["kkey"] or s["done"]:
                return
            if (key, 1) in self.defs:
                if self.log_kernel(s, self.defs[(key, 1)]):
                    return
            else:
                s["kkey"] = key
                self.kkeys[key].append(s)
                if s["own_pid"] in (0, 4):
                    s["user_known"] = True
                    return
            self.wait_thread(tid, s)
        elif not self.exit_kernel(tid, s, key=key):
            self.log_user_key(s, key)

    def stack_def(self, typ, key, frames):
        if not frames:
            return
        kernel = frames[-1] >= self.kb
        for s in (self.kkeys if kernel else self.ukeys).pop(key, [])[::-1]:
            if kernel:
                s["kkey"] = 0
                self.log_kernel(s, frames)
            else:
                s["ukey"] = 0
                self.log_user(s, frames)
        if typ == 34:
            self.defs[(key, int(kernel))] = frames
        elif typ == 35:
            self.defs.pop((key, int(kernel)), None)

    def event(self, e):
        g, t, P = e.group, e.type, e.ptr
        f = "Q" if P == 8 else "I"
        if (g == 0x03 and t == 10) or (g == 0x14 and t in (2, 3, 4, 10)):
            self.image(e)
        elif g == 0x03 and t in (1, 2, 3, 4, 39):
            self.process(e)
        elif g == 0x05 and t in (1, 2, 3, 4):
            self.thread(e)
        elif g == 0x05 and t == 36 and e.version >= 2:
            self.cswitch(e)
        elif g == 0x05 and t == 50:
            self.ready(e)
        elif g == 0x0F and t == 46:
            self.sample(e)
        elif g == 0x0F and t in (72, 73, 74):
            self.set_interval(e)
        elif g == 0x18 and t == 32:
            ets, pid, tid = struct.unpack_from("<QII", e.data, 0)
            n = (len(e.data) - 16) // P
            self.stack(e, ets, tid, list(struct.unpack_from("<%d%s" % (n, f), e.data, 16)), pid)
        elif g == 0x18 and t in (37, 38):
            ets, pid, tid = struct.unpack_from("<QII", e.data, 0)
            self.stack_ref(e, ets, tid, struct.unpack_from("<" + f, e.data, 16)[0], t == 37, pid)
        elif g == 0x18 and t in (34, 35, 36):
            n = (len(e.data) - P) // P
            self.stack_def(t, struct.unpack_from("<" + f, e.data, 0)[0],
                           list(struct.unpack_from("<%d%s" % (n, f), e.data, P)))

    def finish(self):
        for tid in list(self.waits):
            for w in self.waits.pop(tid):
                was = w["done"]
                self.log_user(w, [])
                if not was and w["done"] and w["kern"]:
                    w["flags"] |= 4
        by_tid = collections.defaultdict(list)
        for th in self.threads:
            by_tid[th["tid"]].append(th)

        def later_pid(tid, ts):
            # the record that started last before the event, if not ended by then
            before = [th for th in by_tid.get(tid, ()) if th["start"] <= ts]
            if before:
                th = max(reversed(before), key=lambda th: th["start"])
                if ts <= th["end"]:
                    return th["pid"]
            return NONE

        for s in self.samples:
            if s["pid"] == NONE:
                s["pid"] = later_pid(s["tid"], s["ts"])
        for d in self.sched:
            if d["pid"] == NONE:
                d["pid"] = later_pid(d["tid"], d["ts"])
            if d["other_pid"] == NONE and d["other_tid"] != NONE:
                d["other_pid"] = later_pid(d["other_tid"], d["ts"])

    def index(self):
        """Per process (and for the kernel) images sorted by base; processes by pid."""
        self.by_pid = collections.defaultdict(list)
        self.kernel_images = []
        for i, m in enumerate(self.images):
            if m["size"] <= 0xFFFFFFFF:          # larger is corrupt (SizeOfImage is 32-bit)
                (self.kernel_images if m["base"] >= self.kb else self.by_pid[m["pid"]]).append((m["base"], i))
        for lst in list(self.by_pid.values()) + [self.kernel_images]:
            lst.sort()
        self.max_size = max((m["size"] for m in self.images if m["size"] <= 0xFFFFFFFF), default=0)
        self.procs_of = collections.defaultdict(list)
        for p in self.procs:
            self.procs_of[p["pid"]].append(p)

    def proc_at(self, pid, ts):
        best = None
        for p in self.procs_of.get(pid, ()):
            if p["start"] <= ts and (best is None or p["start"] >= best["start"]):
                best = p
        return best

    def module_of(self, s):
        ip, kernel = s["ip"], s["ip"] >= self.kb
        lst = self.kernel_images if kernel else self.by_pid.get(s["pid"], [])
        k = bisect.bisect_right(lst, (ip, float("inf")))
        best, best_i = None, None
        while k > 0:
            k -= 1
            base, i = lst[k]
            if ip - base >= self.max_size:
                break
            m = self.images[i]
            if ip < base + m["size"] and m["load"] <= s["ts"] < m["unload"]:
                if best is None or m["load"] > best["load"] or (m["load"] == best["load"] and i < best_i):
                    best, best_i = m, i
        return best["name"] if best else "?"


def fnv(h, x):
    for i in range(8):
        h ^= (x >> (8 * i)) & 0xFF
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def build(path, misread=False):
    """The model of a file; info gets the events read and their first and last timestamps."""
    info, events = read_file(path, misread)
    m = Model(info)
    nevents = 0
    first = last = None
    for e in events:
        nevents += 1
        first = e.ts if first is None else min(first, e.ts)
        last = e.ts if last is None else max(last, e.ts)
        if e.group != 0xFF:
            m.event(e)
    m.finish()
    m.index()
    info["events"], info["first_ts"], info["last_ts"] = nevents, first or 0, last or 0
    return m


def summary(path, misread=False):
    m = build(path, misread)
    info = m.info
    first, last = info["first_ts"], info["last_ts"]
    out = []
    for k in ("pointer_size", "ncpus", "clock", "clock_hz", "cpu_mhz", "start_time", "end_time", "events_lost",
              "buffers_lost", "buffers_written", "buffers", "buffer_size"):
        out.append("info %s %d" % (k, info[k]))
    out.append("info log_file_mode 0x%08x" % info["log_file_mode"])
    for k in ("compressed", "compression", "buffers_compressed", "buffers_events_lost", "buffers_buffer_lost",
              "sequence_gaps", "cpus_seen", "events", "provider_version"):
        out.append("info %s %d" % (k, info[k]))
    out.append("info logger_name %s" % info["logger_name"])
    out.append("info log_file_name %s" % info["log_file_name"])
    if info["clock_hz"]:
        out.append("info duration_s %.3f" % ((last - first) / info["clock_hz"]))
    with_stack = sum(1 for s in m.samples if s["flags"] & 2)
    out += ["count processes %d" % len(m.procs), "count threads %d" % len(m.threads),
            "count images %d" % len(m.images), "count samples %d" % len(m.samples),
            "count with_stack %d" % with_stack]
    h = 0xCBF29CE484222325
    for d in m.sched:
        frames = d["kern"] + d["user"] if d["done"] else []
        for x in (d["ts"], d["kind"], d["cpu"], d["tid"], d["pid"], d["other_tid"], d["other_pid"],
                  d["flags"] & 6, d["nprio"] & 0xFF, d["oprio"] & 0xFF, d["state"], d["reason"], d["mode"],
                  d["cstate"], d["ideal"] & 0xFF, d["wtime"], d["areason"] & 0xFF, d["aincr"] & 0xFF,
                  d["rflags"], len(frames)):
            h = fnv(h, x)
        for fr in frames:
            h = fnv(h, fr)
    out += ["count switches %d" % sum(1 for d in m.sched if d["kind"] == 1),
            "count readies %d" % sum(1 for d in m.sched if d["kind"] == 2),
            "count sched_with_stack %d" % sum(1 for d in m.sched if d["flags"] & 2),
            "sched %016x" % h, "info sample_interval %d" % m.interval]
    per = collections.OrderedDict()
    for s in m.samples:
        p = m.proc_at(s["pid"], s["ts"]) if s["pid"] != NONE else None
        name = p["name"] if p and p["name"] else "?"
        key = (s["pid"], name)
        c = per.setdefault(key, [0, 0, []])
        c[0] += 1
        c[1] += 1 if s["flags"] & 2 else 0
        c[2].append(s)
    pid_s = lambda pid: str(pid if pid != NONE else -1)
    for (pid, name), (n, st, _) in sorted(per.items(), key=lambda kv: (kv[0][0], kv[0][1].encode())):
        out.append("process %s %d %d %s" % (pid_s(pid), n, st, name))
    mods = collections.Counter()
    for s in m.samples:
        mods[(s["pid"], m.module_of(s))] += 1
    for (pid, name), n in sorted(mods.items(), key=lambda kv: (kv[0][0], kv[0][1].encode())):
        out.append("module %s %d %s" % (pid_s(pid), n, name))
    for (pid, name), (_, _, ss) in sorted(per.items(), key=lambda kv: (kv[0][0], kv[0][1].encode())):
        h = 0xCBF29CE484222325
        for s in ss:
            frames = s["kern"] + s["user"] if s["done"] else []
            for x in (s["ts"], s["tid"], s["flags"] & 6, len(frames)):
                h = fnv(h, x)
            for fr in frames:
                h = fnv(h, fr)
        out.append("stacks %s %016x %s" % (pid_s(pid), h, name))
    return out


# --- running, ready, waiting ---------------------------------------------------

WAITING, TERMINATED, TRANSITION = 5, 4, 6     # KTHREAD_STATE values of OldThreadState


def off_cpu(path, name):
    """Each thread of the process instance named `name` (case ignored; of
    several, the one with the most samples): {tid: {"cpu", "wait", "ready":
    samples, "run_100ns", "wait_100ns", "ready_100ns": time in 100 ns units,
    rounded to the nearest}}, and None when the trace has no context
    switches (ready and wait unknown).

    A thread runs from its switch-in until its switch-out (or the trace's
    last event); before its first switch-in it is not known to run.

    A thread switched out Waiting (or Transition) waits until a ReadyThread
    names it, then is ready until it is switched in; without a ReadyThread,
    it waits until it is switched in. Switched out in any other state it is
    ready until switched in; Terminated, it is gone. A ReadyThread for a
    thread never seen makes it ready from then. What is still open at the
    end lasts to the trace's last event. Samples: the ticks of the grid
    origin + k * interval (100 ns units, the trace's timer interval or
    10000) inside each stretch [a, b)."""
    m = build(path)
    info = m.info
    want = name.lower()
    count = collections.Counter()
    for smp in m.samples:
        p = m.proc_at(smp["pid"], smp["ts"]) if smp["pid"] != NONE else None
        if p is not None:
            count[id(p)] += 1
    proc = None
    for p in m.procs:
        if p["name"].lower() == want and (proc is None or count[id(p)] > count[id(proc)]):
            proc = p
    if proc is None:
        raise ValueError("no process named " + name)
    threads = {}

    def thread(tid):
        return threads.setdefault(tid, {"cpu": 0, "wait": 0, "ready": 0, "run_t": 0, "wait_t": 0, "ready_t": 0})

    for smp in m.samples:
        if smp["pid"] != NONE and m.proc_at(smp["pid"], smp["ts"]) is proc:
            thread(smp["tid"])["cpu"] += 1
    if not any(d["kind"] == 1 for d in m.sched) or not info["clock_hz"]:
        return None
    hz, origin = info["clock_hz"], info["first_ts"]
    iv = m.interval or 10000

    def ticks(a, b):
        x, y = (a - origin) * 10 ** 7 // hz, (b - origin) * 10 ** 7 // hz
        return max(0, -(-y // iv) - -(-x // iv))

    def stretch(tid, what, a, b):
        if b > a:
            th = thread(tid)
            th[what] += ticks(a, b)
            th[what + "_t"] += b - a

    def ours(tid, pid, ts):
        return tid != 0 and pid != NONE and m.proc_at(pid, ts) is proc

    state = {}     # tid -> ("on", since) | ("gone",) | ("off", "wait" or "ready", since, readied at or None)

    def switched_in(tid, ts):
        st = state.get(tid)
        if st and st[0] == "off":
            _, what, since, readied = st
            if readied is None:
                stretch(tid, what, since, ts)
            else:
                stretch(tid, "wait", since, readied)
                stretch(tid, "ready", readied, ts)

    for d in m.sched:
        if d["kind"] == 2:
            if ours(d["tid"], d["pid"], d["ts"]):
                thread(d["tid"])
                st = state.get(d["tid"])
                if st is None:
                    state[d["tid"]] = ("off", "ready", d["ts"], None)
                elif st[0] == "off" and st[1] == "wait" and st[3] is None:
                    state[d["tid"]] = ("off", "wait", st[2], d["ts"])
            continue
        if ours(d["tid"], d["pid"], d["ts"]):
            thread(d["tid"])
            switched_in(d["tid"], d["ts"])
            state[d["tid"]] = ("on", d["ts"])
        if ours(d["other_tid"], d["other_pid"], d["ts"]):
            th = thread(d["other_tid"])
            st = state.get(d["other_tid"])
            if st and st[0] == "on":
                th["run_t"] += max(0, d["ts"] - st[1])
            if d["state"] == TERMINATED:
                state[d["other_tid"]] = ("gone",)
            else:
                what = "wait" if d["state"] in (WAITING, TRANSITION) else "ready"
                state[d["other_tid"]] = ("off", what, d["ts"], None)
    for tid, st in state.items():
        if st[0] == "on":
            thread(tid)["run_t"] += max(0, info["last_ts"] - st[1])
        switched_in(tid, info["last_ts"])

    def units(t):                   # ticks -> 100 ns, the nearest
        return (t * 10 ** 7 + hz // 2) // hz

    out = {}
    for tid, th in threads.items():
        out[tid] = {"cpu": th["cpu"], "wait": th["wait"], "ready": th["ready"], "run_100ns": units(th["run_t"]),
                    "wait_100ns": units(th["wait_t"]), "ready_100ns": units(th["ready_t"])}
    return out


# --- the CLR's JIT-compiled methods -------------------------------------------

# provider or classic task GUID (as text) -> {event id (manifest) or opcode (classic): (what, kind)}
# what: "load", "unload", "rundown"; kind: "method" or "module" (ClrTraceEventParser.cs,
# ClrRundownTraceEventParser.cs)
CLR_EVENTS = {
    "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4": {143: ("load", "method"), 144: ("unload", "method"),
                                             152: ("load", "module"), 153: ("unload", "module")},
    "a669021c-c450-4609-a035-5af59af4df18": {143: ("rundown", "method"), 144: ("rundown", "method"),
                                             153: ("rundown", "module"), 154: ("rundown", "module")},
    "3044f61a-99b0-4c21-b203-d39423c73b00": {37: ("load", "method"), 38: ("unload", "method")},
    "0bcd91db-f943-454a-a662-6edbcfbb76d2": {39: ("rundown", "method"), 40: ("rundown", "method")},
    "d00792da-07b7-40f5-97eb-5d974e054740": {33: ("load", "module"), 34: ("unload", "module")},
    "5a54f4df-d302-4fee-a211-6c2c0c1dcb1a": {35: ("rundown", "module"), 36: ("rundown", "module")},
}


def guid_text(b):
    d1, d2, d3 = struct.unpack_from("<IHH", b, 0)
    return "%08x-%04x-%04x-%s-%s" % (d1, d2, d3, b[8:10].hex(), b[10:16].hex())


def u16_fields(b, off, n):
    out = []
    for _ in range(n):
        s = u16z(b, off)
        out.append(s)
        off += len(s.encode("utf-16-le")) + 2
    return out


def clr_event(e):
    """-> (what, kind) for a CLR method or module event, else None."""
    if e.guid is None:
        return None
    table = CLR_EVENTS.get(guid_text(e.guid))
    if table is None:
        return None
    return table.get(e.event_id if e.kind in (0x12, 0x13) else e.type)


def jit_methods(path):
    """The model of a file and its JIT methods: dicts with pid, start, size,
    load, unload (ticks; 0 / NEVER: before / after the trace), name
    ("Namespace.Method") and module (the assembly's file name, or None)."""
    info, events = read_file(path)
    m = Model(info)
    methods, live, modules = [], {}, {}
    first = None
    for e in events:
        first = e.ts if first is None else min(first, e.ts)
        if e.group != 0xFF:
            m.event(e)
            continue
        ce = clr_event(e)
        if ce is None:
            continue
        what, kind = ce
        pid = 0 if e.pid == NONE else e.pid
        if kind == "module":
            mod_id = struct.unpack_from("<Q", e.data, 0)[0]
            il = u16z(e.data, 24)
            if il and (pid, mod_id) not in modules:
                modules[(pid, mod_id)] = il
            continue
        mid, mod_id, start, size = struct.unpack_from("<QQQI", e.data, 0)
        ns, name = u16_fields(e.data, 36, 2)
        rec = live.get((pid, mid))
        if rec is not None and what == "load" and rec["start"] != start:
            rec = None
        if rec is None:
            rec = {"pid": pid, "start": start, "size": size, "load": e.ts if what == "load" else 0,
                   "unload": NEVER, "mod_id": mod_id, "name": ns + "." + name if ns else name}
            methods.append(rec)
            live[(pid, mid)] = rec
        if what == "unload":
            rec["unload"] = e.ts
            del live[(pid, mid)]
    m.finish()
    m.index()
    for r in methods:
        il = modules.get((r["pid"], r["mod_id"])) if r["mod_id"] else None
        r["module"] = il.replace("\\", "/").split("/")[-1] if il else None
    return m, methods


def jit_samples(path, name):
    """{(module, method name, start): CPU samples whose leaf is in it} for the
    process NAME (the instance with the most samples): a leaf no image
    holds, in the method whose range held it at the sample's time (the
    one loaded last)."""
    m, methods = jit_methods(path)
    counts = collections.Counter(s["pid"] for s in m.samples
                                 if m.proc_at(s["pid"], s["ts"]) and
                                 m.proc_at(s["pid"], s["ts"])["name"].lower() == name.lower())
    pid = max(counts, key=lambda p: (counts[p], -p))
    ours = sorted((r for r in methods if r["pid"] == pid), key=lambda r: r["start"])
    starts = [r["start"] for r in ours]
    out = collections.Counter()
    for s in m.samples:
        if s["pid"] != pid or m.module_of(s) != "?":
            continue
        ip, best = s["ip"], None
        for r in ours[:bisect.bisect_right(starts, ip)]:
            if r["start"] <= ip < r["start"] + r["size"] and r["load"] <= s["ts"] < r["unload"]:
                if best is None or r["load"] > best["load"]:
                    best = r
        if best is not None:
            out[(best["module"], best["name"], best["start"])] += 1
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    misread = "--misread-event-headers" in args
    if misread:
        args.remove("--misread-event-headers")
    if "--jit" in args:
        i = args.index("--jit")
        got = jit_samples(args[0], args[i + 1])
        for (mod, name, start), n in sorted(got.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][2])):
            print("%6d  %s  %s" % (n, mod or "-", name))
    elif "--threads" in args:
        i = args.index("--threads")
        name = args[i + 1]
        del args[i:i + 2]
        threads = off_cpu(args[0], name)
        if threads is None:
            print("ready and wait unknown: no context switches")
        for tid in sorted(threads or ()):
            th = threads[tid]
            print("thread %d cpu %d wait %d ready %d running %.7f s wait %.7f s ready %.7f s" % (
                tid, th["cpu"], th["wait"], th["ready"], th["run_100ns"] / 1e7, th["wait_100ns"] / 1e7,
                th["ready_100ns"] / 1e7))
    else:
        for line in summary(args[0], misread):
            print(line)
