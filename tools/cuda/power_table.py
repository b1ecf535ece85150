#!/usr/bin/env python3
"""tools/cuda/power_table.py OUT P...: bench/power.md's table from power_bench.sh's files.

For each power P: the sweep starts at the first stamped stderr line of ds4-bench (the line it
prints before the sweep); the prefill window is [start, start + prefill_s] and the decode window
follows for gen_s (the CSV's times). The nvidia-smi samples inside each window give the mean GPU
utilisation and power draw. Targets: P% of the full-power (first P) run's throughput and
utilisation, within 10 points."""
import csv
import datetime
import sys


def samples(path):
    out = []
    for row in csv.reader(open(path)):
        if len(row) < 3:
            continue
        try:
            t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(row[1]), float(row[2])))
        except ValueError:
            continue
    return out


def bench_row(path):
    lines = [l for l in open(path) if not l.startswith("#")]
    return next(csv.DictReader(lines))


def main():
    out, powers = sys.argv[1], [int(p) for p in sys.argv[2:]]
    rows = []
    for p in powers:
        start = float(open(f"{out}/bench-{p}.err").readline().split()[0])
        b = bench_row(f"{out}/bench-{p}.csv")
        pre_s, gen_s = float(b["prefill_s"]), float(b["gen_s"])
        s = samples(f"{out}/nvml-{p}.csv")
        for phase, lo, hi, tps in (("prefill", start, start + pre_s, float(b["prefill_tps"])),
                                   ("decode", start + pre_s, start + pre_s + gen_s,
                                    float(b["gen_tps"]))):
            win = [x for x in s if lo <= x[0] <= hi]
            util = sum(x[1] for x in win) / len(win) if win else float("nan")
            watts = sum(x[2] for x in win) / len(win) if win else float("nan")
            rows.append((p, phase, tps, util, watts, len(win), hi - lo))
    full = {r[1]: r for r in rows if r[0] == powers[0]}
    print("| power | phase | tokens/s | x full | util % | util / full | power W | samples | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p, phase, tps, util, watts, n, secs in rows:
        f = full[phase]
        print(f"| {p} | {phase} | {tps:.1f} | {tps / f[2]:.2f} | {util:.1f} | "
              f"{util / f[3]:.2f} | {watts:.0f} | {n} | {secs:.1f} |")


if __name__ == "__main__":
    main()
