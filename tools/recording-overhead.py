#!/usr/bin/env python3
"""What the flight recorder and its latency counts cost a call (issue 71: within 3% at 8 B).
The same all-reduce with recording on (the default, TUTTI_TRACE_CALLS=64) and off
(TUTTI_TRACE_CALLS=0), and with tutti-inspect's responder off as well (TUTTI_INSPECT=0), in
interleaved rounds of one run; prints the median time per call of each (the mean of out of
place and in place, rank 0's CSV) and the ratio to recording off.

  tools/recording-overhead.py [--build build] [--np 2] [--rounds 11] [--sizes 8,1048576]
"""
import argparse
import csv as csv_module
import os
import statistics
import subprocess
import sys
import tempfile

MODES = [("recording on (default)", {}),
         ("recording off", {"TUTTI_TRACE_CALLS": "0"}),
         ("recording and inspect off", {"TUTTI_TRACE_CALLS": "0", "TUTTI_INSPECT": "0"})]


def time_us(build, np, size, env, csv):
    """Mean of the out-of-place and in-place time per call (us, the CSV's 3 decimals)."""
    iters, warmup = (300000, 2000) if size <= 4096 else (2000, 100)
    cmd = [os.path.join(build, "tools", "tuttirun", "tuttirun"), "-np", str(np),
           os.path.join(build, "perf_tests", "all_reduce_perf"), "-b", str(size), "-e",
           str(size), "-n", str(iters), "-w", str(warmup), "-a", "3", "--csv", csv]
    e = dict(os.environ, TUTTI_TUNE="0", **env)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=e)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    with open(csv) as f:
        rows = [r for r in csv_module.DictReader(f) if r["size"] == str(size)]
    if len(rows) != 2:
        sys.exit(f"no result rows in {csv}")
    return sum(float(r["time_us"]) for r in rows) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--sizes", default="8,1048576")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    times = {(s, m): [] for s in sizes for m, _ in MODES}
    csv = os.path.join(tempfile.mkdtemp(prefix="tutti-overhead-"), "run.csv")
    for r in range(a.rounds):
        order = MODES if r % 2 == 0 else MODES[::-1]  # alternate: no mode always runs first
        for s in sizes:
            for name, env in order:
                times[(s, name)].append(time_us(a.build, a.np, s, env, csv))
    print(f"| size | {' | '.join(m for m, _ in MODES)} | on / off |")
    print("|---|" + "---|" * (len(MODES) + 1))
    for s in sizes:
        med = [statistics.median(times[(s, m)]) for m, _ in MODES]
        print(f"| {s} B | " + " | ".join(f"{t:.3f} us" for t in med) + f" | {med[0] / med[1]:.3f} |")


if __name__ == "__main__":
    main()
