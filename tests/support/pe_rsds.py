#!/usr/bin/env python3
"""Read or change what a PE image says about its PDB: the CodeView RSDS
record of its debug directory (GUID, age, PDB path) and the COFF
characteristics bits that tell DbgHelp the debug information was stripped.
PE32+ and PE32 (i386) images.

usage: pe_rsds.py IMAGE                       print "<GUID> <age> <path> <characteristics hex>"
       pe_rsds.py IMAGE --path P [--age N] [--set-chars HEX] [--clear-chars HEX] -o OUT

GUID is printed as {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX} (the Data1-3
fields little-endian, as Windows prints it); `--key` prints the symbol
server folder name instead (GUID without punctuation, then the age in hex).
The new path must fit in the record's place (its old length or shorter):
the record keeps its size, the rest is zero-filled. Changing the path does
not change the GUID, so the image still matches its PDB; changing the age
makes it want another one. Python 3 standard library only.
"""
import argparse
import struct
import sys

IMAGE_DEBUG_TYPE_CODEVIEW = 2


def _sections(d, lfanew):
    nsec, = struct.unpack_from("<H", d, lfanew + 6)
    optsz, = struct.unpack_from("<H", d, lfanew + 20)
    out = []
    for i in range(nsec):
        o = lfanew + 24 + optsz + 40 * i
        vsize, va, rsize, raw = struct.unpack_from("<IIII", d, o + 8)
        out.append((va, max(vsize, rsize), raw))
    return out


def find_rsds(d):
    """(offset of the RSDS record in the file, its size, offset of the COFF
    characteristics field)."""
    if d[:2] != b"MZ":
        raise SystemExit("not an MZ image")
    lfanew, = struct.unpack_from("<I", d, 0x3C)
    if d[lfanew:lfanew + 4] != b"PE\0\0":
        raise SystemExit("no PE signature")
    opt = lfanew + 24
    magic, = struct.unpack_from("<H", d, opt)
    if magic not in (0x10B, 0x20B):
        raise SystemExit("not a PE32 or PE32+ image")
    dirs = opt + (112 if magic == 0x20B else 96)   # the data directories
    dbg_rva, dbg_size = struct.unpack_from("<II", d, dirs + 6 * 8)
    off = None
    for va, size, raw in _sections(d, lfanew):
        if va <= dbg_rva < va + size:
            off = dbg_rva - va + raw
    if off is None:
        raise SystemExit("no debug directory")
    for i in range(dbg_size // 28):
        _, _, _, _, typ, size, _, ptr = struct.unpack_from("<IIHHIIII", d, off + 28 * i)
        if typ == IMAGE_DEBUG_TYPE_CODEVIEW and d[ptr:ptr + 4] == b"RSDS":
            return ptr, size, lfanew + 22
    raise SystemExit("no RSDS record in the debug directory")


def guid_text(b):
    d1, d2, d3 = struct.unpack_from("<IHH", b, 0)
    rest = b[8:16].hex().upper()
    return f"{{{d1:08X}-{d2:04X}-{d3:04X}-{rest[:4]}-{rest[4:]}}}"


def read(path):
    with open(path, "rb") as f:
        d = f.read()
    ptr, size, chars_off = find_rsds(d)
    guid = d[ptr + 4:ptr + 20]
    age, = struct.unpack_from("<I", d, ptr + 20)
    name = d[ptr + 24:ptr + size].split(b"\0")[0].decode("utf-8", "replace")
    chars, = struct.unpack_from("<H", d, chars_off)
    return guid_text(guid), age, name, chars


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image")
    ap.add_argument("--path")
    ap.add_argument("--age", type=int)
    ap.add_argument("--set-chars", type=lambda x: int(x, 16), default=0)
    ap.add_argument("--clear-chars", type=lambda x: int(x, 16), default=0)
    ap.add_argument("--key", action="store_true")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    if a.output is None:
        guid, age, name, chars = read(a.image)
        if a.key:
            print(guid.strip("{}").replace("-", "") + f"{age:X}")
        else:
            print(f"{guid} {age} {name} {chars:04x}")
        return 0
    with open(a.image, "rb") as f:
        d = bytearray(f.read())
    ptr, size, chars_off = find_rsds(d)
    if a.path is not None:
        b = a.path.encode("utf-8")
        room = size - 24
        if len(b) + 1 > room:
            raise SystemExit(f"path of {len(b)} bytes does not fit in {room - 1}")
        d[ptr + 24:ptr + size] = b + b"\0" * (room - len(b))
    if a.age is not None:
        struct.pack_into("<I", d, ptr + 20, a.age)
    chars, = struct.unpack_from("<H", d, chars_off)
    struct.pack_into("<H", d, chars_off, (chars | a.set_chars) & ~a.clear_chars & 0xFFFF)
    with open(a.output, "wb") as f:
        f.write(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
