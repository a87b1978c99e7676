#!/usr/bin/env python3
"""Extract the one .etl of a fixture zip (tests/fixtures/etl/NAME.etl.zip)
to OUT (build/fixtures/etl/NAME.etl).

  scripts/fixtures-etl.py ZIP OUT
"""
import os
import sys
import zipfile


def main(zpath, out):
    with zipfile.ZipFile(zpath) as z:
        names = [n for n in z.namelist() if n.lower().endswith(".etl")]
        if len(names) != 1:
            sys.exit(f"fixtures-etl: {zpath} holds {len(names)} .etl files, expected 1")
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        tmp = out + ".tmp"
        with z.open(names[0]) as src, open(tmp, "wb") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                dst.write(chunk)
        os.replace(tmp, out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: fixtures-etl.py ZIP OUT")
    main(sys.argv[1], sys.argv[2])
