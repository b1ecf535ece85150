#!/usr/bin/env python3
"""tools/cuda/mtp_table.py ERR_FILE: bench/mtp.md's tables from one ds4-bench run's stderr.

The run is ds4-bench --spec-replay K[,K..] --mtp FILE --mtp-draft N (tools/cuda/verify_all.sh's
`spec` step). Per frontier it reads the plain decode rate, each K's replay (the probe's own K
tokens verified per step: K - 1 drafts, drafting free) and mtp replay (the same with the MTP block
drafting its K - 1 tokens each step, their cost paid), and the mtp decode line. It prints:
- the measured parts: one decode step, the verification of K rows, the drafting of K - 1 tokens
  (mtp replay's step less replay's), all in ms;
- the end-to-end speedups measured at acceptance 100% (replay, mtp replay);
- the speedup those costs give at per-token acceptance a = 0.6 / 0.8 / 0.9: a step keeps the
  taken token and each draft while the ones before it were right, E = 1 + a + ... + a^(K-1)
  tokens, in verify(K) + draft(K - 1) ms, against E plain decode steps.
"""
import re
import sys

LINE = re.compile(r"ds4-bench: ctx (\d+): (mtp replay|replay|mtp decode) of (\d+) tokens with (\d+) "
                  r"drafts per step: ([\d.]+) t/s, (\d+) steps, .*?([\d.]+) ms per step")
GEN = re.compile(r"ds4-bench: ctx (\d+): prefill .* gen (\d+) tokens ([\d.]+) t/s")


def main():
    rows = {}
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        m = LINE.search(line)
        if m:
            ctx, kind, k = int(m.group(1)), m.group(2), int(m.group(4))
            rows.setdefault(ctx, {}).setdefault(kind, {})[k] = (float(m.group(5)), float(m.group(7)))
            continue
        m = GEN.search(line)
        if m:
            rows.setdefault(int(m.group(1)), {})["plain"] = float(m.group(3))
    if not rows:
        sys.exit("no ds4-bench replay lines in " + sys.argv[1])
    print("| ctx | K rows | decode step ms | verify K rows ms | draft K-1 ms | replay x | mtp replay x "
          "| x at a=0.6 | x at a=0.8 | x at a=0.9 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ctx in sorted(rows):
        r = rows[ctx]
        if "plain" not in r:
            continue
        step = 1000.0 / r["plain"]
        for k in sorted(r.get("replay", {})):
            rate, verify = r["replay"][k]
            mtp = r.get("mtp replay", {}).get(k)
            draft = mtp[1] - verify if mtp else float("nan")
            cells = [str(ctx), str(k), f"{step:.2f}", f"{verify:.2f}",
                     f"{draft:.2f}" if mtp else "-", f"{rate / r['plain']:.2f}",
                     f"{mtp[0] / r['plain']:.2f}" if mtp else "-"]
            for a in (0.6, 0.8, 0.9):
                e = sum(a ** i for i in range(k))
                cells.append(f"{e * step / (verify + draft):.2f}" if mtp else "-")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
