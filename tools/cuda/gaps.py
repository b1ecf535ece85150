#!/usr/bin/env python3
"""tools/cuda/gaps.py TRACE.csv [TOP]: where a decode timeline's GPU time goes between kernels.

TRACE.csv is `nsys stats --report cuda_gpu_trace --format csv` of a run captured by
profile_flash.sh gaps (decode steps on CUDA graphs). Kernels may overlap (side streams), so the
busy time is the union of their intervals; an idle gap is a stretch of the span where no kernel
runs, charged to the kernel that ran last before it and the one that starts it. Prints the span,
the busy and idle time, the number of kernels, and the TOP (default 20) (before, after) pairs by
their summed idle time. Names are cut at the first '(' or '<' of their template arguments.
"""
import csv
import re
import sys
from collections import defaultdict


def short(name):
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    return re.split(r"[(<]", name, maxsplit=1)[0][-60:]


def column(header, *names):
    for n in names:
        for i, h in enumerate(header):
            if h.strip().lower().startswith(n):
                return i
    raise SystemExit(f"gaps: no column {names} in {header}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.reader(f))
    # nsys prints notes before the table: the header is the row with the start column.
    at = next(i for i, r in enumerate(rows) if r and r[0].strip().lower().startswith("start"))
    header, body = rows[at], rows[at + 1:]
    cs = column(header, "start")
    cd = column(header, "duration")
    cn = column(header, "name")
    kernels = []
    for r in body:
        if len(r) <= max(cs, cd, cn) or not r[cs].strip():
            continue
        name = r[cn]
        if "memcpy" in name.lower() or "memset" in name.lower():
            continue
        start = float(r[cs].replace(",", ""))
        kernels.append((start, start + float(r[cd].replace(",", "")), short(name)))
    if not kernels:
        raise SystemExit("gaps: no kernels in the trace")
    kernels.sort()
    busy = idle = 0.0
    end, last = kernels[0][0], kernels[0][2]
    pairs = defaultdict(lambda: [0, 0.0])
    for s, e, n in kernels:
        if s > end:
            idle += s - end
            p = pairs[(last, n)]
            p[0] += 1
            p[1] += s - end
            busy += e - s
        elif e > end:
            busy += e - end
        if e >= end:
            end, last = e, n
    span = end - kernels[0][0]
    print(f"kernels {len(kernels)}, span {span / 1e3:.1f} us, busy {busy / 1e3:.1f} us, "
          f"idle {idle / 1e3:.1f} us ({100 * idle / span:.1f}%)")
    print("idle us  gaps  mean us  before -> after")
    for (a, b), (n, t) in sorted(pairs.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{t / 1e3:8.1f} {n:5d} {t / n / 1e3:8.2f}  {a} -> {b}")


if __name__ == "__main__":
    main()
