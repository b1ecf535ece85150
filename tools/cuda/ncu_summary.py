#!/usr/bin/env python3
"""tools/cuda/ncu_summary.py CSV [N]: the speed-of-light, occupancy and warp-stall columns of an
ncu --page raw CSV (profile_flash.sh's fill modes), one block per launch: what bounds each kernel.
N (default 6) caps the stall reasons shown, largest first."""
import csv
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own log lines are not CSV
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print("no launches in", path)
        return
    head, body = rows[0], rows[2:]  # row 1 holds the units
    units = rows[1]
    keep = ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
            "launch__grid_size", "launch__block_size", "launch__occupancy_limit_registers",
            "smsp__issue_active.avg.pct_of_peak_sustained_active")
    for r in body:
        name = r[head.index("Kernel Name")] if "Kernel Name" in head else r[4]
        print("==", name[:110])
        for k in keep:
            if k in head:
                i = head.index(k)
                print(f"   {k}: {r[i]} {units[i]}")
        stalls = []
        for i, k in enumerate(head):
            if "issue_stalled" in k and "not_issued" not in k:
                try:
                    stalls.append((float(r[i].replace(",", "")), k))
                except ValueError:
                    pass
        for v, k in sorted(stalls, reverse=True)[:top]:
            print(f"   stall {k.split('stalled_')[-1]}: {v}")


if __name__ == "__main__":
    main()
