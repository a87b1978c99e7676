#!/usr/bin/env python3
"""Generate the real-binary tables of the hook unit tests, so that the tests
do not need the binaries at run time:

  tests/unit/real_prologues.h  the first bytes of chosen functions of the
                               mingw CRT (an exe built here with
                               x86_64-w64-mingw32-gcc), libstdc++-6.dll and
                               Wine's DLLs, for test_hook_exec.c
  tests/unit/real_prologues32.h  (--bits 32) the same of the i686 mingw
                               runtime DLLs, bounded by their .eh_frame
                               (objdump --dwarf=frames), for the 32-bit
                               build of test_hook_exec.c
  tests/unit/frame_cases.h     whole functions of fixtures/frame_src.c built
                               at -O0, -O1, -O2, with the stack facts known
                               from their source, for test_hook_frame.c

Run from the repository root: python3 tests/unit/gen_real_prologues.py
[--bits 32]. Needs x86_64-w64-mingw32-gcc (objdump for --bits 32); the
DLLs that are missing are left out.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WINE = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows"
MODULES = [
    WINE + "/ntdll.dll", WINE + "/kernelbase.dll", WINE + "/kernel32.dll", WINE + "/msvcrt.dll",
    WINE + "/ucrtbase.dll", "/usr/lib/gcc/x86_64-w64-mingw32/12-win32/libstdc++-6.dll",
]
MODULES32 = [
    "/usr/lib/gcc/i686-w64-mingw32/12-win32/libstdc++-6.dll",
    "/usr/lib/gcc/i686-w64-mingw32/12-win32/libgcc_s_dw2-1.dll",
    "/usr/i686-w64-mingw32/lib/libwinpthread-1.dll",
    "/usr/i686-w64-mingw32/lib/zlib1.dll",
]
PER_MODULE = 36
HEAD = 64       # bytes of a function kept (more is not needed for the window)
GAP = 16        # bytes of padding kept on each side


class PE:
    def __init__(self, path):
        d = open(path, "rb").read()
        self.data = d
        lf = struct.unpack_from("<I", d, 0x3C)[0]
        assert d[lf:lf + 4] == b"PE\0\0"
        fh = lf + 4
        _, nsec, _, self.symoff, self.nsyms, optsz, _ = struct.unpack_from("<HHIIIHH", d, fh)
        opt = fh + 20
        magic = struct.unpack_from("<H", d, opt)[0]
        assert magic in (0x20B, 0x10B)
        self.bits = 64 if magic == 0x20B else 32
        if self.bits == 64:
            self.base = struct.unpack_from("<Q", d, opt + 24)[0]
        else:
            self.base = struct.unpack_from("<I", d, opt + 28)[0]
        self.size = struct.unpack_from("<I", d, opt + 56)[0]
        dirs = opt + (112 if self.bits == 64 else 96)
        self.dirs = [struct.unpack_from("<II", d, dirs + 8 * i) for i in range(16)]
        self.path = path
        self.secs = []
        for i in range(nsec):
            s = opt + optsz + 40 * i
            name = d[s:s + 8].rstrip(b"\0").decode("latin1")
            vsize, rva, rawsz, rawoff = struct.unpack_from("<IIII", d, s + 8)
            chars = struct.unpack_from("<I", d, s + 36)[0]
            self.secs.append((name, rva, vsize or rawsz, rawoff, rawsz, chars))
        img = bytearray(self.size)
        img[:0x400] = d[:0x400]
        for _, rva, vs, ro, rs, _ in self.secs:
            n = min(vs, rs)
            img[rva:rva + n] = d[ro:ro + n]
        self.img = bytes(img)

    def exec_section(self, rva):
        for s in self.secs:
            if s[1] <= rva < s[1] + s[2]:
                return s if s[5] & 0x20000000 else None
        return None

    def pdata(self):
        rva, size = self.dirs[3]
        out = []
        for off in range(rva, rva + size - 11, 12):
            b, e, u = struct.unpack_from("<III", self.img, off)
            if b == 0 or e <= b or not self.exec_section(b):
                continue
            flags = self.img[u & ~1] >> 3
            if flags & 4:   # UNW_FLAG_CHAININFO: a fragment
                continue
            out.append((b, e - b))
        return sorted(set(out))

    def all_symbols(self):
        """COFF symbols of any type in sections: (rva, name), sorted."""
        out = []
        st = self.symoff
        strtab = st + 18 * self.nsyms
        i = 0
        while self.symoff and i < self.nsyms:
            s = st + 18 * i
            value, secno, typ, cls, naux = struct.unpack_from("<IhHBB", self.data, s + 8)
            if secno > 0 and cls in (2, 3):
                if struct.unpack_from("<I", self.data, s)[0] == 0:
                    o = strtab + struct.unpack_from("<I", self.data, s + 4)[0]
                    nm = self.data[o:self.data.index(b"\0", o)].decode("latin1")
                else:
                    nm = self.data[s:s + 8].rstrip(b"\0").decode("latin1")
                out.append((self.secs[secno - 1][1] + value, nm))
            i += 1 + naux
        return sorted(out)

    def names(self):
        names = {}
        rva, size = self.dirs[0]
        if size:
            nfun, nnames, afun, anames, aords = struct.unpack_from("<IIIII", self.img, rva + 20)
            for i in range(nnames):
                nr = struct.unpack_from("<I", self.img, anames + 4 * i)[0]
                o = struct.unpack_from("<H", self.img, aords + 2 * i)[0]
                f = struct.unpack_from("<I", self.img, afun + 4 * o)[0]
                end = self.img.index(b"\0", nr)
                names.setdefault(f, self.img[nr:end].decode("latin1"))
        if self.symoff and self.nsyms:
            st = self.symoff
            strtab = st + 18 * self.nsyms
            i = 0
            while i < self.nsyms:
                s = st + 18 * i
                value, secno, typ, cls, naux = struct.unpack_from("<IhHBB", self.data, s + 8)
                if secno > 0 and (typ & 0xF0) == 0x20 and cls in (2, 3):
                    if struct.unpack_from("<I", self.data, s)[0] == 0:
                        o = strtab + struct.unpack_from("<I", self.data, s + 4)[0]
                        nm = self.data[o:self.data.index(b"\0", o)].decode("latin1")
                    else:
                        nm = self.data[s:s + 8].rstrip(b"\0").decode("latin1")
                    names.setdefault(self.secs[secno - 1][1] + value, nm)
                i += 1 + naux
        return names

    def fdes(self):
        """(rva, size) of each .eh_frame FDE (an i386 image's functions), as
        objdump reads them."""
        out = []
        text = subprocess.run(["objdump", "--dwarf=frames", self.path], check=True, capture_output=True,
                              text=True).stdout
        for line in text.splitlines():
            if " FDE " not in line or "pc=" not in line:
                continue
            lo, hi = (int(x, 16) for x in line.split("pc=")[1].split(".."))
            if hi > lo >= self.base and self.exec_section(lo - self.base):
                out.append((lo - self.base, hi - lo))
        return sorted(set(out))

    def functions(self):
        """(rva, size, gap_before, gap_after) per function (.pdata; .eh_frame
        FDEs in an i386 image)."""
        fs = self.pdata() if self.bits == 64 else self.fdes()
        out = []
        for i, (rva, size) in enumerate(fs):
            sec = self.exec_section(rva)
            lo = fs[i - 1][0] + fs[i - 1][1] if i > 0 and fs[i - 1][0] >= sec[1] else sec[1]
            hi = fs[i + 1][0] if i + 1 < len(fs) and fs[i + 1][0] < sec[1] + sec[2] else sec[1] + sec[2]
            out.append((rva, size, max(0, rva - lo), max(0, hi - rva - size)))
        return out


def interesting(code):
    """Rough byte-level hints that a prologue has something to relocate."""
    h = code[:16]
    score = 0
    for i, b in enumerate(h):
        if b in (0xE8, 0xE9, 0xEB) or 0x70 <= b <= 0x7F or b in (0xE0, 0xE1, 0xE2, 0xE3):
            score += 1
        if i + 1 < len(h) and b == 0x0F and 0x80 <= h[i + 1] <= 0x8F:
            score += 1
        if i + 1 < len(h) and (h[i + 1] & 0xC7) == 0x05 and b in (0x8B, 0x89, 0x8D, 0x3B, 0x39, 0x80, 0x81, 0x83, 0xFF, 0xC7, 0xC6, 0xF6):
            score += 2   # rip-relative operand
        if b == 0xC3 and i < 6:
            score += 2
    if h[:4] == b"\xf3\x0f\x1e\xfa":
        score += 2
    return score


def c_bytes(b):
    return ",".join("0x%02x" % x for x in b)


def c_name(s):
    return "".join(c if c.isalnum() or c in "_.@$?" else "_" for c in s)[:80]


def real_table(extra, modules=MODULES, out="real_prologues.h"):
    rows, arrays = [], []
    n = 0
    for path in extra + modules:
        if not os.path.exists(path):
            print("missing, left out: " + path, file=sys.stderr)
            continue
        pe = PE(path)
        names = pe.names()
        mod = os.path.basename(path)
        fs = pe.functions()
        ranked = sorted(fs, key=lambda f: (-interesting(pe.img[f[0]:f[0] + 16]), f[0]))
        chosen = ranked[:PER_MODULE // 2]
        step = max(1, len(fs) // (PER_MODULE // 2))
        chosen += [f for f in fs[::step] if f not in chosen][:PER_MODULE // 2]
        for rva, size, gb, ga in sorted(chosen):
            gb = min(gb, GAP)
            if size > HEAD:
                size, ga = HEAD, 0
            else:
                ga = min(ga, GAP)
            b = pe.img[rva - gb:rva + size + ga]
            arrays.append("static const uint8_t rp_%d[] = {%s};\n" % (n, c_bytes(b)))
            nm = "%s/%s" % (mod, c_name(names.get(rva, "rva_%x" % rva)))
            rows.append('    { "%s+%x", rp_%d, %d, %d, %d },\n' % (nm, rva, n, gb, size, ga))
            n += 1
    with open(os.path.join(HERE, out), "w") as f:
        f.write("/* Generated by tests/unit/gen_real_prologues.py%s - do not edit. */\n"
                % (" --bits 32" if modules is MODULES32 else ""))
        f.write("#include <stdint.h>\n\n")
        f.writelines(arrays)
        f.write("\nstatic const struct real_case real_cases[] = {\n")
        f.writelines(rows)
        f.write("};\n")


# Stack facts of fixtures/frame_src.c, from the source. slots: exact value,
# or a tuple of acceptable values (-1: the analysis may give up).
FRAME_EXPECT = {
    "args20": dict(slots=20, flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "args6": dict(slots=6, flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "args4": dict(slots=4, flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "args5_late": dict(slots=5, flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "vsum": dict(slots=None, flags=("VARARGS", "ARGS_ADDRESS"), noflags=("STACK_PROBE",)),
    "my_printf": dict(slots=None, flags=("VARARGS", "ARGS_ADDRESS"), noflags=("STACK_PROBE",)),
    "take_addr5": dict(slots=None, flags=("ARGS_ADDRESS",), noflags=("VARARGS", "STACK_PROBE")),
    "big_frame": dict(slots=6, flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "vla": dict(slots=(5, -1), flags=(), noflags=("VARARGS", "ARGS_ADDRESS", "STACK_PROBE")),
    "___chkstk_ms": dict(slots=None, flags=("STACK_PROBE",), noflags=("VARARGS",)),
}


def frame_table(tmp):
    src = os.path.join(HERE, "fixtures", "frame_src.c")
    rows, arrays = [], []
    exes = []
    n = 0
    for opt in ("-O0", "-O1", "-O2"):
        exe = os.path.join(tmp, "frame%s.exe" % opt)
        subprocess.run(["x86_64-w64-mingw32-gcc", opt, "-o", exe, src], check=True)
        exes.append(exe)
        pe = PE(exe)
        names = pe.names()
        funcs = pe.functions()
        # hand-written assembly without .pdata (___chkstk_ms): from its
        # symbol to the next symbol, no padding known
        syms = pe.all_symbols()
        for k, (rva, nm) in enumerate(syms):
            if nm == "___chkstk_ms" and not any(f[0] == rva for f in funcs):
                nxt = min([r for r, _ in syms[k + 1:] if r > rva] + [rva + 64])
                funcs.append((rva, nxt - rva, 0, 0))
                names[rva] = nm
        for rva, size, gb, ga in funcs:
            nm = names.get(rva)
            if nm not in FRAME_EXPECT:
                continue
            e = FRAME_EXPECT[nm]
            gb, ga = min(gb, GAP), min(ga, GAP)
            b = pe.img[rva - gb:rva + size + ga]
            arrays.append("static const uint8_t fc_%d[] = {%s};\n" % (n, c_bytes(b)))
            slots = e["slots"]
            s1, s2 = (slots, slots) if isinstance(slots, int) else (slots or (-2, -2))
            fl = "|".join("HS_FN_" + x for x in e["flags"]) or "0"
            nf = "|".join("HS_FN_" + x for x in e["noflags"]) or "0"
            rows.append('    { "%s%s", fc_%d, %d, %d, %d, 0x%x, %d, %d, %s, %s },\n'
                        % (nm, opt, n, gb, size, ga, pe.base + rva, s1, s2, fl, nf))
            n += 1
    with open(os.path.join(HERE, "frame_cases.h"), "w") as f:
        f.write("/* Generated by tests/unit/gen_real_prologues.py from fixtures/frame_src.c"
                " - do not edit. */\n#include <stdint.h>\n\n")
        f.writelines(arrays)
        f.write("\nstatic const struct frame_case frame_cases[] = {\n")
        f.writelines(rows)
        f.write("};\n")
    return exes


def main():
    if sys.argv[1:] == ["--bits", "32"]:
        real_table([], MODULES32, "real_prologues32.h")
        return
    with tempfile.TemporaryDirectory() as tmp:
        exes = frame_table(tmp)
        real_table([exes[2]])   # the -O2 exe: its CRT startup code


if __name__ == "__main__":
    main()
